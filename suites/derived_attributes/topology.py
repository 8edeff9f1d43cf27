"""Devices the DA checks publish themselves on a slice-only node: two drivers that describe the
same NUMA topology under different attribute names, as real GPU and NIC drivers do."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from suites.framework import slices

GPU, NIC = "da-gpu.dralab.dev", "da-nic.dralab.dev"
DERIVED_NUMA = "derived.dralab.dev/numa"

# name -> attributes. The NICs' indexes run against their NUMA nodes, so pairing by index is wrong.
GPUS = {"gpu-0": {"numa": 0, "index": 0}, "gpu-1": {"numa": 1, "index": 1}}
NICS = {"nic-0": {"numaNode": 1, "index": 0}, "nic-1": {"numaNode": 0, "index": 1}}


def _typed(value: Any) -> dict[str, Any]:
    return {"bool": value} if isinstance(value, bool) else {"int": value} if isinstance(value, int) else {"string": value}


def _devices(spec: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "attributes": {k: _typed(v) for k, v in attrs.items()}} for n, attrs in spec.items()]


@contextlib.contextmanager
def published(api, node: str) -> Iterator[None]:
    with slices.publishing(api, [slices.resource_slice(GPU, node, _devices(GPUS)),
                                 slices.resource_slice(NIC, node, _devices(NICS))], classes=[GPU, NIC]):
        yield


def numa_of(driver: str, attribute: str) -> str:
    return f'device.attributes["{driver}"].{attribute}'
