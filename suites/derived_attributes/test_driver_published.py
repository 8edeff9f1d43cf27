"""Derived attributes over what dralab's reference drivers publish from emulated hardware: the
GPU driver's `numa`, topology string and memory capacity, the VF driver's `numaNode` (DA-01,
DA-02), and placement across a node whose hardware aligns GPUs with NICs and one whose hardware
does not (DA-04, on a lab of its own)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from kubernetes import client

from basics.errors import HarnessError
from clusters.providers import Capability, Lab
from suites.framework.evidence import Evidence
from drivers_under_test.deploy import deploy
from drivers_under_test.profile import DriverProfile, load_profile
from suites.derived_attributes import checks
from suites.derived_attributes.topology import DERIVED_NUMA, attribute, capacity
from suites.framework import claims, namespaces, slices
from suites.framework.claims import ClaimBuilder
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e

GPU, VF = "gpu.dralab.dev", "vf.dralab.dev"  # the reference drivers' names, also their device classes
GPU_NUMA, VF_NUMA, TOPOLOGY = attribute(GPU, "numa"), attribute(VF, "numaNode"), attribute(GPU, "topology")


def aligned_pair(name: str, net: DriverProfile, gpu_expression: str = GPU_NUMA, gpu_selector: str | None = None) -> ClaimBuilder:
    """A GPU and a VF whose NUMA nodes, as each driver names them, match through a derived attribute."""
    return (
        ClaimBuilder(name)
        .request("gpu", GPU, selector=gpu_selector, derived={DERIVED_NUMA: gpu_expression})
        .request("nic", VF, derived={DERIVED_NUMA: VF_NUMA})
        .constraint(["gpu", "nic"], match=DERIVED_NUMA)
        .opaque(VF, net.claim_config or {}, requests=("nic",))
    )


def numa_nodes(api, claim: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """request -> (node, NUMA node) of the device allocated for it, from the drivers' slices."""
    published = {(d.driver, d.pool, d.name): d for driver in (GPU, VF) for d in slices.published(api, driver)}
    found = {}
    for r in claims.allocated(claim):
        device = published[(r["driver"], r["pool"], r["device"])]
        found[r["request"]] = (device.node, device.attributes["numa" if r["driver"] == GPU else "numaNode"]["int"])
    return found


@pytest.fixture(scope="module")
def net(lab: Lab, deploy_driver, request: pytest.FixtureRequest) -> DriverProfile:
    if request.config.getoption("--driver"):
        pytest.skip(
            "these checks pair dralab's reference GPU and VF drivers; the drivers --driver names are checked by test_driver_under_test.py"
        )
    if Capability.EMULATED_HARDWARE not in lab.capabilities or not lab.started_config("the reference drivers").hardware:
        pytest.skip("the reference drivers run on the emulated hardware of a lab dralab started")
    deploy_driver("gpu")
    return deploy_driver("net")


EXPRESSIONS = [  # the GPU side; the VF side derives from numaNode
    pytest.param(GPU_NUMA, id="numa", marks=pytest.mark.requirement("DA-01")),
    pytest.param(f'int({TOPOLOGY}.substring(4, {TOPOLOGY}.indexOf("-")))', id="topology string", marks=pytest.mark.requirement("DA-02")),
    pytest.param(
        f'{capacity(GPU, "memory")}.compareTo(quantity("32Gi")) >= 0 ? {GPU_NUMA} : -1',
        id="memory tier",
        marks=pytest.mark.requirement("DA-02"),
    ),
]


@pytest.mark.parametrize("gpu_expression", EXPRESSIONS)
@pytest.mark.usefixtures("derived_gate")
def test_reference_drivers_pair_by_numa(api, net: DriverProfile, namespace: str, evidence: Evidence, gpu_expression: str) -> None:
    node = "node-1"
    free = {d.attributes["numaNode"]["int"] for d in slices.free(api, VF, node)}
    if not free >= {0, 1}:  # the reference net driver's, on dralab's lab
        raise HarnessError(f"{node} needs free VFs on both NUMA nodes for the pairing to mean anything: {free}")
    allocated = checks.schedule(api, namespace, aligned_pair("pair", net, gpu_expression, f"{GPU_NUMA} == 1"), node, evidence)
    got = numa_nodes(api, allocated)
    assert got["gpu"][1] == got["nic"][1] == 1, f"want the NUMA-1 GPU with a NUMA-1 VF; allocated (node, NUMA) {got}"


@pytest.fixture(scope="module")
def placement(placement_lab: Lab) -> Iterator[tuple[Lab, DriverProfile]]:
    net = load_profile("net")
    for profile in (load_profile("gpu"), net):
        deploy(placement_lab, profile)
    yield placement_lab, net


MISALIGNED, ALIGNED = "node-1", "node-2"  # see clusters/lab_configurations.PLACEMENT


@pytest.mark.requirement("DA-04")
def test_pod_lands_on_the_node_with_an_aligned_pair(placement: tuple[Lab, DriverProfile], evidence: Evidence) -> None:
    lab, net = placement
    api = lab.api()
    with namespaces.fresh(api) as namespace:
        allocated = checks.schedule(api, namespace, aligned_pair("placed", net), None, evidence)
        got = numa_nodes(api, allocated)
        pod = client.CoreV1Api(api).read_namespaced_pod("placed", namespace)
        evidence.observe("pod on", pod.spec.node_name)
        assert pod.spec.node_name == ALIGNED and got["gpu"] == got["nic"], (
            f"want the pod on {ALIGNED} with a GPU and a VF of one NUMA node; pod on {pod.spec.node_name}, allocated (node, NUMA) {got}"
        )


@pytest.mark.requirement("DA-04")
def test_pod_stays_unschedulable_with_only_misaligned_nodes(placement: tuple[Lab, DriverProfile], evidence: Evidence) -> None:
    lab, net = placement
    api = lab.api()
    core = client.CoreV1Api(api)
    core.patch_node(ALIGNED, {"spec": {"unschedulable": True}})  # only the misaligned node is left
    try:
        with namespaces.fresh(api) as namespace:
            event = checks.scheduling_failure(api, namespace, aligned_pair("stuck", net), None, "cannot allocate all claims", evidence)
            pod = wait_for(
                "the pod's PodScheduled=False condition",
                lambda: next(
                    (
                        c
                        for c in core.read_namespaced_pod("stuck", namespace).status.conditions or []
                        if c.type == "PodScheduled" and c.status == "False"
                    ),
                    None,
                ),
                10,
            )
            evidence.add("PodScheduled", pod.to_dict())
            assert pod.reason == "Unschedulable", f"want Unschedulable, got {pod.reason}: {pod.message} ({event})"
    finally:
        core.patch_node(ALIGNED, {"spec": {"unschedulable": False}})
