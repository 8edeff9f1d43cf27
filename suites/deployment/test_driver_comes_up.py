"""DEP-01, checked first for every driver under test: its manifests apply in dependency order, its
pods run on every node with its hardware, and it publishes its devices (ResourceSlices on every
node, or device plugin resources in every node's capacity). When it FAILs, the tests that need
the driver are BLOCKED by it rather than each failing on their own."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from clusters.providers import Lab
from drivers_under_test.evidence import PROFILE_LABEL
from suites.framework.evidence import Evidence


@pytest.mark.e2e
@pytest.mark.requirement("DEP-01")
def test_driver_comes_up_on_every_node(lab: Lab, api, deploy_driver, driver_profile_name: str, evidence: Evidence) -> None:
    # A refusal (an apply the API server rejects, a crash-looping container, nothing published in
    # time) raises DeployFailed with the driver's pods, logs and events: this requirement's FAIL.
    profile = deploy_driver(driver_profile_name)
    pods = client.CoreV1Api(api).list_namespaced_pod(profile.namespace, label_selector=f"{PROFILE_LABEL}={profile.name}").items
    evidence.observe("driver pods", {p.metadata.name: f"{p.spec.node_name} {p.status.phase}" for p in pods})
    nodes = {n.name for n in lab.nodes}
    assert {p.spec.node_name for p in pods if p.status.phase == "Running"} >= nodes, (
        f"driver {profile.name} runs on {sorted(p.spec.node_name or '(unscheduled)' for p in pods)}, not on every node {sorted(nodes)}"
    )
    for driver in profile.drivers:
        # Deploying waited for the publication to settle: what each node publishes now is what it has.
        published: dict[str | None, int] = {}  # None: a slice of no one node
        for s in client.ResourceV1Api(api).list_resource_slice(field_selector=f"spec.driver={driver}").items:
            published[s.spec.node_name] = published.get(s.spec.node_name, 0) + len(s.spec.devices or [])
        evidence.observe(f"devices in the ResourceSlices of {driver} per node", published)
        assert set(published) >= nodes, f"{driver} published no ResourceSlice for {sorted(nodes - set(published))}"
    for resource in profile.extended_resources:
        listed: list[Any] = client.CoreV1Api(api).list_node().items  # Any: metadata.name, Optional in the client, is set
        capacity = {n.metadata.name: (n.status.capacity or {}).get(resource) for n in listed if n.metadata.name in nodes}
        evidence.observe(f"capacity {resource}", capacity)
        assert all(capacity.values()), f"nodes without {resource} in their capacity: {[n for n, c in capacity.items() if not c]}"
