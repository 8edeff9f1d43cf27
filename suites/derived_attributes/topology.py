"""Devices the DA checks publish themselves on a slice-only node: two drivers that describe the
same NUMA topology under different attribute names, as real GPU and NIC drivers do."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from suites.framework import slices

GPU, NIC = "da-gpu.dralab.dev", "da-nic.dralab.dev"
DERIVED_NUMA = "derived.dralab.dev/numa"

# name -> attributes (and the GPUs' memory capacity). The NICs' indexes run against their NUMA
# nodes, so pairing by index is wrong. GPU topology strings encode the NUMA node as real drivers'
# do ("numa<N>-pcie<R>-gpu<I>"); gpu-0 is the only small one (memory tier). Only nic-1 has a
# speed: reading it on nic-0 is a runtime CEL error (DA-06).
GPUS = {
    "gpu-0": {"numa": 0, "index": 0, "topology": "numa0-pcie0-gpu0"},
    "gpu-1": {"numa": 1, "index": 1, "topology": "numa1-pcie2-gpu1"},
    "gpu-2": {"numa": 0, "index": 2, "topology": "numa0-pcie1-gpu2"},
}
GPU_MEMORY = {"gpu-0": "40Gi", "gpu-1": "80Gi", "gpu-2": "80Gi"}
NICS = {"nic-0": {"numaNode": 1, "index": 0}, "nic-1": {"numaNode": 0, "index": 1, "speedGbps": 100}}
NUMA = {**{n: a["numa"] for n, a in GPUS.items()}, **{n: a["numaNode"] for n, a in NICS.items()}}


def _typed(value: Any) -> dict[str, Any]:
    return {"bool": value} if isinstance(value, bool) else {"int": value} if isinstance(value, int) else {"string": value}


def _devices(spec: dict[str, dict[str, Any]], memory: dict[str, str] | None = None) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = [{"name": n, "attributes": {k: _typed(v) for k, v in attrs.items()}} for n, attrs in spec.items()]
    for d in devices:
        if memory:
            d["capacity"] = {"memory": {"value": memory[d["name"]]}}
    return devices


@contextlib.contextmanager
def published(api, node: str) -> Iterator[None]:
    with slices.publishing(
        api,
        [slices.resource_slice(GPU, node, _devices(GPUS, GPU_MEMORY)), slices.resource_slice(NIC, node, _devices(NICS))],
        classes=[GPU, NIC],
    ):
        yield


def attribute(driver: str, name: str) -> str:
    """The CEL that reads a device's attribute `name` of `driver`'s domain."""
    return f'device.attributes["{driver}"].{name}'


def capacity(driver: str, name: str) -> str:
    """The CEL that reads a device's capacity `name` of `driver`'s domain (a quantity)."""
    return f'device.capacity["{driver}"].{name}'
