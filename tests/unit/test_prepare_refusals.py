"""A pod whose claim the driver refuses to prepare FAILs naming every refusal, oldest first: a
retried prepare may fail for another reason than the first (the cause) did, and only the latest
was named. (The SR-IOV DRA driver answers every retry alike, "no prepared devices found for pod",
and logs the cause; its log is in the FAIL's evidence.)"""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from suites.framework import pods
from suites.framework.pods import PrepareRefused
from suites.framework.waits import DriverTimedOut, WaitTimeout


def event(message: str, minute: int) -> SimpleNamespace:
    return SimpleNamespace(
        type="Warning",
        reason=pods.PREPARE_FAILED,
        message=message,
        count=3,
        event_time=None,
        first_timestamp=datetime(2026, 11, 27, 9, minute, tzinfo=timezone.utc),
        source=SimpleNamespace(component="kubelet"),
        metadata=SimpleNamespace(creation_timestamp=None),
    )


class Core:
    def __init__(self, *api: object) -> None:
        pass

    def read_namespaced_pod(self, name: str, namespace: str) -> SimpleNamespace:
        spec = SimpleNamespace(resource_claims=[SimpleNamespace(name="c")], containers=[], init_containers=None)
        return SimpleNamespace(spec=spec, status=SimpleNamespace(phase="Pending"))

    def list_namespaced_event(self, namespace: str, field_selector: str) -> SimpleNamespace:
        # As the API lists them: not in the order they happened.
        return SimpleNamespace(
            items=[
                event("prepare failed: net attach def name may not be empty", 11),
                event("DRA driver x.example is not registered", 10),
                event("no prepared devices found for pod", 12),
            ]
        )


def test_the_failure_names_every_refusal_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pods.client, "CoreV1Api", Core)
    monkeypatch.setattr(pods, "REFUSAL_GRACE", -1)
    with pytest.raises(PrepareRefused) as failed:
        pods.wait_phase(object(), "ns", "p", timeout=5)
    said = str(failed.value).split("\nevents of")[0]  # the verdict's words, before the pod's events
    assert said.index("net attach def name may not be empty") < said.index("no prepared devices found for pod")
    assert "is not registered" not in said


def _pod(claims: list[str], limits: dict[str, str]) -> SimpleNamespace:
    container = SimpleNamespace(resources=SimpleNamespace(limits=limits))
    spec = SimpleNamespace(resource_claims=[SimpleNamespace(name=c) for c in claims], containers=[container], init_containers=None)
    return SimpleNamespace(spec=spec, status=SimpleNamespace(phase="Pending"))


@pytest.mark.parametrize(
    "claims,limits,timed_out",
    [
        (["c"], {}, DriverTimedOut),  # its claims are the driver's to prepare
        ([], {"fake.dralab.dev/gpu": "1"}, DriverTimedOut),  # a device plugin's resource
        ([], {"cpu": "1"}, WaitTimeout),  # no device: the lab's to start
    ],
)
def test_a_pod_that_uses_devices_is_the_drivers_to_start_any_other_the_labs(
    monkeypatch: pytest.MonkeyPatch, claims: list[str], limits: dict[str, str], timed_out: type
) -> None:
    pod = _pod(claims, limits)
    no_events = SimpleNamespace(items=[])
    core = type(
        "Core", (), {"read_namespaced_pod": lambda self, n, ns: pod, "list_namespaced_event": lambda self, ns, field_selector: no_events}
    )
    monkeypatch.setattr(pods.client, "CoreV1Api", lambda api: core())
    with pytest.raises(WaitTimeout) as raised:
        pods.wait_phase(object(), "ns", "p", timeout=0.01)
    assert type(raised.value) is timed_out and "events of p:" in str(raised.value)
