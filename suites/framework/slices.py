"""What drivers published (ResourceSlices) and what the scheduler handed out (claim allocations),
as the suites look them up: by driver, by node, free or taken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    name: str
    node: str  # "" for devices not bound to one node
    attributes: dict[str, Any]


def published(api: client.ApiClient, driver: str) -> list[Device]:
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
    return [Device(driver, s["spec"]["pool"]["name"], d["name"], s["spec"].get("nodeName", ""), d.get("attributes", {}))
            for s in items if s["spec"]["driver"] == driver for d in s["spec"].get("devices", [])]


def taken(api: client.ApiClient) -> set[tuple[str, str, str]]:
    """(driver, pool, device) of every device allocated to a claim in any namespace."""
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")["items"]
    return {(r["driver"], r["pool"], r["device"]) for c in items
            for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])}


def free(api: client.ApiClient, driver: str, node: str | None = None) -> list[Device]:
    """The driver's published devices no claim holds, on `node` if given."""
    busy = taken(api)
    return [d for d in published(api, driver)
            if (d.driver, d.pool, d.name) not in busy and (node is None or d.node == node)]
