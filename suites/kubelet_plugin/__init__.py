"""KP: the DRA kubelet-plugin contract every DRA driver owes, whatever KEP features it adds."""
