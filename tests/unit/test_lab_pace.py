"""The lab's pace (clusters/pace.py) and what waits make of it: a slow but healthy lab stretches a
wait's timeout, the lab's as the driver's; slower than judged, a wait that runs out is the lab's
ERROR with the figures, the driver's obligation too; at an idle lab's pace the driver's obligation
running out is its FAIL, a lab or harness wait running out an ERROR."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from kubernetes import client

from clusters import pace
from clusters.pace import Gauge, Pace, pod_start_seconds
from basics.junit_properties import Verdict
from dralab.verdicts import classify
from suites.framework import waits
from suites.framework.verdicts import DriverFailure
from suites.framework.waits import DriverTimedOut, LabWatch, TooSlowToJudge, WaitTimeout, driver_must, wait_for

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _pod(started_after: list[float | None], restarts: int = 0) -> client.V1Pod:
    statuses = [
        client.V1ContainerStatus(
            name=f"c{n}",
            image="i",
            image_id="",
            ready=s is not None,
            restart_count=restarts,
            state=client.V1ContainerState(running=client.V1ContainerStateRunning(started_at=T0 + timedelta(seconds=s)))
            if s is not None
            else client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason="ContainerCreating")),
        )
        for n, s in enumerate(started_after)
    ]
    return client.V1Pod(
        status=client.V1PodStatus(
            start_time=T0,
            container_statuses=statuses,
            conditions=[client.V1PodCondition(type="PodScheduled", status="True", last_transition_time=T0)],
        )
    )


def test_a_pods_start_is_from_its_scheduling_to_its_last_containers_start() -> None:
    assert pod_start_seconds(_pod([1.0, 4.0])) == 4.0
    assert pod_start_seconds(_pod([1.0, None])) is None  # not all started yet
    assert pod_start_seconds(_pod([30.0], restarts=1)) is None  # a restart, not a start


def test_the_factor_is_the_slower_of_the_api_and_the_pod_starts() -> None:
    assert Pace(api_ms=1, pod_start_s=0.5, pods=3).factor() == 1.0
    assert Pace(api_ms=pace.REFERENCE_API_MS * 3, pod_start_s=None, pods=0).factor() == 3.0
    slow = Pace(api_ms=1, pod_start_s=pace.REFERENCE_POD_START_S * 10, pods=4)
    assert slow.factor() == 10.0 and slow.too_slow()
    assert "pod start median 20.0s over 4 recent pod(s)" in str(slow) and "10.0x slower" in str(slow)


def _watched(p: Pace):
    return waits.watching(LabWatch(pace=lambda fresh: p))


SLOW_BUT_JUDGED = Pace(api_ms=pace.REFERENCE_API_MS * 3, pod_start_s=None, pods=0)
TOO_SLOW = Pace(api_ms=1, pod_start_s=pace.REFERENCE_POD_START_S * 10, pods=5)
IDLE = Pace(api_ms=2, pod_start_s=1.0, pods=9)


@pytest.mark.parametrize("wait", [wait_for, driver_must])
def test_a_slow_but_healthy_lab_stretches_the_wait_so_it_passes(wait) -> None:
    ready_at = time.monotonic() + 0.6
    with _watched(SLOW_BUT_JUDGED):
        assert wait("the slice", lambda: time.monotonic() > ready_at, 0.3, 0.02)
    with pytest.raises(WaitTimeout):  # the same wait at an idle lab's pace runs out
        ready_at = time.monotonic() + 0.6
        wait("the slice", lambda: time.monotonic() > ready_at, 0.3, 0.02)


@pytest.mark.parametrize("wait", [wait_for, driver_must])
def test_a_wait_that_runs_out_on_a_lab_slower_than_judged_is_the_labs_error_with_the_figures(wait) -> None:
    """The driver's obligation too: on a lab that slow its timeout says nothing of the driver."""
    started = time.monotonic()
    with _watched(TOO_SLOW), pytest.raises(TooSlowToJudge) as raised:
        wait("the slice", lambda: False, 0.1, 0.02)
    assert time.monotonic() - started >= 0.1 * pace.SLOWEST_JUDGED  # stretched as far as judged first
    assert not isinstance(raised.value, DriverFailure)
    verdict = classify("call", raised.value, [], ["MUST"])
    assert verdict.verdict == Verdict.ERROR and "too slow to judge" in verdict.why and "pod start median 20.0s" in verdict.why
    # A check that waits for something not to happen still has its answer.
    assert isinstance(raised.value, WaitTimeout)


def test_the_labs_figures_stay_the_diagnosis_once_a_check_adds_its_evidence() -> None:
    with _watched(TOO_SLOW), pytest.raises(TooSlowToJudge) as raised:
        wait_for("the slice", lambda: False, 0.01, 0.01)
    more = type(raised.value)(f"{raised.value}\nevents of pod p:\n(no events)")
    assert "pod start median 20.0s" in classify("call", more, [], ["MUST"]).why


def test_a_lab_or_harness_wait_that_runs_out_at_an_idle_pace_is_an_error_not_a_fail() -> None:
    with _watched(IDLE), pytest.raises(WaitTimeout) as raised:
        wait_for("namespace t-1 gone", lambda: False, 0.1, 0.02)
    assert type(raised.value) is WaitTimeout and not isinstance(raised.value, AssertionError)
    verdict = classify("call", raised.value, [], ["MUST"])
    assert verdict.verdict == Verdict.ERROR and "namespace t-1 gone" in verdict.why


def test_the_drivers_obligation_that_runs_out_at_an_idle_pace_is_its_fail() -> None:
    with _watched(IDLE), pytest.raises(DriverTimedOut) as raised:
        driver_must("the slices of gpu.dralab.dev on node-1", lambda: [], within=0.1, interval=0.02)
    assert isinstance(raised.value, DriverFailure) and isinstance(raised.value, WaitTimeout)
    assert "waiting for the slices of gpu.dralab.dev on node-1 (the driver's obligation); last seen: []" in str(raised.value)
    for when in ("setup", "call", "teardown"):  # a cleanup the driver owes is its FAIL in teardown too
        assert classify(when, raised.value, [], ["MUST"]).verdict == Verdict.FAIL
    assert classify("call", raised.value, [], ["SHOULD"]).verdict == Verdict.WARNING


def test_a_gauge_measures_again_only_when_its_measure_is_old_or_a_fresh_one_is_asked(monkeypatch) -> None:
    measured: list[object] = []
    monkeypatch.setattr(pace, "measure", lambda api, nodes: measured.append((api, nodes)) or Pace(1, None, 0))
    apis: list[str] = []
    gauge = Gauge(lambda: apis.append("client") or "client", ["node-1"], max_age=60)
    gauge(), gauge(), gauge(True)
    assert measured == [("client", ["node-1"])] * 2 and apis == ["client"]  # one client for every measure


def test_a_lab_that_does_not_answer_has_no_pace_and_stretches_nothing(monkeypatch) -> None:
    def refused(api: object, nodes: list[str]) -> Pace:
        raise ConnectionRefusedError("no API server")

    monkeypatch.setattr(pace, "measure", refused)
    assert Gauge(lambda: "client", ["node-1"])() is None
