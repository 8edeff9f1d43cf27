"""KP-13's predicate (suites/kubelet_plugin/cpus.py) on container records as the generated
workloads leave them: a container of a CPU claim on its devices' CPUs alone, as many as its
allocation consumed, none shared with a container of another claim beside it."""

from __future__ import annotations

from typing import Any

from drivers_under_test.profile import CpuDevices, CpuScope
from suites.framework import slices
from suites.kubelet_plugin import cpus

D = "dra.cpu"
DECLARED = CpuDevices(
    attributes={"dra.cpu/cpuID": CpuScope.CPU, "dra.cpu/numaNodeID": CpuScope.NUMA_NODE, "dra.cpu/socketID": CpuScope.SOCKET},
    capacity="dra.cpu/cpu",
)
# Two NUMA nodes of two CPUs, one socket.
TOPOLOGY = cpus.Topology(numa={0: 0, 1: 0, 2: 1, 3: 1}, socket={0: 0, 1: 0, 2: 0, 3: 0})
PUBLISHED = cpus.published_attributes(
    [
        slices.Device(D, "node-1", name, "node-1", attributes)
        for name, attributes in {
            "numa0": {"dra.cpu/numaNodeID": {"int": 0}, "dra.cpu/socketID": {"int": 0}},
            "numa1": {"dra.cpu/numaNodeID": {"int": 1}, "dra.cpu/socketID": {"int": 0}},
            "cpu3": {"dra.cpu/cpuID": {"int": 3}, "dra.cpu/numaNodeID": {"int": 1}},
            "socket0": {"socketID": {"int": 0}},  # unqualified: in the driver's own domain
            "bare": {"dra.cpu/numCPUs": {"int": 2}},
        }.items()
    ]
)


def claim(uid: str, *results: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"uid": uid}, "status": {"allocation": {"devices": {"results": list(results)}}}}


def result(device: str, consumed: str | None = None, request: str = "cpus") -> dict[str, Any]:
    r: dict[str, Any] = {"driver": D, "pool": "node-1", "device": device, "request": request}
    if consumed is not None:
        r["consumedCapacity"] = {"dra.cpu/cpu": consumed}
    return r


def record(pod: str, uid: str, seen: list[int] | None, batch: str = "b1", init: bool = False, container: str = "main") -> dict[str, Any]:
    return {
        "node": "node-1",
        "namespace": "ns",
        "pod": pod,
        "container": container,
        "init": init,
        "uses": [{"name": "c", "request": None}],
        "pod_claims": [{"name": "c", "claim": f"claim-{uid}", "uid": uid, "template": False}],
        "cpus": seen,
        "batch": batch,
    }


def judge(records: list[dict[str, Any]], allocated: dict[str, dict[str, Any]]) -> tuple[list[cpus.Judged], list[str]]:
    judged, problems, unknown = cpus.judged(records, allocated, PUBLISHED, DECLARED, lambda node: TOPOLOGY, D)
    return judged, problems + [f"unknown {u}" for u in unknown] + cpus.problems(judged)


def test_containers_on_their_devices_cpus_as_many_as_consumed_pass() -> None:
    allocated = {"a": claim("a", result("numa0", "1")), "b": claim("b", result("numa1", "2")), "c": claim("c", result("cpu3"))}
    judged, problems = judge([record("p1", "a", [1]), record("p2", "b", [2, 3], batch="b2"), record("p3", "c", [3], batch="b3")], allocated)
    assert problems == []
    assert [(j.allowed, j.count) for j in judged] == [({0, 1}, 1), ({2, 3}, 2), ({3}, 1)]


def test_a_cpu_outside_the_devices_fails_naming_it() -> None:
    _, problems = judge([record("p1", "a", [1, 2])], {"a": claim("a", result("numa0", "2"))})
    assert problems == [
        "container ns/p1/main on node-1 runs on CPUs 2, which are not of the devices allocated for the claims and requests it uses (0-1)"
    ]


def test_a_container_using_one_request_of_a_claim_gets_that_requests_cpus_alone() -> None:
    """dra-driver-cpu v0.2.0's finding: one cpuset for the whole claim, whichever request a container uses."""
    allocated = {"a": claim("a", result("numa0", "1", request="r0"), result("numa1", "1", request="r1"))}
    one_request = {**record("p1", "a", [1, 2]), "uses": [{"name": "c", "request": "r1"}]}
    _, problems = judge([one_request], allocated)
    assert problems == [
        "container ns/p1/main on node-1 runs on CPUs 1, which are not of the devices allocated for the claims and requests it uses (2-3)"
    ]


def test_fewer_or_more_cpus_than_consumed_fail() -> None:
    allocated = {"a": claim("a", result("numa0", "1")), "b": claim("b", result("numa1"))}
    _, problems = judge([record("p1", "a", [0, 1]), record("p2", "b", [2], batch="b2")], allocated)
    assert problems == [
        "container ns/p1/main on node-1 runs on 2 CPU(s) (0-1); its allocation gives it 1",
        "container ns/p2/main on node-1 runs on 1 CPU(s) (2); its allocation gives it 2",  # consumed none: all of numa1
    ]


def test_containers_of_different_claims_side_by_side_sharing_a_cpu_fail() -> None:
    allocated = {"a": claim("a", result("numa0", "1")), "b": claim("b", result("numa0", "1"))}
    _, problems = judge([record("p1", "a", [0]), record("p2", "b", [0])], allocated)
    assert problems == ["containers ns/p1/main and p2/main, of different claims, ran side by side on node-1 sharing CPUs 0"]


def test_sharing_is_no_violation_across_batches_for_init_containers_or_within_one_claim() -> None:
    allocated = {"a": claim("a", result("numa0", "1")), "b": claim("b", result("numa0", "1"))}
    records = [
        record("p1", "a", [0]),
        record("p2", "b", [0], batch="b2"),  # ran after p1 was gone
        record("p3", "b", [0], init=True),  # had ended when p1 ran
        record("p1", "a", [0], container="sidecar"),  # the same claim
    ]
    assert judge(records, allocated)[1] == []


def test_a_device_is_judged_by_the_first_declared_attribute_it_publishes_qualified_or_not() -> None:
    allocated = {"a": claim("a", result("cpu3")), "b": claim("b", result("socket0", "4"))}
    judged, problems = judge([record("p1", "a", [3]), record("p2", "b", [0, 1, 2, 3], batch="b2")], allocated)
    assert problems == [] and [j.allowed for j in judged] == [{3}, {0, 1, 2, 3}]


def test_a_device_without_a_declared_attribute_is_a_problem_and_its_container_is_not_judged() -> None:
    judged, problems = judge([record("p1", "a", [0])], {"a": claim("a", result("bare"))})
    assert judged == []
    assert problems == [
        "device node-1/bare of claim claim-a publishes none of dra.cpu/cpuID, dra.cpu/numaNodeID, dra.cpu/socketID, "
        "which tell the CPUs a device of dra.cpu stands for (the profile's cpuDevices)"
    ]


def test_containers_without_cpus_printed_or_devices_of_the_driver_are_not_judged() -> None:
    other = {"a": claim("a", {**result("numa0"), "driver": "gpu.example.com"}), "b": claim("b", result("numa0"))}
    assert judge([record("p1", "a", [0]), record("p2", "b", None)], other) == ([], [])


def test_the_dump_is_parsed_from_a_containers_log() -> None:
    assert cpus.parse_dump("x\nCpus_allowed_list:\t0-2,5\n--> ip addr\n") == [0, 1, 2, 5]
    assert cpus.parse_dump("--> ip addr\n") is None
    assert cpus.dump_command() == "grep '^Cpus_allowed_list:' /proc/self/status"


def test_a_container_whose_device_is_no_longer_published_is_left_unjudged_and_named() -> None:
    assert judge([record("p1", "a", [0])], {"a": claim("a", result("gone", "1"))}) == ([], ["unknown ns/p1/main (device node-1/gone)"])
