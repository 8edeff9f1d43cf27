"""From a node profile to the PCI functions of that node: addresses, bridges, config space.

Each NUMA node (socket) has its own PCIe host bridge, as real servers do, so devices on
different sockets differ in their PCIe root (HW-09): the host bridges share the 256 bus numbers
equally, in NUMA id order (two sockets: pci0000:00 owns buses 00-7f, pci0000:80 owns 80-ff).
Within a host bridge, buses are numbered depth first as firmware does: root ports on the host
bridge's own bus, then for each root port its secondary bus, a switch's internal bus and one
bus per downstream port. Endpoints sit at device 0 of their bus; SR-IOV VFs follow their PF on
the same bus (offset 1, stride 1).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

from basics.errors import BadInput
from fake_hardware.profile import Gpu, Nic, NodeProfile, PciEndpoint, gpu_uuid, mac_address

CLASS_BRIDGE = 0x060400
CLASS_3D = 0x030200
CLASS_ETHERNET = 0x020000
REVISION = 0xA1
BUSES = 256


class GpuIdentity(TypedDict):
    """What a GPU function carries beyond PCI: its NVML identity (the lab's gpu-info file)."""

    uuid: str
    index: int
    model: str
    memoryBytes: int


@dataclass
class PciFunction:
    bdf: str
    parent_path: tuple[str, ...]  # directories under devices/ above this function
    name: str  # the profile's device name ("gpu3", "nic0", "nic0-vf2", "sw1-down0")
    kind: str  # root_port, switch_upstream, switch_downstream, gpu, nic, vf
    vendor: int
    device: int
    class_code: int
    numa: int
    cpulist: str
    subsystem_vendor: int = 0
    subsystem_device: int = 0
    link_speed: str = "16.0 GT/s PCIe"
    link_width: int = 16
    driver: str | None = None
    iommu_group: int | None = None
    bus_range: tuple[int, int, int] | None = None  # bridges: primary, secondary, subordinate
    netdev: str | None = None
    mac: str | None = None
    gpu: GpuIdentity | None = None
    physfn: str | None = None  # VF: the PF's BDF
    virtfns: list[str] = field(default_factory=list)  # PF: the BDFs of all its possible VFs (sriov_totalvfs), in VF order
    sriov_total: int = 0
    sriov_vf_device: int = 0
    sriov_num_at_boot: int = 0  # PF: how many VFs are enabled when the node comes up
    at_boot: bool = True  # False for the VFs beyond sriov_num_at_boot: they exist once sriov_numvfs asks for them
    port_speed: int = 0  # NICs and VFs: link speed in Mb/s
    rdma_device: str | None = None  # RDMA-capable NIC functions: their mlx5_<n>

    @property
    def path(self) -> tuple[str, ...]:
        return (*self.parent_path, self.bdf)

    def config_space(self) -> bytes:
        """The first 256 bytes of PCI config space, enough for lspci's names and tree."""
        header_type = 0x01 if self.bus_range else 0x00
        cfg = bytearray(256)
        struct.pack_into("<HHHH", cfg, 0, self.vendor, self.device, 0x0006, 0x0000)
        struct.pack_into("<I", cfg, 0x08, (self.class_code << 8) | REVISION)
        cfg[0x0E] = header_type
        if self.bus_range:
            cfg[0x18:0x1B] = bytes(self.bus_range)
        else:
            struct.pack_into("<HH", cfg, 0x2C, self.subsystem_vendor, self.subsystem_device)
        return bytes(cfg)


@dataclass
class NodePlan:
    node: str
    profile: NodeProfile
    functions: list[PciFunction]

    def by_name(self, name: str) -> PciFunction:
        for fn in self.functions:
            if fn.name == name:
                return fn
        known = ", ".join(f.name for f in self.functions if f.kind in ("gpu", "nic", "vf"))
        raise KeyError(f"node {self.node} has no device {name!r} (devices: {known})")

    def by_bdf(self, bdf: str) -> PciFunction:
        return next(fn for fn in self.functions if fn.bdf == bdf)

    def netdevs(self) -> list[PciFunction]:
        """Every function that can have a netdev, including VFs not enabled at boot (their index is stable)."""
        return [fn for fn in self.functions if fn.netdev]

    def at_boot(self) -> list[PciFunction]:
        return [fn for fn in self.functions if fn.at_boot]

    def host_bridges(self) -> list[str]:
        return [host_bridge(first) for first, _ in host_bridge_buses(self.profile).values()]


def host_bridge_buses(profile: NodeProfile) -> dict[int, tuple[int, int]]:
    """NUMA id -> the first and last bus number its host bridge owns."""
    ids = sorted(n.id for n in profile.numa_nodes)
    share = BUSES // len(ids)
    return {numa: (i * share, (i + 1) * share - 1) for i, numa in enumerate(ids)}


def host_bridge(bus: int) -> str:
    return f"pci0000:{bus:02x}"


def _bdf(bus: int, dev: int, fn: int = 0) -> str:
    return f"0000:{bus:02x}:{dev:02x}.{fn}"


def plan_node(profile: NodeProfile, node: str, seed: int) -> NodePlan:
    functions: list[PciFunction] = []
    buses = host_bridge_buses(profile)
    next_bus = {numa: first + 1 for numa, (first, _) in buses.items()}
    ports_on = Counter[int]()
    iommu = iter(range(10_000))
    gpu_index = {g.name: i for i, g in enumerate(profile.gpus)}

    def new_bus(numa: int) -> int:
        first, last = buses[numa]
        if next_bus[numa] > last:
            raise BadInput(
                f"hardware profile {profile.name}: the devices of NUMA node {numa} need more buses than "
                f"its host bridge owns ({first:02x}-{last:02x})"
            )
        next_bus[numa] += 1
        return next_bus[numa] - 1

    def endpoint(dev: PciEndpoint, bus: int, parent: tuple[str, ...]) -> None:
        bdf = _bdf(bus, 0)
        common: dict[str, Any] = dict(
            parent_path=parent,
            name=dev.name,
            vendor=int(dev.vendor, 16),
            device=int(dev.device, 16),
            numa=dev.numa,
            cpulist=profile.cpus_of(dev.numa),
            subsystem_vendor=int(dev.subsystem_vendor or dev.vendor, 16),
            subsystem_device=int(dev.subsystem_device or "0x0000", 16),
            link_speed=dev.link_speed,
            link_width=dev.link_width,
            driver=dev.driver,
        )
        if isinstance(dev, Gpu):
            functions.append(
                PciFunction(
                    bdf=bdf,
                    kind="gpu",
                    class_code=CLASS_3D,
                    iommu_group=next(iommu),
                    **common,
                    gpu={
                        "uuid": gpu_uuid(seed, node, dev.name),
                        "index": gpu_index[dev.name],
                        "model": dev.model,
                        "memoryBytes": dev.memory_bytes(),
                    },
                )
            )
            return
        assert isinstance(dev, Nic)
        pf = PciFunction(
            bdf=bdf,
            kind="nic",
            class_code=CLASS_ETHERNET,
            iommu_group=next(iommu),
            **common,
            netdev=dev.ifname,
            mac=mac_address(seed, node, dev.name),
            port_speed=dev.speed,
        )
        functions.append(pf)
        if dev.sriov:
            pf.sriov_total, pf.sriov_vf_device = dev.sriov.total_vfs, int(dev.sriov.vf_device, 16)
            pf.sriov_num_at_boot = dev.sriov.num_vfs
            for i in range(dev.sriov.total_vfs):
                slot = i + 1  # VF offset 1, stride 1
                vf = PciFunction(
                    bdf=_bdf(bus, slot // 8, slot % 8),
                    kind="vf",
                    class_code=CLASS_ETHERNET,
                    iommu_group=next(iommu),
                    physfn=bdf,
                    netdev=f"{dev.ifname}v{i}",
                    at_boot=i < dev.sriov.num_vfs,
                    mac=mac_address(seed, node, dev.name, i),
                    port_speed=dev.speed,
                    **{
                        **common,
                        "name": f"{dev.name}-vf{i}",
                        "device": pf.sriov_vf_device,
                        "subsystem_device": 0,
                        "driver": dev.sriov.vf_driver or dev.driver,
                    },
                )
                pf.virtfns.append(vf.bdf)
                functions.append(vf)

    for rp in profile.root_ports:
        root_bus = buses[rp.numa][0]
        ports_on[rp.numa] += 1
        rp_fn = PciFunction(
            bdf=_bdf(root_bus, ports_on[rp.numa]),
            parent_path=(host_bridge(root_bus),),
            name=rp.name,
            kind="root_port",
            vendor=int(rp.vendor, 16),
            device=int(rp.device, 16),
            class_code=CLASS_BRIDGE,
            numa=rp.numa,
            cpulist=profile.cpus_of(rp.numa),
            driver="pcieport",
        )
        functions.append(rp_fn)
        rp_bus = new_bus(rp.numa)
        child = profile.child_of(rp.name)
        if isinstance(child, PciEndpoint):
            endpoint(child, rp_bus, rp_fn.path)
        elif child is not None:
            up = PciFunction(
                bdf=_bdf(rp_bus, 0),
                parent_path=rp_fn.path,
                name=child.name,
                kind="switch_upstream",
                vendor=int(child.vendor, 16),
                device=int(child.device, 16),
                class_code=CLASS_BRIDGE,
                numa=rp.numa,
                cpulist=rp_fn.cpulist,
                driver="pcieport",
            )
            functions.append(up)
            internal = new_bus(rp.numa)
            below = [d for d in [*profile.gpus, *profile.nics] if d.switch == child.name]
            for port_no, dev in enumerate(below):
                down = PciFunction(
                    bdf=_bdf(internal, port_no),
                    parent_path=up.path,
                    name=f"{child.name}-down{port_no}",
                    kind="switch_downstream",
                    vendor=up.vendor,
                    device=up.device,
                    class_code=CLASS_BRIDGE,
                    numa=rp.numa,
                    cpulist=rp_fn.cpulist,
                    driver="pcieport",
                )
                functions.append(down)
                ep_bus = new_bus(rp.numa)
                down.bus_range = (internal, ep_bus, ep_bus)
                endpoint(dev, ep_bus, down.path)
            up.bus_range = (rp_bus, internal, next_bus[rp.numa] - 1)
        rp_fn.bus_range = (root_bus, rp_bus, next_bus[rp.numa] - 1)
    _name_rdma_devices(profile, functions)
    return NodePlan(node=node, profile=profile, functions=functions)


def _name_rdma_devices(profile: NodeProfile, functions: list[PciFunction]) -> None:
    """mlx5_<n> in probe order: the PFs in bus order at boot, then their VFs as SR-IOV creates them.
    Every possible VF has its name reserved, so a VF keeps its name however often it comes and goes."""
    rdma = {nic.name for nic in profile.nics if nic.rdma}
    pfs = sorted((fn for fn in functions if fn.kind == "nic" and fn.name in rdma), key=lambda fn: fn.bdf)
    by_bdf = {fn.bdf: fn for fn in functions}
    for n, fn in enumerate([*pfs, *(by_bdf[vf] for pf in pfs for vf in pf.virtfns)]):
        fn.rdma_device = f"mlx5_{n}"
