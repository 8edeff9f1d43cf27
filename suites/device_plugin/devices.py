"""A node's emulated GPUs as a device plugin names them: by the IDs a plugin reads from the
hardware (the GPU's UUID, its PCI address, or its index, NVIDIA's minor number) and by their
device nodes, character devices whose numbers NVIDIA's kernel module gives (fake_hardware/nvml.py:
nvidia<index> is 195:<index>; nvidiactl, nvidia-uvm and the nvidia-caps nodes are the driver's own,
no one GPU's). DP-01 matches the IDs a plugin lists to the GPUs both ways, DP-04 each device
node an Allocate answer hands to the device it belongs to. Pure: checks.py reads the plan."""

from __future__ import annotations

from dataclasses import dataclass

from fake_hardware import nvml
from fake_hardware.topology import NodePlan


@dataclass(frozen=True)
class Gpu:
    name: str  # in the hardware profile: gpu0, gpu1, ...
    uuid: str
    bdf: str
    index: int
    numbers: str  # its device node's, "major:minor"

    def ids(self) -> tuple[str, ...]:
        """The device IDs a plugin may list it by."""
        return (self.uuid, self.bdf, str(self.index))

    def __str__(self) -> str:
        return f"{self.name} ({self.uuid}, device node {self.numbers})"


@dataclass(frozen=True)
class NodeGpus:
    node: str
    gpus: tuple[Gpu, ...]
    shared: dict[str, str]  # the driver's device nodes no one GPU owns: "major:minor" -> name

    def named(self, device_id: str) -> Gpu | None:
        return next((g for g in self.gpus if device_id in g.ids()), None)

    def owning(self, numbers: str) -> Gpu | None:
        """The GPU whose device node has these numbers."""
        return next((g for g in self.gpus if g.numbers == numbers), None)


def of_plan(plan: NodePlan) -> NodeGpus:
    nodes = {name: f"{major}:{minor}" for name, (major, minor) in nvml.device_nodes(plan).items()}
    gpus = tuple(
        Gpu(f.name, str(f.gpu["uuid"]), f.bdf, int(f.gpu["index"]), nodes[f"nvidia{f.gpu['index']}"])
        for f in plan.functions
        if f.kind == "gpu" and f.gpu is not None
    )
    owned = {g.numbers for g in gpus}
    return NodeGpus(plan.node, gpus, {numbers: name for name, numbers in nodes.items() if numbers not in owned})


def listing_problems(listed: list[str], gpus: NodeGpus) -> list[str]:
    """DP-01: the device IDs a plugin lists (ListAndWatch, as the kubelet holds them) against the
    node's GPUs, both ways: an ID that names none of them, a GPU no ID names, a GPU listed twice."""
    problems = [f"lists {i}, which is none of the GPUs of {gpus.node}" for i in sorted(listed) if gpus.named(i) is None]
    for gpu in gpus.gpus:
        ids = sorted(i for i in listed if gpus.named(i) == gpu)
        if not ids:
            problems.append(f"lists no ID of {gpu.name} (UUID {gpu.uuid}, PCI address {gpu.bdf}, index {gpu.index})")
        elif len(ids) > 1:
            problems.append(f"lists {gpu.name} {len(ids)} times: {ids}")
    return problems


def registration_problem(gpus: NodeGpus, resource: str, counts: tuple[int | None, int | None], listed: list[str]) -> str | None:
    """DP-01 for one node: its capacity and allocatable of `resource` both its number of GPUs, and
    the IDs listed matched to its GPUs (listing_problems); what is wrong, or None."""
    want = len(gpus.gpus)
    wrong = listing_problems(listed, gpus)
    if counts == (want, want) and not wrong:
        return None
    return (
        f"{gpus.node} has {want} GPUs; capacity, allocatable of {resource}: {counts}; the plugin "
        + "; ".join(wrong or [f"lists {listed}"])
        + f" (the GPUs: {', '.join(map(str, gpus.gpus))})"
    )
