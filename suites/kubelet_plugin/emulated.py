"""Which emulated device a published device stands for: the one whose UUID or PCI address the
slice device carries among its attribute values, as drivers publish them (uuid,
resource.kubernetes.io/pciBusID, a pciAddress of their own). KP-02 removes and restores it, KP-10
faults it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from clusters.providers import Lab
from fake_hardware.lab import HardwareLab
from suites.kubelet_plugin import contract

# The emulated devices a DRA driver publishes one by one.
KINDS = ("gpu", "nic", "vf")


def identities(lab: Lab, node: str, kinds: tuple[str, ...] = KINDS) -> dict[str, str]:
    """UUID or PCI address -> name (gpu0, ...) of every emulated device of `node` of one of
    `kinds` (the hardware plan is read once, however many devices are then looked up)."""
    out = {}
    for f in HardwareLab(lab.hardware_site("identifying the emulated devices")).node(node).plan.functions:
        if f.kind in kinds:
            out.update({key: f.name for key in (f.gpu["uuid"] if f.gpu else None, f.bdf) if key})
    return out


def named(ids: dict[str, str], device: dict[str, Any]) -> str | None:
    """The emulated device among `ids` (identities()) that a published `device` names."""
    values = {a.get("string") for a in (device.get("attributes") or {}).values()} - {None}
    return next((ids[v] for v in sorted(values) if v in ids), None)


def pci_devices(lab: Lab, node: str) -> dict[str, contract.PciDevice]:
    """BDF -> each PCI function of `node` as its sysfs tree serves it (what drivers read): the
    Root Complex its /sys/bus/pci/devices link resolves under, its numa_node, and for a GPU its UUID."""
    hardware = HardwareLab(lab.hardware_site("reading the emulated devices' sysfs entries")).node(node)
    uuids = {f.bdf: str(f.gpu["uuid"]) for f in hardware.plan.functions if f.gpu and f.gpu.get("uuid")}
    out = {}
    for link in sorted((hardware.sys_root / "bus" / "pci" / "devices").iterdir()):
        parts = Path(os.readlink(link)).parts
        root = parts[parts.index("devices") + 1]
        numa = int((link / "numa_node").read_text().strip())
        out[link.name] = contract.PciDevice(link.name, root, numa, uuids.get(link.name))
    return out
