"""The API server's audit log of claim status writes (clusters/audit.py) and the ST verdict it
decides: a driver's status write refused for a field it did not send is the cluster's fault
(ST-09), so the driver's failing status checks are BLOCKED by it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from clusters import audit
from clusters.provider_registry import provider
from clusters.providers import Lab
from drivers_under_test.profile import load_profile
from suites.framework.drivers import DriverUnderTest
from suites.resource_claim_status import checks

NET = DriverUnderTest(load_profile("net"))
DRIVER_USER = "system:serviceaccount:dralab-net:vf-dra-driver"
REFUSAL = 'ResourceClaim.resource.k8s.io "c" is invalid: status.allocation: Invalid value: null: field cannot be modified once set'


def event(
    verb: str, code: int, body: dict[str, Any], user: str = DRIVER_USER, message: str = "", time: str = "2026-12-01T17:00:00.000000Z"
) -> str:
    """One audit event line as kube-apiserver writes it (json format, ResponseComplete)."""
    return json.dumps(
        {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Request",
            "stage": "ResponseComplete",
            "requestURI": "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status?fieldManager=vf.dralab.dev&force=true",
            "verb": verb,
            "user": {"username": user},
            "objectRef": {
                "resource": "resourceclaims",
                "namespace": "ns",
                "name": "c",
                "apiGroup": "resource.k8s.io",
                "apiVersion": "v1",
                "subresource": "status",
            },
            "responseStatus": {"metadata": {}, "code": code, **({"status": "Failure", "message": message} if message else {})},
            "requestObject": body,
            "stageTimestamp": time,
        }
    )


APPLY = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "ns"},
    "status": {"devices": [{"driver": "vf.dralab.dev", "pool": "node-1", "device": "vf-0"}]},
}
UPDATE = {**APPLY, "status": {"allocation": {"devices": {"results": []}}, **APPLY["status"]}}


def lab_with(tmp_path: Path, *lines: str) -> Lab:
    log = tmp_path / audit.LOG_NAME
    log.write_text("".join(f"{line}\n" for line in lines) + '{"kind": "Event", "verb": "pa')  # a line being written
    return Lab(
        provider=provider("local"),
        kubeconfig=Path("/dev/null"),
        kubectl=Path("/bin/true"),
        log_dir=tmp_path,
        nodes=[],
        taken=datetime(2026, 12, 1, 16, 0, tzinfo=timezone.utc),
    )


def test_the_policy_logs_claim_status_writes_alone(tmp_path: Path) -> None:
    flags = audit.apiserver_flags(tmp_path, tmp_path / "logs")
    assert f"--audit-log-path={tmp_path / 'logs' / audit.LOG_NAME}" in flags
    assert "resources: [resourceclaims/status]" in (tmp_path / "audit-policy.yaml").read_text()


def test_an_apply_refused_for_the_allocation_it_did_not_send_blocks_the_drivers_status_checks(tmp_path: Path) -> None:
    lab = lab_with(tmp_path, event("patch", 200, APPLY), event("patch", 422, APPLY, message=REFUSAL))
    (write,) = audit.status_writes(lab.audit_log("reading it"))[1:]
    assert write.refused and write.refused_for_unsent() == ["allocation"]
    blocked = checks.blocked_by_the_cluster(lab, NET)
    assert blocked is not None and blocked.by == "ST-09"
    assert "refused 1 status write(s) of vf.dralab.dev" in str(blocked) and "ns/c" in str(blocked)
    assert "field cannot be modified once set" in str(blocked) and str(lab.audit_log("naming it")) in str(blocked)


def test_refusals_that_are_the_drivers_block_nothing(tmp_path: Path) -> None:
    earlier = (datetime(2026, 12, 1, 16, 0, tzinfo=timezone.utc) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lab = lab_with(
        tmp_path,
        event("update", 422, UPDATE, message=REFUSAL),  # an update sends the allocation: changed by the driver
        event("patch", 422, {**APPLY, "status": {"allocation": None}}, message=REFUSAL),  # an apply naming it
        event("patch", 422, APPLY, message="status.devices[0]: Invalid value: not allocated"),  # its own entry
        event("patch", 422, APPLY, user="system:serviceaccount:other:driver", message=REFUSAL),  # not this driver
        event("patch", 422, APPLY, message=REFUSAL, time=earlier),
    )  # before this run took the lab
    assert len(audit.status_writes(lab.audit_log("reading it"))) == 5
    assert checks.blocked_by_the_cluster(lab, NET) is None


def test_a_cluster_without_an_audit_log_blocks_nothing(tmp_path: Path) -> None:
    lab = Lab(provider=provider("kubeconfig"), kubeconfig=Path("/dev/null"), kubectl=Path("/bin/true"), log_dir=tmp_path, nodes=[])
    assert checks.blocked_by_the_cluster(lab, NET) is None
    assert audit.status_writes(tmp_path / "absent.log") == []
