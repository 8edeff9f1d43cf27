"""The kubeconfig provider: an existing cluster, reached through its kubeconfig."""
