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


def identities(lab: Lab, node: str, kinds: tuple[str, ...] = KINDS) -> dict[str, str]:
    """UUID or PCI address -> name (gpu0, ...) of every emulated device of `node` of one of
    `kinds` (the hardware plan is read once, however many devices are then looked up)."""
    out = {}
    for f in HardwareLab(lab.started_config("identifying the emulated devices")).node(node).plan.functions:
        if f.kind in kinds:
            out.update({key: f.name for key in (f.gpu["uuid"] if f.gpu else None, f.bdf) if key})
    return out


def named(ids: dict[str, str], device: dict[str, Any]) -> str | None:
    """The emulated device among `ids` (identities()) that a published `device` names."""
    values = {a.get("string") for a in (device.get("attributes") or {}).values()} - {None}
    return next((ids[v] for v in sorted(values) if v in ids), None)
