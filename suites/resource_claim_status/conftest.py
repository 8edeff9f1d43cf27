"""Fixtures of the ST suite. The API checks (ST-03, ST-04, ST-05) need claims whose status no
driver writes: devices of two DRA drivers that exist only as ResourceSlices (`published_only`),
allocated by the real scheduler to pods bound to the lab's slice-only nodes (or its nodes)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

pytest.register_assert_rewrite("suites.resource_claim_status.checks")

from clusters.providers import Lab  # noqa: E402
from suites.framework import claims, namespaces, pods  # noqa: E402
from suites.framework.claims import ClaimBuilder  # noqa: E402
from suites.framework.waits import wait_for  # noqa: E402

DRIVER_A, DRIVER_B = "st-a.dralab.dev", "st-b.dralab.dev"
DEVICES_PER_NODE = 4


@dataclass
class PublishedOnly:
    """The nodes where the slice-only drivers have devices: `nodes[0]` gets the claims,
    `nodes[1]` is the other node of the authorization checks."""

    nodes: list[str]


def _slice(driver: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{driver}-{node}"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{i}", "attributes": {"index": {"int": i}}}
                                 for i in range(DEVICES_PER_NODE)]}}


@contextlib.contextmanager
def published(api, nodes: list[str]) -> Iterator[None]:
    """ResourceSlices of both slice-only drivers on `nodes`. A kubelet deletes the slices of
    drivers not registered with it when it starts, so removal tolerates their absence."""
    resource = client.ResourceV1Api(api)
    slices = [_slice(d, n) for d in (DRIVER_A, DRIVER_B) for n in nodes]
    for s in slices:
        resource.create_resource_slice(s)
    try:
        yield
    finally:
        for s in slices:
            try:
                resource.delete_resource_slice(s["metadata"]["name"])
            except ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture(scope="session")
def published_only(lab: Lab, api) -> Iterator[PublishedOnly]:
    resource = client.ResourceV1Api(api)
    nodes = (lab.slice_only_nodes or [n.name for n in lab.nodes])[:2]
    assert len(nodes) == 2, f"the ST API checks need two nodes; the lab has {nodes}"
    for driver in (DRIVER_A, DRIVER_B):
        resource.create_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    try:
        with published(api, nodes):
            yield PublishedOnly(nodes)
    finally:
        for driver in (DRIVER_A, DRIVER_B):
            resource.delete_device_class(driver)


@pytest.fixture
def holders_namespace(api) -> Iterator[str]:
    """A namespace for pods that only hold claims and identities."""
    with namespaces.fresh(api, prefix="st") as name:
        yield name


def allocated_claim(api, namespace: str, name: str, node: str) -> dict[str, Any]:
    """A claim with request `a` (a device of DRIVER_A) and `b` (one of DRIVER_B), allocated by the
    scheduler for a pod that must go to `node`; the claim as read once allocated."""
    claims.create(api, namespace, ClaimBuilder(name).request("a", DRIVER_A).request("b", DRIVER_B))
    pod = pods.PodBuilder(f"{name}-holder").with_claim("c", claim=name).on_node(node)
    pod.tolerations.append({"operator": "Exists"})
    pods.create(api, namespace, pod)
    return wait_for(f"claim {namespace}/{name} allocated on {node}",
                    lambda: claims.read_when(api, namespace, name, lambda c: bool(claims.allocated(c))), 60)


def entry(claim: dict[str, Any], driver: str, **fields: Any) -> dict[str, Any]:
    """A status.devices entry for the claim's allocated device of `driver`."""
    (result,) = claims.allocated(claim, driver)
    return {"driver": driver, "pool": result["pool"], "device": result["device"], **fields}
