"""Observations in pods cannot pass empty: only the agreed exit code means "absent"; a failed exec
is an ObservationFailed (ERROR), never an empty result a check could accept."""

from __future__ import annotations

import subprocess

import pytest

from suites.framework import pods
from suites.framework.evidence import Evidence
from suites.resource_claim_status import network_data


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


def test_a_failed_look_at_the_pods_interfaces_is_no_pod_without_interfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = answering(monkeypatch, 126, stderr="OCI runtime exec failed")
    device = network_data.Device("node-1/ens1f0-vf0", frozenset(), {"interfaceName": "net1"})
    with pytest.raises(pods.ObservationFailed, match="OCI runtime exec failed"):
        network_data.matches_the_pod([device], lambda script: pods.observe(None, "ns", "p", script), Evidence())  # type: ignore[arg-type]  # no lab: exec_in is faked
    assert calls[0][3][-1] == "ip addr"
