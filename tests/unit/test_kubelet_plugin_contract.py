"""The KP predicates on made-up observations: each catches what it names and passes what a correct
driver may legitimately do (several slices per pool, an old generation on its way out, a device
answered without CDI devices, specs shared by claims, edits every device shares, a fault told
through the slice or the health stream)."""

from __future__ import annotations

import json

import pytest

from basics.junit_properties import Verdict
from dralab.verdicts import classify
from suites.framework import dra_checkpoint
from suites.framework.dra_checkpoint import PreparedClaim, PreparedDevice
from suites.framework.pods import ObservationFailed
from suites.kubelet_plugin import contract, isolation, observe, probe_calls
from suites.kubelet_plugin.health import Seen

DRIVER = "gpu.vendor.example"
UID = "6a1f0c2e-0000-4000-8000-000000000001"


def slice_(name: str, pool: str, devices: list[str], generation: int = 1, count: int = 1, node: str | None = "node-1") -> dict:
    spec = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": [{"name": d} for d in devices],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


def test_consistent_pools_pass_also_split_and_while_an_old_generation_goes() -> None:
    slices = [
        slice_("a", "node-1", ["gpu-0", "gpu-1"], generation=2, count=2),
        slice_("b", "node-1", ["gpu-2"], generation=2, count=2),
        slice_("old", "node-1", ["gpu-0"], generation=1, count=1),
        slice_("net", "fabric", ["link-0"], node=None),
    ]
    assert contract.slice_problems(slices, {"node-1"}) == []


def test_slice_problems_name_each_inconsistency() -> None:
    duplicate = contract.slice_problems([slice_("a", "p", ["gpu-0"], count=2), slice_("b", "p", ["gpu-0"], count=2)], {"node-1"})
    assert len(duplicate) == 1 and "['gpu-0'] appear more than once" in duplicate[0]
    short = contract.slice_problems([slice_("a", "p", ["gpu-0"], count=2)], {"node-1"})
    assert len(short) == 1 and "1 slice(s) (a) say resourceSliceCount [2]" in short[0]
    nowhere = contract.slice_problems([slice_("a", "p", ["gpu-0"], node="node-9")], {"node-1"})
    assert nowhere == ["pool 'p': its slices name node(s) ['node-9'], which do not exist"]


def prepared(*devices: PreparedDevice) -> PreparedClaim:
    return PreparedClaim(UID, "ns", "c", frozenset({"pod-uid"}), {DRIVER: devices, "other.example": ()})


def results(*devices: tuple[str, str], request: str = "dev") -> list[dict]:
    """Allocation results of DRIVER for `request` ((pool, device) each), and one of another driver."""
    return [{"driver": DRIVER, "pool": p, "device": d, "request": request} for p, d in devices] + [
        {"driver": "other.example", "pool": "x", "device": "y", "request": "dev"}
    ]


SPECS = {
    "/var/run/cdi/vendor-claim_x.json": {"kind": "vendor.example/gpu", "devices": [{"name": f"{UID}-gpu-0"}, {"name": f"{UID}-gpu-1"}]},
    "/etc/cdi/vendor-base.yaml": {"kind": "vendor.example/gpu", "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]},
}


def _answered(device: str, requests: tuple[str, ...] = ("dev",)) -> PreparedDevice:
    """A device answered with two CDI IDs, the claim's own and the node's (a device may map to several)."""
    return PreparedDevice("node-1", device, requests, (f"vendor.example/gpu={UID}-{device}", f"vendor.example/gpu={device}"))


def test_an_answer_with_allocated_devices_and_resolvable_cdi_devices_passes() -> None:
    allocated = results(("node-1", "gpu-0"), ("node-1", "gpu-1"))
    both = prepared(_answered("gpu-0"), _answered("gpu-1"))
    assert contract.prepare_problems(both, allocated, DRIVER, SPECS, complete=True) == []
    # Another correct driver: the subrequest's name ("dev/large", the allocation's form, which the
    # framework strips to "dev"), or none (every request of the claim): request names are KP-04's.
    sub = results(("node-1", "gpu-0"), ("node-1", "gpu-1"), request="dev/large")
    named = prepared(_answered("gpu-0", ("dev/large",)), _answered("gpu-1", ("dev",)))
    assert contract.prepare_problems(named, sub, DRIVER, SPECS, complete=True) == []
    assert contract.prepare_problems(prepared(_answered("gpu-0", ()), _answered("gpu-1", ())), sub, DRIVER, SPECS, complete=True) == []
    # The kubelet records each device again when it prepares the claim again after a restart.
    assert contract.prepare_problems(prepared(*both.of(DRIVER) * 2), allocated, DRIVER, SPECS, complete=True) == []
    # A device with no CDI device is a valid answer (the gRPC API): nothing to resolve.
    bare = prepared(PreparedDevice("node-1", "gpu-0", ("dev",), ()), PreparedDevice("node-1", "gpu-1", ("dev",), ()))
    assert contract.prepare_problems(bare, allocated, DRIVER, SPECS, complete=True) == []


def test_a_device_left_out_is_named_where_the_claims_prepare_succeeded() -> None:
    allocated = results(("node-1", "gpu-0"), ("node-1", "gpu-1"))
    (problem,) = contract.prepare_problems(prepared(_answered("gpu-0")), allocated, DRIVER, SPECS, complete=True)
    assert problem == (
        f"claim ns/c ({UID}), as the kubelet holds its NodePrepareResources answer: left out device(s) "
        f"[('dev', 'node-1', 'gpu-1')] (request, pool, device) that its allocation gives {DRIVER} (it answered [('node-1', 'gpu-0')])"
    )
    nothing = contract.prepare_problems(prepared(), allocated, DRIVER, SPECS, complete=True)
    assert len(nothing) == 1 and "left out device(s) [('dev', 'node-1', 'gpu-0'), ('dev', 'node-1', 'gpu-1')]" in nothing[0]
    # Recorded before its prepare, or its prepare failed: no running pod, so no device is owed yet.
    assert contract.prepare_problems(prepared(), allocated, DRIVER, SPECS, complete=False) == []
    # Allocated twice (shares of one device): answered at all is enough for the kubelet's record.
    shares = results(("node-1", "gpu-0"), ("node-1", "gpu-0"))
    assert contract.prepare_problems(prepared(_answered("gpu-0")), shares, DRIVER, SPECS, complete=True) == []


def test_prepare_problems_name_foreign_devices_and_unresolvable_cdi_devices() -> None:
    foreign = PreparedDevice("node-1", "gpu-7", (), ("vendor.example/gpu=gpu-0",))
    assert contract.prepare_problems(prepared(foreign), results(("node-1", "gpu-0")), DRIVER, SPECS, complete=False) == [
        f"claim ns/c ({UID}), as the kubelet holds its NodePrepareResources answer: answered device(s) [('node-1', 'gpu-7')], "
        f"which its allocation does not give {DRIVER} (it gives [('node-1', 'gpu-0')])"
    ]
    unresolvable = PreparedDevice("node-1", "gpu-0", (), ("vendor.example/gpu=gpu-0-x",))
    problems = contract.prepare_problems(prepared(unresolvable), [], DRIVER, SPECS, complete=True)
    assert len(problems) == 1 and "'vendor.example/gpu=gpu-0-x', which no CDI spec on the node defines" in problems[0]
    # No running pod uses it: it may be in its unprepare, the spec removed before the kubelet's record.
    assert contract.prepare_problems(prepared(unresolvable), [], DRIVER, SPECS, complete=False) == []


def test_per_claim_specs_are_the_ones_naming_the_claim() -> None:
    answer = PreparedDevice("node-1", "gpu-0", (), (f"vendor.example/gpu={UID}-gpu-0", "vendor.example/gpu=gpu-0"))
    assert contract.per_claim_specs(prepared(answer), DRIVER, SPECS) == ["/var/run/cdi/vendor-claim_x.json"]
    shared_only = PreparedDevice("node-1", "gpu-0", (), ("vendor.example/gpu=gpu-0",))
    assert contract.per_claim_specs(prepared(shared_only), DRIVER, SPECS) == []


def checkpoint(claims: list[dict] | None) -> str:
    data = {"kind": "DRACheckpoint", "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1", "ClaimInfoStateList": claims}
    return json.dumps({"Data": json.dumps(data), "Checksum": 1})


def test_the_kubelets_checkpoint_decodes_as_v1_37_writes_it() -> None:
    assert dra_checkpoint.parse(checkpoint(None)) == []
    [got] = dra_checkpoint.parse(
        checkpoint(
            [
                {
                    "ClaimUID": UID,
                    "ClaimName": "c",
                    "Namespace": "ns",
                    "PodUIDs": {"pod-uid": {}},
                    "DriverState": {
                        DRIVER: {
                            "Devices": [
                                {
                                    "PoolName": "node-1",
                                    "DeviceName": "gpu-0",
                                    "RequestNames": ["dev"],
                                    "CDIDeviceIDs": ["vendor.example/gpu=gpu-0"],
                                }
                            ]
                        },
                        "other.example": {"Devices": None},
                    },
                    "Newer": "ignored",
                }
            ]
        )
    )
    assert got.pod_uids == {"pod-uid"} and got.of("other.example") == () and got.of("none.example") is None
    assert got.of(DRIVER) == (PreparedDevice("node-1", "gpu-0", ("dev",), ("vendor.example/gpu=gpu-0",)),)
    with pytest.raises(ObservationFailed, match="does not decode"):
        dra_checkpoint.parse("{}")


# KP-04 ---------------------------------------------------------------------------------------


def _spec(kind: str, devices: dict[str, dict], common: dict | None = None) -> dict:
    return {"kind": kind, "containerEdits": common or {}, "devices": [{"name": n, "containerEdits": e} for n, e in devices.items()]}


ISOLATION_SPECS = [
    _spec(
        "gpu.vendor.example/gpu",
        {
            "a": {"env": ["GPU_0=a", "VENDOR=x"], "deviceNodes": [{"path": "/dev/gpu0"}, {"path": "/dev/gpuctl"}]},
            "b": {"env": ["GPU_1=b", "VENDOR=x"], "deviceNodes": [{"path": "/dev/gpu1"}, {"path": "/dev/gpuctl"}]},
        },
        common={"env": ["COMMON=1"]},
    ),
    _spec(
        "gpu.vendor.example/metadata",
        {
            "r1": {"mounts": [{"containerPath": "/meta/r1", "hostPath": "/h/r1"}]},
            "r2": {"mounts": [{"containerPath": "/meta/r2", "hostPath": "/h/r2"}]},
        },
    ),
]
A, B = {"gpu.vendor.example/gpu=a", "gpu.vendor.example/metadata=r1"}, {"gpu.vendor.example/gpu=b", "gpu.vendor.example/metadata=r2"}


def _judge(seen: isolation.Edits) -> list[str]:
    expected, _ = isolation.edits_of(ISOLATION_SPECS, A)
    _, foreign = isolation.edits_of(ISOLATION_SPECS, B)
    return isolation.problems("main", seen, expected, foreign)


def test_isolation_passes_a_container_with_its_edits_and_the_ones_all_devices_share() -> None:
    seen = isolation.Edits({"GPU_0=a", "VENDOR=x", "COMMON=1", "PATH=/bin"}, {"/dev/gpu0", "/dev/gpuctl"}, {"/meta/r1", "/proc"})
    assert _judge(seen) == []


def test_isolation_names_what_is_missing_and_what_leaked_from_another_request() -> None:
    seen = isolation.Edits({"VENDOR=x", "COMMON=1", "GPU_1=b"}, {"/dev/gpu0", "/dev/gpuctl", "/dev/gpu1"}, {"/meta/r2"})
    missing, leaked = _judge(seen)
    assert "lacks" in missing and "env GPU_0" in missing and "mount /meta/r1" in missing
    assert "env GPU_1=b" in leaked and "device node /dev/gpu1" in leaked and "mount /meta/r2" in leaked


def test_a_device_answered_for_every_request_goes_to_each_by_the_allocation() -> None:
    prepared = PreparedClaim(
        UID,
        "ns",
        "pair",
        frozenset(),
        {DRIVER: (PreparedDevice("p", "gpu-0", (), ("v/c=a",)), PreparedDevice("p", "gpu-1", (), ("v/c=b",)))},
    )
    claim = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r1", "driver": DRIVER, "pool": "p", "device": "gpu-0"},
                        {"request": "r2/big", "driver": DRIVER, "pool": "p", "device": "gpu-1"},
                    ]
                }
            }
        }
    }
    assert isolation.ids_by_request(prepared, claim, DRIVER) == {"r1": {"v/c=a"}, "r2": {"v/c=b"}}


def test_the_observation_script_output_parses() -> None:
    out = "A=1\0B=2\0" + isolation.SEPARATOR + "22 1 0:5 / /meta/r1 ro - tmpfs x rw\n" + isolation.SEPARATOR + "/dev/gpu0\n"
    seen = isolation.parse_seen(out, ["/dev/gpu0", "/dev/gpu1"])
    assert seen.env == {"A=1", "B=2"} and seen.mounts == {"/meta/r1"} and seen.device_nodes == {"/dev/gpu0"}


# KP-09, KP-05: the node-local pools a device is allocated from by hand -----------------------


def test_node_pools_take_the_newest_generation_and_leave_out_pools_of_no_node() -> None:
    slices = [
        slice_("a", "node-1", ["gpu-0"], generation=2, count=2),
        slice_("b", "node-1", ["gpu-1"], generation=2, count=2),
        slice_("old", "node-1", ["gpu-9"], generation=1),
        slice_("net", "fabric", ["link-0"], node=None),
        slice_("c", "node-2/pool-0", ["gpu-0"], node="node-2"),
    ]
    assert observe.node_pools(slices) == [
        observe.NodePool("node-1", "node-1", frozenset({"gpu-0", "gpu-1"})),
        observe.NodePool("node-2", "node-2/pool-0", frozenset({"gpu-0"})),
    ]


# KP-04 to KP-08: a running pod's claim as the kubelet holds it -------------------------------


def test_a_running_pods_claim_missing_from_the_checkpoint_is_the_labs_error_not_the_drivers_fail() -> None:
    held = PreparedClaim(UID, "ns", "c", frozenset({"pod-uid"}), {DRIVER: ()})
    state = observe.NodeState("node-1", "/var/lib/kubelet/dra_manager_state", [held], {})
    assert state.running_claim(UID, "ns", "c", "p") is held
    with pytest.raises(ObservationFailed) as raised:
        state.running_claim("another-uid", "ns", "shared", "p")
    assert str(raised.value) == (
        "claim ns/shared (another-uid) of running pod ns/p is not in node-1's kubelet DRA checkpoint /var/lib/kubelet/dra_manager_state"
    )
    # The kubelet writes the checkpoint: whichever check reads it, no FAIL of the driver's.
    assert classify("call", raised.value, [], ["MUST"]).verdict == Verdict.ERROR


# KP-10: how a fault shows --------------------------------------------------------------------


def test_a_fault_shows_in_the_pod_or_the_slice_and_clears_where_it_showed() -> None:
    assert Seen(("Unknown",), "published").unhealthy() is None
    assert "Unhealthy" in Seen(("Unhealthy",), "published").unhealthy()
    assert Seen(("Unknown",), "withdrawn").unhealthy() == "the device is withdrawn in the slice"
    assert Seen(("Unknown",), "tainted").unhealthy() == "the device is tainted in the slice"
    # Told through the stream: healthy again only once the pod says Healthy.
    assert not Seen(("Unknown",), "published").healthy(stream=True)
    assert Seen(("Healthy",), "published").healthy(stream=True)
    # Told through the slice: published again, the pod never told Unhealthy.
    assert Seen(("Unknown",), "published").healthy(stream=False)
    assert not Seen(("Unknown",), "withdrawn").healthy(stream=False)


def _held(*devices: tuple[str, ...]) -> list:
    from suites.framework.dra_checkpoint import PreparedClaim, PreparedDevice

    return [
        PreparedClaim(
            "u1",
            "ns",
            "c",
            frozenset({"p"}),
            {"gpu.example": tuple(PreparedDevice("node-1", d, ("r",), (f"gpu.example/gpu={d}",)) for d in devices)},
        )
    ]


def _second(claims: dict) -> dict:
    return {"endpoint": "/var/lib/kubelet/plugins/gpu.example/dra.sock", "versions": ["v1.DRAPlugin"], "answer": {"claims": claims}}


def test_a_second_prepare_with_the_same_devices_is_idempotent() -> None:
    answer = _second(
        {
            "u1": {
                "devices": [
                    {"requestNames": ["r"], "poolName": "node-1", "deviceName": d, "cdiDeviceIds": [f"gpu.example/gpu={d}"]}
                    for d in ("gpu-1", "gpu-0")
                ]
            }
        }
    )
    assert probe_calls.prepare_problems(_held("gpu-0", "gpu-1"), "gpu.example", answer) == []


@pytest.mark.parametrize(
    "claims, said",
    [
        ({"u1": {"error": "claim u1 is prepared already"}}, "answered the error 'claim u1 is prepared already'"),
        ({}, "left it unanswered"),
        (
            {
                "u1": {
                    "devices": [
                        {
                            "requestNames": ["r"],
                            "poolName": "node-1",
                            "deviceName": "gpu-0",
                            "cdiDeviceIds": ["gpu.example/gpu=gpu-0-again"],
                        }
                    ]
                }
            },
            "gpu-0-again",
        ),
    ],
)
def test_a_second_prepare_that_differs_names_the_claim_and_the_difference(claims: dict, said: str) -> None:
    found = probe_calls.prepare_problems(_held("gpu-0"), "gpu.example", _second(claims))
    assert len(found) == 1 and "claim ns/c (u1)" in found[0] and said in found[0], found


def test_an_unprepare_again_of_a_claim_unprepared_already_must_succeed() -> None:
    held = _held("gpu-0")
    assert probe_calls.unprepare_problems(held, _second({"u1": {}})) == []
    assert probe_calls.unprepare_problems(held, _second({"u1": None})) == []  # an entry, nil, as the API allows
    (refused,) = probe_calls.unprepare_problems(held, _second({"u1": {"error": "claim u1: no record of it"}}))
    assert refused == (
        "claim ns/c (u1), unprepared by the kubelet already: "
        "NodeUnprepareResources of it again answered the error 'claim u1: no record of it'"
    )
    (unanswered,) = probe_calls.unprepare_problems(held, _second({}))
    assert "claim ns/c (u1)" in unanswered and "left it unanswered" in unanswered


# KP-12: standard attributes against the PCI function each device stands for.
GPU0 = contract.PciDevice("0000:03:00.0", "pci0000:00", 0, "GPU-aaa")
GPU1 = contract.PciDevice("0000:83:00.0", "pci0000:80", 1, "GPU-bbb")
VF = contract.PciDevice("0000:05:00.2", "pci0000:00", -1)
NODE = {p.bdf: p for p in (GPU0, GPU1, VF)}


def _std_slice(*devices: dict, node: str | None = "n1") -> list[dict]:
    return [
        {
            "metadata": {"name": "s"},
            "spec": {"pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "nodeName": node, "devices": list(devices)},
        }
    ]


def _device(name: str, **attrs: dict) -> dict:
    return {"name": name, "attributes": {**attrs}}


def _std(**values: dict) -> dict:
    return {contract.STANDARD + k: v for k, v in values.items()}


def test_standard_attributes_of_each_device_pass() -> None:
    devices = [
        _device("gpu-0", uuid={"string": "GPU-aaa"}, **_std(pciBusID={"string": GPU0.bdf}, pcieRoot={"string": "pci0000:00"})),
        _device("gpu-1", **_std(pciBusID={"string": GPU1.bdf}, pcieRoot={"string": "pci0000:80"}, numaNode={"ints": [1, 0]})),
        _device("vf", **_std(pciBusID={"string": VF.bdf})),
    ]
    judged, problems = contract.standard_attribute_problems(_std_slice(*devices), lambda node: NODE)
    assert problems == [] and [j["pci function"] for j in judged] == [GPU0.bdf, GPU1.bdf, VF.bdf]


def test_a_device_without_standard_attributes_or_node_is_not_judged() -> None:
    judged, problems = contract.standard_attribute_problems(
        _std_slice(_device("plain", uuid={"string": "GPU-aaa"})) + _std_slice(_device("shared", **_std(numaNode={"int": 0})), node=None),
        lambda node: NODE,
    )
    assert judged == [] and problems == []


@pytest.mark.parametrize(
    ("device", "message"),
    [
        # another GPU's address, though its UUID says which it is
        (
            _device("gpu-0", uuid={"string": "GPU-aaa"}, **_std(pciBusID={"string": GPU1.bdf})),
            "pciBusID is {'string': '0000:83:00.0'}, expected",
        ),
        # the root taken from the device's own bus number
        (
            _device("gpu-1", **_std(pciBusID={"string": GPU1.bdf}, pcieRoot={"string": "pci0000:83"})),
            "pcieRoot is {'string': 'pci0000:83'}",
        ),
        (_device("gpu-1", **_std(pciBusID={"string": GPU1.bdf}, numaNode={"int": 0})), "numaNode is {'int': 0}, expected {'int': 1}"),
        (_device("gpu-1", **_std(pciBusID={"string": GPU1.bdf}, numaNode={"ints": [0, 1]})), "numaNode is {'ints': [0, 1]}"),
        (_device("vf", **_std(pciBusID={"string": VF.bdf}, numaNode={"int": 0})), "its numa_node is -1"),
        (_device("ghost", **_std(pciBusID={"string": "0000:09:00.0"})), "'0000:09:00.0'}, which is no PCI function of the node"),
        (_device("anon", **_std(pcieRoot={"string": "pci0000:00"})), "names no PCI function of the node"),
    ],
)
def test_a_standard_attribute_not_the_devices_own_fails(device: dict, message: str) -> None:
    judged, problems = contract.standard_attribute_problems(_std_slice(device), lambda node: NODE)
    assert len(judged) == 1 and len(problems) == 1 and message in problems[0], problems
    assert f"device p/{device['name']} on n1" in problems[0]
