"""What drivers published (ResourceSlices) and what the scheduler handed out (claim allocations),
as the suites look them up: by driver, by node, free or taken."""

from __future__ import annotations

import json
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


def _cel_literal(value: dict[str, Any]) -> str | None:
    kind, v = next(iter(value.items()))
    return {"int": str(v), "string": json.dumps(v), "bool": str(v).lower()}.get(kind)


def selector_for(device: Device, others: list[Device]) -> str:
    """A CEL selector that matches `device` and none of `others`, by an attribute only it has
    (CEL sees a device's driver, attributes and capacity, not its name)."""
    for name, value in sorted(device.attributes.items()):
        literal = _cel_literal(value)
        if literal is not None and all(o.attributes.get(name) != value for o in others if o != device):
            domain, _, attribute = name.rpartition("/")
            return (f'device.driver == "{device.driver}" && '
                    f'device.attributes["{domain or device.driver}"].{attribute} == {literal}')
    raise AssertionError(f"{device.driver} device {device.name} has no attribute that tells it from the other devices "
                         f"of its node: {device.attributes}")
