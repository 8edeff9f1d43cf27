"""What drivers published (ResourceSlices) and what the scheduler handed out (claim allocations),
as the suites look them up: by driver, by node, free or taken."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from kubernetes import client
from kubernetes.client.rest import ApiException

from suites.framework.verdicts import require
from suites.framework.waits import WaitTimeout, wait_for


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    name: str
    node: str  # "" for devices not bound to one node
    attributes: dict[str, Any]


# (pool, device): its attributes in the driver's slices, as the checks over the run look them up.
Published = dict[tuple[str, str], dict[str, Any]]


def published(api: client.ApiClient, driver: str) -> list[Device]:
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
    return [
        Device(driver, s["spec"]["pool"]["name"], d["name"], s["spec"].get("nodeName", ""), d.get("attributes", {}))
        for s in items
        if s["spec"]["driver"] == driver
        for d in s["spec"].get("devices", [])
    ]


def attributes(api: client.ApiClient, driver: str) -> Published:
    """(pool, device): its attributes, of every device the driver's slices publish now."""
    return {(d.pool, d.name): d.attributes for d in published(api, driver)}


def taken(api: client.ApiClient) -> set[tuple[str, str, str]]:
    """(driver, pool, device) of every device allocated to a claim in any namespace."""
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")["items"]
    return {
        (r["driver"], r["pool"], r["device"])
        for c in items
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    }


def free(api: client.ApiClient, driver: str, node: str | None = None) -> list[Device]:
    """The driver's published devices no claim holds, on `node` if given."""
    busy = taken(api)
    return [d for d in published(api, driver) if (d.driver, d.pool, d.name) not in busy and (node is None or d.node == node)]


def qualified_name(name: str, driver: str) -> str:
    """An attribute name with its domain: a name without one is in the driver's (API reference,
    QualifiedName), in a ResourceSlice as in a metadata file ("the same format")."""
    return name if "/" in name else f"{driver}/{name}"


def qualified(attributes: dict[str, Any], driver: str) -> dict[str, Any]:
    """Attributes under their qualified names; where a device has both forms of one name, the
    qualified form wins, as in the API server's lookup (so it goes last)."""
    return {qualified_name(n, driver): v for n, v in sorted(attributes.items(), key=lambda item: "/" in item[0])}


@dataclass(frozen=True)
class Room:
    """How many devices of a driver each node has, published and free (held by no claim). Devices
    not bound to one node (key "") count for every node: an upper bound the scheduler narrows."""

    driver: str
    published: dict[str, int]
    free: dict[str, int]

    def free_on(self, node: str) -> int:
        return self.free.get(node, 0) + (self.free.get("", 0) if node else 0)

    def _published_on(self, node: str) -> int:
        return self.published.get(node, 0) + (self.published.get("", 0) if node else 0)

    def nodes_with(self, count: int, among: list[str]) -> list[str]:
        """The nodes of `among` with at least `count` free devices."""
        return [n for n in among if self.free_on(n) >= count]

    @property
    def most_free(self) -> int:
        """The most free devices one node has."""
        return max((self.free_on(n) for n in self.published), default=0)

    @property
    def most_published(self) -> int:
        return max((self._published_on(n) for n in self.published), default=0)

    def describe(self) -> str:
        per_node = ", ".join(f"{n or '(not bound to a node)'} {self.free.get(n, 0)}/{c}" for n, c in sorted(self.published.items()))
        return f"free/published devices of {self.driver} per node: {per_node or 'none published'}"

    def lacks(self, count: int, what: str) -> str:
        """Why `what`, which needs `count` devices on one node, cannot run (a SKIP's reason)."""
        return (
            f"{self.driver} publishes at most {self.most_published} device(s) on one node and has at most "
            f"{self.most_free} free on one node ({self.describe()}); {what} needs {count} on one node"
        )


# What a SKIP for lack of devices tells the user to do.
MORE_DEVICES = (
    "give a node more devices of the driver (its hardware or its configuration), or run the check where other claims hold fewer of them"
)
ROOM_WAIT = 30  # claims of an earlier test are deallocated a little after their pods are gone


def room_of(driver: str, devices: list[Device], busy: set[tuple[str, str, str]]) -> Room:
    """The room the driver's published `devices` leave, `busy` (taken) being allocated."""
    return Room(
        driver, dict(Counter(d.node for d in devices)), dict(Counter(d.node for d in devices if (d.driver, d.pool, d.name) not in busy))
    )


def room(api: client.ApiClient, driver: str) -> Room:
    return room_of(driver, published(api, driver), taken(api))


def require_room(api: client.ApiClient, driver: str, count: int, what: str, timeout: float = ROOM_WAIT) -> Room:
    """The driver's room once a node has `count` free devices; SKIP (Room.lacks) when none has
    them within `timeout`, or at once when no node even publishes that many."""

    def enough() -> Room | None:
        now = room(api, driver)
        return now if now.most_free >= count or now.most_published < count else None

    try:
        found = wait_for(f"{count} free device(s) of {driver} on one node", enough, timeout)
    except WaitTimeout:
        found = room(api, driver)
    assert found is not None  # wait_for returns the first truthy answer
    require(found.most_free >= count, found.lacks(count, what), MORE_DEVICES)
    return found


def _cel_literal(value: dict[str, Any]) -> str | None:
    kind, v = next(iter(value.items()))
    return {"int": str(v), "string": json.dumps(v), "bool": str(v).lower()}.get(kind)


def selector_for(device: Device, others: list[Device]) -> str | None:
    """A CEL selector that matches `device` and none of `others`, by an attribute only it has
    (CEL sees a device's driver, attributes and capacity, not its name); None when it has none,
    which no requirement asks of a driver."""
    for name, value in sorted(device.attributes.items()):
        literal = _cel_literal(value)
        if literal is not None and all(o.attributes.get(name) != value for o in others if o != device):
            domain, _, attribute = name.rpartition("/")
            return f'device.driver == "{device.driver}" && device.attributes["{domain or device.driver}"].{attribute} == {literal}'
    return None


def resource_slice(driver: str, node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """A ResourceSlice of `driver` for `node` (one pool named after the node)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{driver}-{node}"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices},
    }


@contextlib.contextmanager
def publishing(api: client.ApiClient, slices: list[dict[str, Any]], classes: Sequence[str] = ()) -> Iterator[None]:
    """Publish ResourceSlices (and a DeviceClass per driver named in `classes`) as a driver would,
    for devices no driver runs: removed afterwards. A kubelet deletes the slices of drivers not
    registered with it when it starts, so removal tolerates their absence."""
    resource = client.ResourceV1Api(api)
    for name in classes:
        resource.create_device_class(
            {  # type: ignore[arg-type]  # a dict: validate_call builds the model
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]},
            }
        )
    for s in slices:
        resource.create_resource_slice(s)  # type: ignore[arg-type]  # a dict: validate_call builds the model
    try:
        yield
    finally:
        for delete, name in [(resource.delete_resource_slice, s["metadata"]["name"]) for s in slices] + [
            (resource.delete_device_class, c) for c in classes
        ]:
            try:
                delete(name)
            except ApiException as e:
                if e.status != 404:
                    raise
