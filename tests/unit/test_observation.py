"""Observations in pods cannot pass empty: only the agreed exit code means "absent"; a failed exec
is an ObservationFailed (ERROR), never an empty result a check could accept."""

from __future__ import annotations

import subprocess

import pytest

from suites.framework import pods
from suites.framework.netif import interface


def answering(monkeypatch: pytest.MonkeyPatch, rc: int, stdout: str = "", stderr: str = "") -> list[tuple]:
    calls: list[tuple] = []

    def fake(lab, namespace, name, *command, container=None):
        calls.append((namespace, name, container, command))
        return subprocess.CompletedProcess(command, rc, stdout, stderr)

    monkeypatch.setattr(pods, "exec_in", fake)
    return calls


def test_output_absent_and_failure_are_three_different_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    answering(monkeypatch, 0, "seen\n")
    assert pods.observe(None, "ns", "p", "cat f") == "seen\n"  # type: ignore[arg-type]  # no lab: exec_in is faked
    answering(monkeypatch, pods.ABSENT)
    assert pods.observe(None, "ns", "p", "cat f") is None  # type: ignore[arg-type]  # no lab: exec_in is faked
    answering(monkeypatch, 1, stderr='error: unable to upgrade connection: container not found ("c0")')
    with pytest.raises(pods.ObservationFailed, match="container not found"):
        pods.observe(None, "ns", "p", "cat f", container="c0")  # type: ignore[arg-type]  # no lab: exec_in is faked


def test_an_interface_is_absent_only_when_the_pod_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = answering(monkeypatch, pods.ABSENT)
    seen = interface(lambda script: pods.observe(None, "ns", "p", script), "net1")  # type: ignore[arg-type]  # no lab: exec_in is faked
    assert seen["interfaceName"] is None and "/sys/class/net/net1" in calls[0][3][-1]
    answering(monkeypatch, 126, stderr="OCI runtime exec failed")
    with pytest.raises(pods.ObservationFailed):
        interface(lambda script: pods.observe(None, "ns", "p", script), "net1")  # type: ignore[arg-type]  # no lab: exec_in is faked
