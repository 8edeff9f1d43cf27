"""Which emulated device a published device stands for: the one whose UUID or PCI address the
slice device carries among its attribute values, as drivers publish them (uuid,
resource.kubernetes.io/pciBusID, a pciAddress of their own). KP-02 removes and restores it, KP-10
faults it."""

from __future__ import annotations

from typing import Any

from clusters.providers import Lab
from fake_hardware.lab import HardwareLab

# The emulated devices a DRA driver publishes one by one.
KINDS = ("gpu", "nic", "vf")


def function(lab: Lab, node: str, device: dict[str, Any], kinds: tuple[str, ...] = KINDS) -> str | None:
    """The name (gpu0, ...) of the emulated device of `node` of one of `kinds` that `device` names."""
    assert lab.cfg is not None
    values = {a.get("string") for a in (device.get("attributes") or {}).values()} - {None}
    return next((f.name for f in HardwareLab(lab.cfg).node(node).plan.functions
                 if f.kind in kinds and ((f.gpu or {}).get("uuid") in values or f.bdf in values)), None)
