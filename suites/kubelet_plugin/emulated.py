"""Which emulated device a published device stands for: the one whose UUID or PCI address the
slice device carries among its attribute values, as drivers publish them (uuid,
resource.kubernetes.io/pciBusID, a pciAddress of their own). KP-02 removes and restores it, KP-10
faults it; KP-12 and KP-13 read the node's tree as drivers do."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from clusters.providers import Lab
from fake_hardware.lab import HardwareLab
from fake_hardware.profile import cpu_ids
from suites.kubelet_plugin import contract, cpus

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


def cpu_topology(lab: Lab, node: str) -> cpus.Topology:
    """Each CPU of `node` as its tree serves it (what CPU drivers read): its NUMA node
    (node/node<N>/cpulist) and its socket (cpu<K>/topology/physical_package_id)."""
    system = HardwareLab(lab.hardware_site("reading the emulated CPUs' topology")).node(node).sys_root / "devices" / "system"
    numa = {cpu: int(d.name[4:]) for d in (system / "node").glob("node[0-9]*") for cpu in cpu_ids((d / "cpulist").read_text().strip())}
    sockets = {int(d.name[3:]): int((d / "topology" / "physical_package_id").read_text()) for d in (system / "cpu").glob("cpu[0-9]*")}
    return cpus.Topology(numa, sockets)
