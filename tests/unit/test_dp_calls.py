"""DP-07 judged from the calls the recording proxy (dp-probe --proxy-resource) printed. The records
below are the proxy's own output (its Go test's fakes, k8s.io/kubelet v0.37.1 protojson), with the
proxy's klog lines on stderr in between as the pod's log has them; the PreStartContainer answer is
the one a plugin implementing it gives."""

from __future__ import annotations

import json
import re

import pytest

from drivers_under_test.profile import load_profile
from suites.device_plugin import calls
from suites.device_plugin.calls import Call
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
PREFERRED = (
    '{"method":"GetPreferredAllocation","request":{"container_requests":[{"available_deviceIDs":["gpu-1","gpu-2",'
    '"gpu-0"],"must_include_deviceIDs":[],"allocation_size":2}]},"response":{"container_responses":[{"deviceIDs":'
    '["gpu-1","gpu-2"]}]},"error":""}'
)
ALLOCATED = (
    '{"method":"Allocate","request":{"container_requests":[{"devices_ids":["gpu-2","gpu-1"]}]},"response":'
    '{"container_responses":[{"envs":{"VENDOR_DEVICES":"gpu-1,gpu-2"},"mounts":[],"devices":[],"annotations":{},'
    '"cdi_devices":[]}]},"error":""}'
)
PRE_STARTED = '{"method":"PreStartContainer","request":{"devices_ids":["gpu-1","gpu-2"]},"response":{},"error":""}'
KLOG = 'I1123 10:39:01.000000       1 deviceplugin.go:84] "Registered with kubelet" resource="vendor.example/gpu"'
LOG = "\n".join([DISCOVERED, KLOG, REGISTERED, OPTIONS, LISTED, PREFERRED, ALLOCATED, PRE_STARTED])
GIVEN = ["gpu-1", "gpu-2"]  # the kubelet's checkpoint


def _with(**options: bool) -> list[Call]:
    """The recorded calls with the plugin's answer to the kubelet's GetDevicePluginOptions replaced."""
    return [Call(c.method, c.request, options) if c.method == calls.OPTIONS else c for c in calls.parse(LOG)]


def _without(method: str) -> list[Call]:
    return [c for c in calls.parse(LOG) if c.method != method]


def test_the_records_are_read_in_order_and_klog_lines_left_out() -> None:
    recorded = calls.parse(LOG)
    assert [c.method for c in recorded] == [
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


def test_a_plugin_whose_preference_is_taken_and_pre_start_called_passes() -> None:
    verdict = calls.judge(calls.parse(LOG), GIVEN)
    assert verdict.violations == [] and verdict.notes == []
    assert verdict.seen["preference"]["answered"] == GIVEN and verdict.seen["pre-start"] == [GIVEN]


def test_an_allocation_other_than_the_preference_fails_naming_both() -> None:
    other = calls.parse(LOG.replace('"deviceIDs":["gpu-1","gpu-2"]', '"deviceIDs":["gpu-0","gpu-1"]'))
    (violation,) = calls.judge(other, GIVEN).violations
    assert violation == "the kubelet allocated ['gpu-1', 'gpu-2'], the plugin preferred ['gpu-0', 'gpu-1']"


def test_an_invalid_preference_is_named_as_the_plugins() -> None:
    other = calls.parse(LOG.replace('"deviceIDs":["gpu-1","gpu-2"]', '"deviceIDs":["gpu-9"]'))
    (violation,) = calls.judge(other, GIVEN).violations
    assert "the preference names ['gpu-9'], not among the available ['gpu-0', 'gpu-1', 'gpu-2']" in violation
    assert "the preference has 1 devices, the kubelet asked for 2" in violation


def test_an_oversized_preference_the_kubelet_took_part_of_fails_naming_its_size() -> None:
    # The kubelet takes what it needs of the preference (preferred.Intersection(available)), so
    # the allocation differs from a preference one device too large: fake-gpu-plugin's
    # oversized-preference variant, whose profile names this violation.
    other = calls.parse(LOG.replace('"deviceIDs":["gpu-1","gpu-2"]', '"deviceIDs":["gpu-1","gpu-2","gpu-0"]'))
    (violation,) = calls.judge(other, GIVEN).violations
    assert violation == (
        "the kubelet allocated ['gpu-1', 'gpu-2'], the plugin preferred ['gpu-0', 'gpu-1', 'gpu-2']; "
        "the preference has 3 devices, the kubelet asked for 2"
    )
    named = load_profile("fake-gpu-plugin").variants["oversized-preference"].violations["DP-07"]
    assert re.search(named, violation)


def test_an_advertised_preference_never_asked_for_fails() -> None:
    (violation,) = calls.judge(_without(calls.PREFERRED), GIVEN).violations
    assert violation == (
        "the plugin advertises get_preferred_allocation_available, yet the kubelet allocated "
        "['gpu-1', 'gpu-2'] without calling GetPreferredAllocation"
    )


def test_a_missing_pre_start_fails_and_is_awaited_until_then() -> None:
    recorded = _without(calls.PRE_START)
    assert not calls.awaited(recorded, GIVEN) and calls.awaited(calls.parse(LOG), GIVEN)
    (violation,) = calls.judge(recorded, GIVEN).violations
    assert violation == (
        "the plugin asks for PreStartContainer (pre_start_required), yet the kubelet did not call "
        "it for the allocated ['gpu-1', 'gpu-2']; it called it for []"
    )


def test_what_the_plugin_does_not_offer_is_a_note_not_a_violation() -> None:
    verdict = calls.judge(_with(pre_start_required=True), GIVEN)
    assert verdict.violations == []
    assert verdict.notes == ["the plugin does not advertise get_preferred_allocation_available: no preference to honour"]
    neither = calls.judge(_with(), GIVEN)
    assert neither.violations == [] and len(neither.notes) == 2
    assert calls.awaited(_with(), GIVEN)  # nothing to wait for after Allocate


def test_the_options_the_kubelet_acts_on_are_its_own_calls() -> None:
    # The Discover and Register records carry options too; only the kubelet's call counts.
    with pytest.raises(ObservationFailed, match="no GetDevicePluginOptions of the kubelet's passed through"):
        calls.judge(_without(calls.OPTIONS), GIVEN)


def test_an_allocate_the_proxy_never_saw_is_no_verdict() -> None:
    with pytest.raises(ObservationFailed, match=r"Allocate of \['gpu-0', 'gpu-1'\] did not pass through the proxy"):
        calls.judge(calls.parse(LOG), ["gpu-0", "gpu-1"])
    assert not calls.awaited(calls.parse(LOG), ["gpu-0", "gpu-1"])


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
