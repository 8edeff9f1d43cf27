"""What drivers published (ResourceSlices) and what the scheduler handed out (claim allocations),
as the suites look them up: by driver, by node, free or taken."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Iterator

from kubernetes import client
from kubernetes.client.rest import ApiException


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


def resource_slice(driver: str, node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """A ResourceSlice of `driver` for `node` (one pool named after the node)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{driver}-{node}"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


@contextlib.contextmanager
def publishing(api: client.ApiClient, slices: list[dict[str, Any]], classes: list[str] = ()) -> Iterator[None]:
    """Publish ResourceSlices (and a DeviceClass per driver named in `classes`) as a driver would,
    for devices no driver runs: removed afterwards. A kubelet deletes the slices of drivers not
    registered with it when it starts, so removal tolerates their absence."""
    resource = client.ResourceV1Api(api)
    for name in classes:
        resource.create_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]}})
    for s in slices:
        resource.create_resource_slice(s)
    try:
        yield
    finally:
        for delete, name in [(resource.delete_resource_slice, s["metadata"]["name"]) for s in slices] + \
                [(resource.delete_device_class, c) for c in classes]:
            try:
                delete(name)
            except ApiException as e:
                if e.status != 404:
                    raise
