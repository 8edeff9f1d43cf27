"""LAB-09: a lab's slice-only nodes are kwok nodes. kwok, a lab component, makes them Ready and
renews their Leases; with ResourceSlices published for them, a pod with a claim is scheduled
onto one by the real scheduler and brought to Running by kwok, without a kubelet. The lab is
this module's own, so its teardown and residue are checked too (LAB-05)."""

from __future__ import annotations

import ipaddress
from typing import Iterator

import pytest
from kubernetes import client

from clusters.config import ClusterConfig
from clusters.lab_configurations import PREFIX, renamed
from clusters.local import kwok
from clusters.local.cluster import LocalCluster, remove
from clusters.local.provider import local_lab
from clusters.providers import Lab
from suites.framework import claims, namespaces, pods, slices
from suites.framework.claims import ClaimBuilder
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e

KWOK_LAB = ClusterConfig(name=f"{PREFIX}-kwok", nodes=1, slice_only_nodes=3)
DRIVER = "kwok-gpu.dralab.dev"
DEVICES = 2


@pytest.fixture(scope="module")
def kwok_lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The module's lab; its teardown must leave nothing behind, kwok included (LAB-05)."""
    cluster = LocalCluster.up(renamed(KWOK_LAB, request.config.getoption("--lab-prefix")))
    try:
        yield local_lab(cluster)
    finally:
        left = remove(cluster.cfg)
        assert not left, "teardown left behind:\n" + "\n".join(left)


def _devices() -> list[dict]:
    return [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(DEVICES)]


@pytest.mark.requirement("LAB-09")
def test_kwok_nodes_are_ready_with_leases_renewed(kwok_lab: Lab) -> None:
    core, coordination = client.CoreV1Api(kwok_lab.api()), client.CoordinationV1Api(kwok_lab.api())
    assert kwok_lab.slice_only_nodes == ["slice-node-1", "slice-node-2", "slice-node-3"]
    for name in kwok_lab.slice_only_nodes:
        node = core.read_node(name)
        assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True", node.status.conditions
        assert node.metadata.annotations.get("kwok.x-k8s.io/node") == "fake", node.metadata.annotations
    name = kwok_lab.slice_only_nodes[0]
    first = coordination.read_namespaced_lease(name, "kube-node-lease").spec  # held by kwok's own identity
    assert first.lease_duration_seconds == kwok.LEASE_SECONDS and first.renew_time, first
    # kwok renews every quarter of the lease duration, as a kubelet does.
    wait_for(
        f"kwok to renew the Lease of {name} (renewed at {first.renew_time})",
        lambda: coordination.read_namespaced_lease(name, "kube-node-lease").spec.renew_time > first.renew_time,
        kwok.LEASE_SECONDS / 2,
    )


@pytest.mark.requirement("LAB-09")
def test_pod_with_claim_is_scheduled_onto_a_kwok_node_and_runs(kwok_lab: Lab) -> None:
    api = kwok_lab.api()
    nodes = kwok_lab.slice_only_nodes
    with slices.publishing(api, [slices.resource_slice(DRIVER, n, _devices()) for n in nodes], classes=[DRIVER]):
        listed = [s for s in client.ResourceV1Api(api).list_resource_slice().items if s.spec.driver == DRIVER]
        assert sorted((s.spec.node_name, len(s.spec.devices)) for s in listed) == [(n, DEVICES) for n in nodes]
        with namespaces.fresh(api, "lab09") as namespace:
            claims.create(api, namespace, ClaimBuilder("gpu").request("gpu", DRIVER))
            pods.create(api, namespace, PodBuilder("on-kwok").with_claim("gpu", claim="gpu"))
            pod = pods.wait_phase(api, namespace, "on-kwok", timeout=60)
            assert pod.spec.node_name in nodes, f"pod went to {pod.spec.node_name}, not a kwok node"
            assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(kwok.pod_cidr(kwok_lab.local.cfg))
            allocated = claims.allocated(claims.read(api, namespace, "gpu"))
            assert [(a["driver"], a["pool"]) for a in allocated] == [(DRIVER, pod.spec.node_name)], allocated
