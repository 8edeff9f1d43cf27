"""Hardware profiles (HW-01, HW-02, HW-03): what one node has, and which node has which profile.

A node profile lists NUMA nodes, PCIe root ports and switches, GPUs and NICs (optionally with
SR-IOV). Identifiers that must differ between nodes (GPU UUIDs, MAC addresses) are derived
from the cluster profile's seed and the node name (HW-06); PCI addresses follow from the
topology, so identical nodes have identical addresses, as identical servers do.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Annotated, Sequence

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from basics.errors import BadInput
from basics.yaml_profiles import load_yaml, profile_path, validated

PROFILES_DIR = Path(__file__).parent / "profiles"
HEX16 = Annotated[str, Field(pattern=r"^0x[0-9a-f]{4}$")]
CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
IFNAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")  # leaves room for the "v<N>" of VF names (15 max)
QUANTITY = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti)$")


def _quantity(v: str) -> str:
    if not QUANTITY.match(v):
        raise ValueError(f"{v!r} is not a quantity like 80Gi")
    return v


Quantity = Annotated[str, AfterValidator(_quantity)]


def quantity_bytes(quantity: str) -> int:
    number, unit = QUANTITY.match(quantity).groups()
    return int(number) * 1024 ** ("KiMiGiTi".index(unit) // 2 + 1)


def cpu_ids(cpu_list: str) -> list[int]:
    """The CPUs of a kernel CPU list ("0-3,8-11"), in the list's order."""
    ids: list[int] = []
    for part in cpu_list.split(","):
        first, _, last = part.partition("-")
        ids.extend(range(int(first), int(last or first) + 1))
    return ids


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NumaNode(Model):
    """One socket's NUMA node. Its CPUs are listed core by core, then again for each further
    hardware thread, as Linux numbers them on x86 ("0-55,112-167": 56 cores, 2 threads each)."""

    id: int = Field(ge=0, le=63)
    cpus: str
    threads_per_core: int = Field(1, ge=1, le=8)
    memory: Quantity = "256Gi"

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: str) -> str:
        if not CPU_LIST.match(v):
            raise ValueError(f"{v!r} is not a CPU list like 0-31 or 0-15,32-47")
        return v

    @model_validator(mode="after")
    def _whole_cores(self) -> "NumaNode":
        count = len(self.cpu_ids())
        if count % self.threads_per_core:
            raise ValueError(f"node {self.id}: {count} CPUs do not make whole cores of {self.threads_per_core} threads")
        return self

    def cpu_ids(self) -> list[int]:
        return cpu_ids(self.cpus)

    def memory_bytes(self) -> int:
        return quantity_bytes(self.memory)


class RootPort(Model):
    name: str
    numa: int
    vendor: HEX16 = "0x8086"
    device: HEX16 = "0x2030"  # Intel Sky Lake-E PCI Express Root Port A


class Switch(Model):
    name: str
    root_port: str
    vendor: HEX16 = "0x1000"
    device: HEX16 = "0xc030"  # Broadcom PEX890xx PCIe Gen 5 Switch


class PciEndpoint(Model):
    name: str
    vendor: HEX16
    device: HEX16
    subsystem_vendor: HEX16 | None = None
    subsystem_device: HEX16 | None = None
    numa: int
    switch: str | None = None
    root_port: str | None = None
    link_speed: str = "16.0 GT/s PCIe"
    link_width: int = Field(16, ge=1, le=32)
    driver: str

    @model_validator(mode="after")
    def _one_parent(self) -> "PciEndpoint":
        if (self.switch is None) == (self.root_port is None):
            raise ValueError(f"{self.name}: give exactly one of switch or root_port as its parent")
        return self


MIG_PROFILE = re.compile(r"^([1-7])g\.(\d+)gb$")  # a GPU instance profile: compute slices (of 7), memory in GB
MIG_MEMORY_SLICES = 8  # a MIG-capable GPU's memory slices, where its GPU instances are placed
ARCHITECTURES = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "rubin", "unknown")  # as NVML names them


class Gpu(PciEndpoint):
    model: str
    memory: Quantity
    driver: str = "nvidia"
    # What NVML tells beyond sysfs (fake_hardware/nvml.py); a model of GPU_MODELS brings its own.
    architecture: str = "unknown"
    compute_capability: str | None = Field(None, pattern=r"^\d+\.\d$")
    mig_profiles: dict[str, int] = {}  # GPU instance profile -> how many fit on the GPU at once
    mig_devices: list[str] = []  # MIG mode on, with one GPU instance (one compute instance each) per entry

    @model_validator(mode="before")
    @classmethod
    def _identity_of_model(cls, data: object) -> object:
        if isinstance(data, dict) and (known := GPU_MODELS.get(data.get("model", ""))):
            return {**known, **data}
        return data

    @model_validator(mode="after")
    def _mig_devices_fit(self) -> "Gpu":
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"{self.name}: architecture {self.architecture!r} is none of {', '.join(ARCHITECTURES)}")
        for name in self.mig_profiles:
            if not MIG_PROFILE.match(name):
                raise ValueError(f"{self.name}: MIG profile {name!r} is not like 3g.40gb (compute slices, memory)")
        for name in sorted(set(self.mig_devices)):
            if self.mig_devices.count(name) > self.mig_profiles.get(name, 0):
                raise ValueError(
                    f"{self.name}: {self.mig_devices.count(name)} MIG devices {name}, the GPU takes "
                    f"{self.mig_profiles.get(name, 0)} (its profiles: {self.mig_profiles})"
                )
        if sum(mig_slices(name) for name in self.mig_devices) > 7:
            raise ValueError(f"{self.name}: MIG devices {self.mig_devices} need more than the GPU's 7 compute slices")
        if self.mig_devices and mig_layout(self) is None:
            raise ValueError(
                f"{self.name}: MIG devices {self.mig_devices} do not fit the GPU's {MIG_MEMORY_SLICES} "
                f"memory slices (each takes {[self.mig_memory_slices(n) for n in self.mig_devices]})"
            )
        return self

    def mig_memory_slices(self, profile: str) -> int:
        """The memory slices a GPU instance of `profile` spans: its memory's share of the GPU's in
        eighths, rounded up to a power of two (1g.10gb 1, 1g.20gb and 2g.20gb 2, 3g.40gb 4, 7g.80gb 8 on
        an 80 GB part), as NVML's placements of the profile show."""
        eighths = -(-mig_memory_bytes(profile) * MIG_MEMORY_SLICES // self.memory_bytes())
        return 1 << (max(eighths, 1) - 1).bit_length()

    def mig_placements(self, profile: str) -> list[int]:
        """Where a GPU instance of `profile` may start: aligned to its size, as many as the GPU takes."""
        size = self.mig_memory_slices(profile)
        return list(range(0, MIG_MEMORY_SLICES - size + 1, size))[: self.mig_profiles.get(profile, 0)]

    def memory_bytes(self) -> int:
        return quantity_bytes(self.memory)


def mig_slices(profile: str) -> int:
    return int(MIG_PROFILE.match(profile).group(1))


def mig_layout(gpu: Gpu) -> list[int] | None:
    """The start (memory slice) of each of the GPU's MIG devices, in its order, or None where no
    placements of their profiles hold them all without overlap: the first such layout, trying the
    largest and the most constrained device first, each at its profile's placements in order."""
    order = sorted(
        range(len(gpu.mig_devices)),
        key=lambda i: (-gpu.mig_memory_slices(gpu.mig_devices[i]), len(gpu.mig_placements(gpu.mig_devices[i])), i),
    )
    starts: dict[int, int] = {}

    def place(k: int, taken: frozenset[int]) -> bool:
        if k == len(order):
            return True
        profile = gpu.mig_devices[order[k]]
        size = gpu.mig_memory_slices(profile)
        for start in gpu.mig_placements(profile):
            span = frozenset(range(start, start + size))
            if not taken & span and place(k + 1, taken | span):
                starts[order[k]] = start
                return True
        return False

    return [starts[i] for i in range(len(gpu.mig_devices))] if place(0, frozenset()) else None


def mig_memory_bytes(profile: str) -> int:
    """The memory the name gives, read as GB: the names round a slice's GiB, so as GB a MIG device
    never has more memory than its GPU (a "7g.141gb" of an H200 with 140.4 GiB)."""
    return int(MIG_PROFILE.match(profile).group(2)) * 1000**3


# Real parts, by the name NVML gives them: architecture, CUDA compute capability and the MIG
# profiles `nvidia-smi mig -lgip` lists (single-compute-instance profiles, without +me variants).
_MIG_80GB = {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}
GPU_MODELS: dict[str, dict[str, object]] = {
    "NVIDIA A100-SXM4-40GB": {
        "architecture": "ampere",
        "compute_capability": "8.0",
        "mig_profiles": {"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    },
    "NVIDIA A100-SXM4-80GB": {"architecture": "ampere", "compute_capability": "8.0", "mig_profiles": _MIG_80GB},
    "NVIDIA H100 80GB HBM3": {"architecture": "hopper", "compute_capability": "9.0", "mig_profiles": _MIG_80GB},
    "NVIDIA H200": {
        "architecture": "hopper",
        "compute_capability": "9.0",
        "mig_profiles": {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    },
    "NVIDIA B200": {
        "architecture": "blackwell",
        "compute_capability": "10.0",
        "mig_profiles": {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
    },
    "NVIDIA L40": {"architecture": "ada", "compute_capability": "8.9"},
}


class Sriov(Model):
    total_vfs: int = Field(ge=1, le=256)
    num_vfs: int = Field(ge=0)
    vf_device: HEX16
    vf_driver: str | None = None  # the PF's driver unless given (ice PFs have iavf VFs)

    @model_validator(mode="after")
    def _enabled_within_total(self) -> "Sriov":
        if self.num_vfs > self.total_vfs:
            raise ValueError(f"num_vfs ({self.num_vfs}) is more than total_vfs ({self.total_vfs})")
        return self


class Nic(PciEndpoint):
    ifname: str
    driver: str = "mlx5_core"
    sriov: Sriov | None = None
    speed: int = Field(100_000, ge=10)  # Mb/s, as class/net/<if>/speed shows it; VFs report their PF's
    rdma: bool = False  # RDMA-capable (RoCE): the function and its VFs get infiniband/mlx5_<n> (HW-09)

    @field_validator("ifname")
    @classmethod
    def _ifname(cls, v: str) -> str:
        if not IFNAME.match(v):
            raise ValueError(f"{v!r}: interface names are 1-12 lower-case letters and digits, starting with a letter")
        return v

    @model_validator(mode="after")
    def _rdma_driver(self) -> "Nic":
        if self.rdma and self.driver != "mlx5_core":
            raise ValueError(f"{self.name}: rdma needs driver mlx5_core (the lab names RDMA devices as mlx5 does)")
        return self


class NodeProfile(Model):
    name: str
    description: str = ""
    numa_nodes: list[NumaNode] = Field(min_length=1)
    root_ports: list[RootPort]
    switches: list[Switch] = []
    gpus: list[Gpu] = []
    nics: list[Nic] = []
    # A CPU driver writes cpusets of the CPUs the tree lists, which the host's cgroups only take
    # for CPUs it has: such a profile names the host's own CPU ids, and a lab checks they exist.
    cpus_on_host: bool = False

    def cpus_missing_on_host(self, online: set[int]) -> list[int]:
        return sorted(c for n in self.numa_nodes for c in n.cpu_ids() if c not in online) if self.cpus_on_host else []

    @model_validator(mode="after")
    def _references(self) -> "NodeProfile":
        numa = {n.id for n in self.numa_nodes}
        if len(numa) != len(self.numa_nodes):
            raise ValueError(f"duplicate NUMA node ids in {[n.id for n in self.numa_nodes]}")
        shared = sorted(c for c, n in Counter(c for n in self.numa_nodes for c in n.cpu_ids()).items() if n > 1)
        if shared:
            raise ValueError(f"CPUs {shared[:8]} are in more than one NUMA node (or twice in one)")
        ports = {p.name for p in self.root_ports}
        switches = {s.name for s in self.switches}
        names: list[str] = [p.name for p in self.root_ports] + [s.name for s in self.switches] + [d.name for d in [*self.gpus, *self.nics]]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate names: {', '.join(dupes)} (root ports, switches, GPUs and NICs share one namespace)")
        ifnames = [n.ifname for n in self.nics]
        if len(set(ifnames)) != len(ifnames):
            raise ValueError(f"duplicate NIC ifname in {ifnames}")
        placed: list[tuple[str, Sequence[RootPort | PciEndpoint]]]
        placed = [("root_ports", self.root_ports), ("gpus", self.gpus), ("nics", self.nics)]
        for kind, items in placed:
            for i, item in enumerate(items):
                if item.numa not in numa:
                    raise ValueError(f"{kind}[{i}] ({item.name}): NUMA node {item.numa} does not exist (numa_nodes: {sorted(numa)})")
        for i, sw in enumerate(self.switches):
            if sw.root_port not in ports:
                raise ValueError(f"switches[{i}] ({sw.name}): root port {sw.root_port!r} does not exist")
        for port in ports:
            below = [s.name for s in self.switches if s.root_port == port] + [
                d.name for d in [*self.gpus, *self.nics] if d.root_port == port
            ]
            if len(below) > 1:
                raise ValueError(
                    f"root port {port!r} has {', '.join(below)} below it: a root port links to one "
                    "switch or one device; put a switch in between"
                )
        for kind, items in (("gpus", self.gpus), ("nics", self.nics)):
            for i, dev in enumerate(items):
                if dev.switch is not None and dev.switch not in switches:
                    raise ValueError(f"{kind}[{i}] ({dev.name}): switch {dev.switch!r} does not exist")
                if dev.root_port is not None and dev.root_port not in ports:
                    raise ValueError(f"{kind}[{i}] ({dev.name}): root port {dev.root_port!r} does not exist")
        return self

    def child_of(self, root_port: str) -> "Switch | PciEndpoint | None":
        """What sits below a root port: PCIe links are point to point, so at most one thing."""
        children = [s for s in self.switches if s.root_port == root_port] + [
            d for d in [*self.gpus, *self.nics] if d.root_port == root_port
        ]
        return children[0] if children else None

    def cpus_of(self, numa: int) -> str:
        return next(n.cpus for n in self.numa_nodes if n.id == numa)

    def cpu_count(self) -> int:
        """How many CPU ids the node has (the highest plus one), the width of the kernel's CPU masks."""
        return max(max(n.cpu_ids()) for n in self.numa_nodes) + 1


class ClusterHardware(Model):
    """Which node profile each node gets, and the seed its identifiers derive from."""

    seed: int = 0
    nodes: dict[str, str]


# Identifiers ------------------------------------------------------------------------------


def _digest(seed: int, node: str, *parts: object) -> bytes:
    return hashlib.sha256("/".join(map(str, (seed, node, *parts))).encode()).digest()


def gpu_uuid(seed: int, node: str, gpu: str) -> str:
    return "GPU-" + str(uuid.UUID(bytes=_digest(seed, node, "gpu", gpu)[:16], version=4))


def mac_address(seed: int, node: str, device: str, vf: int | None = None) -> str:
    raw = bytearray(_digest(seed, node, "mac", device, vf)[:6])
    raw[0] = (raw[0] & 0xFC) | 0x02  # locally administered, unicast
    return ":".join(f"{b:02x}" for b in raw)


# Loading ----------------------------------------------------------------------------------


WHAT = "hardware profile"


def node_profile_path(name_or_path: str) -> Path:
    return profile_path(name_or_path, PROFILES_DIR, WHAT)


def load_node_profile(name_or_path: str) -> NodeProfile:
    path = node_profile_path(name_or_path)
    return validated(NodeProfile, load_yaml(path, WHAT), path, WHAT)


def load_cluster_hardware(path: Path) -> ClusterHardware:
    return validated(ClusterHardware, load_yaml(path, WHAT), path, WHAT)


def uniform(profile: str, nodes: list[str], seed: int = 0) -> ClusterHardware:
    """Every node gets the same node profile (the common case: `--hardware dgx-like`)."""
    load_node_profile(profile)  # fail early on an unknown name
    return ClusterHardware(seed=seed, nodes={n: profile for n in nodes})


def hardware_assignment(profile: str | None, cluster_profile: Path | None, nodes: list[str]) -> tuple[dict[str, str], int]:
    """node -> profile and seed, from one profile for every node or a cluster-level profile file."""
    if cluster_profile is not None:
        hardware = load_cluster_hardware(cluster_profile)
    elif profile is not None:
        hardware = uniform(profile, nodes)
    else:
        raise BadInput("give --profile NAME (every node gets it) or --cluster-profile FILE")
    return dict(hardware.nodes), hardware.seed
