"""KP-02's second half: on emulated hardware the driver's slices follow the node's devices. A
device of a node that a node-local slice of the driver publishes, and that no claim holds,
removed from the emulated hardware must leave the driver's slices while the node's other devices
stay; restored, it must be published again."""

from __future__ import annotations

from kubernetes import client

from clusters.providers import Lab
from suites.framework import claims
from suites.kubelet_plugin import contract, emulated, observe


def published(lab: Lab, api: client.ApiClient, driver: str, node: str) -> dict[str, tuple[str, str]]:
    """The emulated devices of `node` the driver's current node-local slices publish: name (gpu0,
    ...) -> (pool, device name)."""
    out = {}
    ids = emulated.identities(lab, node)
    for pool, current in contract.current_pools(observe.driver_slices(api, driver)).items():
        for device in (d for s in current if s["spec"].get("nodeName") == node for d in s["spec"].get("devices") or []):
            if name := emulated.named(ids, device):
                out[name] = (pool, device["name"])
    return out


def held(api: client.ApiClient, driver: str) -> set[tuple[str, str]]:
    """(pool, device) of every device of the driver allocated to a claim anywhere in the cluster."""
    return {(r["pool"], r["device"]) for c in claims.listed_everywhere(api) for r in claims.allocated(c, driver)}


def candidate(lab: Lab, api: client.ApiClient, driver: str, nodes: list[str]) -> tuple[str, str, dict[str, tuple[str, str]]] | None:
    """A node, the emulated device of it to remove (one the driver publishes and no claim holds),
    and everything of the node the driver publishes; None when nothing qualifies."""
    taken = held(api, driver)
    for node in sorted(nodes):
        found = published(lab, api, driver, node)
        free = sorted(name for name, device in found.items() if device not in taken)
        if free:
            return node, free[-1], found
    return None
