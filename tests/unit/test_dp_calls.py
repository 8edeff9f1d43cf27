"""DP-07 judged from the calls the recording proxy (dp-probe --proxy-resource) printed, for every
container the kubelet's checkpoint granted devices, each matched to its own Allocate. The records
below are the proxy's own output (its Go test's fakes, k8s.io/kubelet v0.37.1 protojson), with the
proxy's klog lines on stderr in between as the pod's log has them; the PreStartContainer answer is
the one a plugin implementing it gives."""

from __future__ import annotations

import json
import re

import pytest

from drivers_under_test.profile import load_profile
from suites.device_plugin import calls
from suites.device_plugin.calls import Call, Granted
from suites.device_plugin.checkpoint import allocate_answer_json
from suites.framework.pods import ObservationFailed

DISCOVERED = (
    '{"method":"Discover","request":{"healthy":["gpu-1","gpu-0","gpu-2"],"resource_name":"vendor.example/gpu"},'
    '"response":{"endpoint":"vendor.sock","options":{"pre_start_required":true,"get_preferred_allocation_available":'
    'true},"sockets":[{"endpoint":"dead.sock","error":"GetDevicePluginOptions: rpc error: code = Unavailable desc = '
    'connection refused"},{"endpoint":"other.sock","healthy":["nic-0"]},{"endpoint":"vendor.sock","healthy":'
    '["gpu-0","gpu-1","gpu-2"]}]},"error":""}'
)
REGISTERED = (
    '{"method":"Register","request":{"version":"v1beta1","endpoint":"proxy.sock","resource_name":"vendor.example/gpu",'
    '"options":{"pre_start_required":true,"get_preferred_allocation_available":true}},"response":{},"error":""}'
)
OPTIONS = (
    '{"method":"GetDevicePluginOptions","request":{},"response":{"pre_start_required":true,'
    '"get_preferred_allocation_available":true},"error":""}'
)
LISTED = (
    '{"method":"ListAndWatch","request":{},"response":{"devices":[{"ID":"gpu-2","health":"Healthy","topology":'
    'null},{"ID":"gpu-0","health":"Healthy","topology":null},{"ID":"gpu-1","health":"Healthy","topology":null}]},'
    '"error":""}'
)
KLOG = 'I1123 10:39:01.000000       1 deviceplugin.go:84] "Registered with kubelet" resource="vendor.example/gpu"'


def _preferred(available: list[str], size: int, answered: list[str], must: list[str] | None = None) -> str:
    request = {"container_requests": [{"available_deviceIDs": available, "must_include_deviceIDs": must or [], "allocation_size": size}]}
    return json.dumps(
        {
            "method": "GetPreferredAllocation",
            "request": request,
            "response": {"container_responses": [{"deviceIDs": answered}]},
            "error": "",
        }
    )


def _answer(ids: list[str]) -> dict:
    """A plugin's ContainerAllocateResponse for `ids` as the proxy prints it."""
    return {"envs": {"VENDOR_DEVICES": ",".join(ids)}, "mounts": [], "devices": [], "annotations": {}, "cdi_devices": []}


def _allocated(ids: list[str]) -> str:
    request = {"container_requests": [{"devices_ids": ids}]}
    return json.dumps({"method": "Allocate", "request": request, "response": {"container_responses": [_answer(sorted(ids))]}, "error": ""})


def _pre_started(ids: list[str]) -> str:
    return json.dumps({"method": "PreStartContainer", "request": {"devices_ids": ids}, "response": {}, "error": ""})


# Pod A's main container of 2 devices; pod B's init container of 1, then its main container of 1
# (the init container's, reused: the kubelet asks no preference) and side1 of 1 (a fresh one);
# each container's PreStartContainer as it starts. The calls of k8s.io/kubelet v0.37.1's device
# manager, in its order, as the proxy prints them.
POD_A = [
    _preferred(["gpu-1", "gpu-2", "gpu-0", "gpu-3"], 2, ["gpu-1", "gpu-2"]),
    _allocated(["gpu-2", "gpu-1"]),
    _pre_started(["gpu-1", "gpu-2"]),
]
POD_B = [
    _preferred(["gpu-0", "gpu-3"], 1, ["gpu-0"]),
    _allocated(["gpu-0"]),
    _allocated(["gpu-0"]),
    _preferred(["gpu-3"], 1, ["gpu-3"]),
    _allocated(["gpu-3"]),
    _pre_started(["gpu-0"]),
    _pre_started(["gpu-0"]),
    _pre_started(["gpu-3"]),
]
LOG = "\n".join([DISCOVERED, KLOG, REGISTERED, OPTIONS, LISTED, *POD_A, *POD_B])


def _granted(container: str, pod: str, ids: list[str], init: bool = False) -> Granted:
    """The container's devices as the kubelet's checkpoint holds them, with the answer it recorded."""
    return Granted(container, pod, init, tuple(ids), allocate_answer_json(_answer(ids)))


GRANTED = [
    _granted("pod ns/a container main", "uid-a", ["gpu-1", "gpu-2"]),
    _granted("pod ns/b container init", "uid-b", ["gpu-0"], init=True),
    _granted("pod ns/b container main", "uid-b", ["gpu-0"]),
    _granted("pod ns/b container side1", "uid-b", ["gpu-3"]),
]


def _with(**options: bool) -> list[Call]:
    """The recorded calls with the plugin's answer to the kubelet's GetDevicePluginOptions replaced."""
    return [Call(c.method, c.request, options) if c.method == calls.OPTIONS else c for c in calls.parse(LOG)]


def _replaced(old: str, new: str) -> list[Call]:
    return calls.parse(LOG.replace(old, new, 1))


def test_the_records_are_read_in_order_and_klog_lines_left_out() -> None:
    recorded = calls.parse(LOG)
    assert [c.method for c in recorded][:7] == [
        "Discover",
        "Register",
        "GetDevicePluginOptions",
        "ListAndWatch",
        "GetPreferredAllocation",
        "Allocate",
        "PreStartContainer",
    ]
    assert recorded[5].request == {"container_requests": [{"devices_ids": ["gpu-2", "gpu-1"]}]}
    assert calls.registered(recorded) and calls.listed(recorded) and calls.setup_failure(recorded) is None
    assert calls.options(recorded) == {"get_preferred_allocation_available": True, "pre_start_required": True}


def test_a_plugin_whose_preference_is_taken_and_pre_start_called_for_each_container_passes() -> None:
    verdict = calls.judge(calls.parse(LOG), GRANTED)
    assert verdict.violations == [] and verdict.notes == []
    shown = {c["container"]: c for c in verdict.seen["containers"]}
    assert shown["pod ns/a container main"]["preference"]["answered"] == ["gpu-1", "gpu-2"]
    assert shown["pod ns/b container main"]["preference"] == "none asked: the devices were its pod's init containers'"
    assert all(c["pre-start"] for c in shown.values())


def test_an_allocation_other_than_the_preference_fails_naming_the_container_and_both() -> None:
    other = _replaced('"deviceIDs": ["gpu-3"]', '"deviceIDs": ["gpu-1"]')
    (violation,) = calls.judge(other, GRANTED).violations
    assert violation == (
        "pod ns/b container side1: the kubelet allocated ['gpu-3'], the plugin preferred ['gpu-1']; "
        "the preference names ['gpu-1'], not among the available ['gpu-3']"
    )


def test_an_invalid_preference_is_named_as_the_plugins() -> None:
    other = _replaced('"deviceIDs": ["gpu-1", "gpu-2"]', '"deviceIDs": ["gpu-9"]')
    (violation,) = calls.judge(other, GRANTED).violations
    assert "the preference names ['gpu-9'], not among the available ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3']" in violation
    assert "the preference has 1 devices, the kubelet asked for 2" in violation


def test_an_oversized_preference_the_kubelet_took_part_of_fails_naming_its_size() -> None:
    # The kubelet takes what it needs of the preference (preferred.Intersection(available)), so
    # the allocation differs from a preference one device too large: fake-gpu-plugin's
    # oversized-preference variant, whose profile names this violation. Pod B's side1 asked for
    # the only device left: no preference can be larger than what is available.
    other = calls.parse(
        LOG.replace('"deviceIDs": ["gpu-1", "gpu-2"]', '"deviceIDs": ["gpu-1", "gpu-2", "gpu-0"]').replace(
            '"deviceIDs": ["gpu-0"]', '"deviceIDs": ["gpu-0", "gpu-3"]'
        )
    )
    violations = calls.judge(other, GRANTED).violations
    assert violations == [
        "pod ns/a container main: the kubelet allocated ['gpu-1', 'gpu-2'], the plugin preferred ['gpu-0', 'gpu-1', 'gpu-2']; "
        "the preference has 3 devices, the kubelet asked for 2",
        "pod ns/b container init: the kubelet allocated ['gpu-0'], the plugin preferred ['gpu-0', 'gpu-3']; "
        "the preference has 2 devices, the kubelet asked for 1",
    ]
    named = load_profile("fake-gpu-plugin").variants["oversized-preference"].violations["DP-07"]
    assert all(re.search(named, v) for v in violations)


def test_an_advertised_preference_never_asked_for_fresh_devices_fails() -> None:
    recorded = [
        c for c in calls.parse(LOG) if not (c.method == calls.PREFERRED and c.request["container_requests"][0]["allocation_size"] == 2)
    ]
    (violation,) = calls.judge(recorded, GRANTED).violations
    assert violation == (
        "the plugin advertises get_preferred_allocation_available, yet the kubelet allocated "
        "['gpu-1', 'gpu-2'] to pod ns/a container main without calling GetPreferredAllocation"
    )


def test_each_container_needs_a_pre_start_of_its_own() -> None:
    # One PreStartContainer of gpu-0 left: the init container's; pod B's main container had none.
    recorded = calls.parse(LOG.replace(_pre_started(["gpu-0"]) + "\n", "", 1))
    (violation,) = calls.judge(recorded, GRANTED).violations
    assert violation == (
        "the plugin asks for PreStartContainer (pre_start_required), yet the kubelet did not call it for the devices "
        "allocated to pod ns/b container main, ['gpu-0']; after their Allocate it called it for [['gpu-3']]"
    )


def test_what_the_plugin_does_not_offer_is_a_note_not_a_violation() -> None:
    verdict = calls.judge(_with(pre_start_required=True), GRANTED)
    assert verdict.violations == []
    assert verdict.notes == ["the plugin does not advertise get_preferred_allocation_available: no preference to honour"]
    neither = calls.judge(_with(), GRANTED)
    assert neither.violations == [] and len(neither.notes) == 2


def test_the_options_the_kubelet_acts_on_are_its_own_calls() -> None:
    # The Discover and Register records carry options too; only the kubelet's call counts.
    with pytest.raises(ObservationFailed, match="no GetDevicePluginOptions of the kubelet's passed through"):
        calls.judge([c for c in calls.parse(LOG) if c.method != calls.OPTIONS], GRANTED)


def test_an_allocate_the_proxy_never_saw_or_saw_answered_otherwise_is_no_verdict() -> None:
    unseen = [*GRANTED, _granted("pod ns/c container main", "uid-c", ["gpu-0", "gpu-1"])]
    with pytest.raises(
        ObservationFailed, match=r"no Allocate through the proxy asked for the devices of pod ns/c container main, \['gpu-0', 'gpu-1'\]"
    ):
        calls.judge(calls.parse(LOG), unseen)
    answered = [GRANTED[0], Granted("pod ns/b container init", "uid-b", True, ("gpu-0",), allocate_answer_json({}))]
    with pytest.raises(ObservationFailed, match="was answered as the kubelet holds"):
        calls.judge(calls.parse(LOG), answered)


def test_allocate_other_device_is_not_dp07s_the_answer_is_judged_by_dp04() -> None:
    # fake-gpu-plugin's allocate-other-device variant answers another GPU's device node; the
    # kubelet records that answer, and the preference and pre-start are as they must be.
    wrong = {**_answer(["gpu-0"]), "devices": [{"container_path": "/dev/nvidia3", "host_path": "/dev/nvidia3", "permissions": "rw"}]}
    recorded = _replaced(json.dumps(_answer(["gpu-0"])), json.dumps(wrong))
    granted = [*GRANTED[:1], Granted("pod ns/b container init", "uid-b", True, ("gpu-0",), allocate_answer_json(wrong)), *GRANTED[2:]]
    assert calls.judge(recorded, granted).violations == []


def test_no_plugin_socket_found_names_every_socket_seen() -> None:
    failed = json.loads(DISCOVERED)
    failed["response"]["endpoint"], failed["error"] = "", "0 of the 3 plugin sockets list exactly the healthy devices"
    failed["request"]["healthy"] = ["gpu-0", "gpu-1"]
    failure = calls.setup_failure(calls.parse(json.dumps(failed)))
    assert failure == (
        "the proxy found no device plugin socket of vendor.example/gpu listing the kubelet's healthy devices "
        "['gpu-0', 'gpu-1']: 0 of the 3 plugin sockets list exactly the healthy devices. Sockets seen: "
        "dead.sock: error GetDevicePluginOptions: rpc error: code = Unavailable desc = connection refused; "
        "other.sock: healthy ['nic-0']; vendor.sock: healthy ['gpu-0', 'gpu-1', 'gpu-2']"
    )


def test_a_refused_registration_is_named() -> None:
    refused = calls.parse("\n".join([DISCOVERED, REGISTERED.replace('"error":""', '"error":"version refused"')]))
    assert not calls.registered(refused)
    assert calls.setup_failure(refused) == "the kubelet refused the proxy's registration: version refused"
