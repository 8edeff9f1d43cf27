"""ST-01 and ST-08 over a run's claim versions and status writes (suites/resource_claim_status/
checks.py): the claim log's lines as clusters/watch_log.py writes them and the audit log's as
kube-apiserver writes them, for a correct driver, its valid variants and the broken variants
status-for-stale-allocation (ST-01) and clobber-other-conditions, replace-status (ST-08)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clusters import audit
from drivers_under_test.profile import load_profile
from suites.resource_claim_status.checks import entries_outside_allocation, others_not_kept, others_not_kept_over_the_run, write_of

GPU, OTHER = "gpu.dralab.dev", "gpu-b.dralab.dev"
GPU_USER = "system:serviceaccount:dralab-gpu:gpu-dra-driver"
PROFILE = load_profile("gpu")


def violation(variant: str, requirement: str) -> re.Pattern[str]:
    return re.compile(PROFILE.variants[variant].violations[requirement])


def result(device: str, driver: str = GPU, pool: str = "node-1") -> dict[str, str]:
    return {"request": "r", "driver": driver, "pool": pool, "device": device}


def ready(by: str) -> list[dict[str, str]]:
    return [
        {
            "type": "Ready",
            "status": "True",
            "reason": "DeviceConfigured",
            "message": f"configured by {by}",
            "lastTransitionTime": "2026-12-01T17:00:05Z",
        }
    ]


def entry(device: str, driver: str = GPU, pool: str = "node-1", **fields: Any) -> dict[str, Any]:
    return {"driver": driver, "pool": pool, "device": device, **fields}


def version(
    uid: str, rv: int, allocated: list[dict[str, str]] | None, *entries: dict[str, Any], event: str = "MODIFIED", created: str = "17:00:00"
) -> dict[str, Any]:
    """A claim log line of claim `claim-{uid}` in namespace ns, seen at 17:00:{rv}."""
    return {
        "start": f"2026-12-01T17:00:{rv:02d}.000000+00:00",
        "end": f"2026-12-01T17:00:{rv:02d}.000000+00:00",
        "kind": "ResourceClaim",
        "event": event,
        "uid": uid,
        "namespace": "ns",
        "name": f"claim-{uid}",
        "created": f"2026-12-01T{created}Z",
        "resourceVersion": str(rv),
        "status": {"allocation": {"devices": {"results": allocated}} if allocated else None, "devices": list(entries)},
    }


def writes(tmp_path: Path, *sent: tuple[str, str, dict[str, Any], str]) -> list[audit.StatusWrite]:
    """Audit log lines of status writes (claim name, verb, body, refusal or "") at 17:00:30+i, read back."""
    lines = []
    for i, (claim, verb, body, refusal) in enumerate(sent):
        answer = {"metadata": {}, "code": 422, "status": "Failure", "message": refusal} if refusal else {"metadata": {}, "code": 200}
        ref = {"resource": "resourceclaims", "namespace": "ns", "name": claim, "apiGroup": "resource.k8s.io", "subresource": "status"}
        event = {"kind": "Event", "level": "Request", "stage": "ResponseComplete", "verb": verb, "user": {"username": GPU_USER}}
        lines.append(
            json.dumps(
                {
                    **event,
                    "objectRef": ref,
                    "responseStatus": answer,
                    "requestObject": body,
                    "stageTimestamp": f"2026-12-01T17:00:{30 + i}.123456Z",
                }
            )
        )
    log = tmp_path / audit.LOG_NAME
    log.write_text("\n".join(lines) + "\n")
    return audit.status_writes(log)


def update(claim: dict[str, Any], *entries: dict[str, Any]) -> dict[str, Any]:
    """An update's body: the claim as read (its UID and allocation), with these entries."""
    meta = {"name": claim["name"], "namespace": "ns", "uid": claim["uid"], "resourceVersion": claim["resourceVersion"]}
    return {"kind": "ResourceClaim", "metadata": meta, "status": {**claim["status"], "devices": list(entries)}}


def apply(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    """A server-side apply's body: only the entries it sets, and no UID."""
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ns"}, "status": {"devices": list(entries)}}


# Claim a (gpu-0, gpu-1) then claim b (gpu-2) on node-1, each with its entries: as a correct driver
# leaves them, and as the status-for-stale-allocation variant would if the server kept its write.
A = [version("a", 1, None, event="ADDED"), version("a", 2, [result("gpu-0"), result("gpu-1")])]
A_WRITTEN = version("a", 3, [result("gpu-0"), result("gpu-1")], entry("gpu-0"), entry("gpu-1"))
B = [version("b", 10, None, event="ADDED", created="17:00:10"), version("b", 11, [result("gpu-2")], created="17:00:10")]
B_WRITTEN = version("b", 12, [result("gpu-2")], entry("gpu-2"), created="17:00:10")
STALE_REFUSED = (
    'ResourceClaim.resource.k8s.io "claim-b" is invalid: status.devices[1]: Invalid value: '
    '"gpu.dralab.dev/node-1/gpu-0": must be an allocated device in the claim'
)


def test_a_correct_drivers_entries_in_every_claim_version_and_write_are_its_claims_devices(tmp_path: Path) -> None:
    versions = [*A, A_WRITTEN, *B, B_WRITTEN, version("b", 13, None, created="17:00:10")]  # b deallocated: its entries go
    sent = writes(
        tmp_path,
        ("claim-a", "update", update(A[1], entry("gpu-0"), entry("gpu-1")), ""),
        ("claim-b", "update", update(B[1], entry("gpu-2")), ""),
    )
    found = entries_outside_allocation(versions, sent, GPU)
    assert (found.in_versions, found.in_writes, found.problems) == (3, 3, [])


def test_valid_variants_entries_pass(tmp_path: Path) -> None:
    """status-first-device (some devices only), status-apply (applies name no UID), several-pools
    (pools named <node>/pool-<i>), and a write racing the claim's deallocation."""
    pools = [result("gpu-0", pool="node-1/pool-0"), result("gpu-1", pool="node-1/pool-1")]
    versions = [
        *A,
        version("a", 3, [result("gpu-0"), result("gpu-1")], entry("gpu-0")),  # first device only
        version("a", 4, None),  # deallocated while the driver wrote its entries
        version("p", 5, pools, entry("gpu-1", pool="node-1/pool-1"), created="17:00:05"),
    ]
    sent = writes(
        tmp_path,
        ("claim-a", "patch", apply("claim-a", entry("gpu-0")), ""),
        ("claim-a", "patch", apply("claim-a", entry("gpu-1")), STALE_REFUSED.replace("gpu-0", "gpu-1")),  # after deallocation
        ("claim-p", "patch", apply("claim-p", entry("gpu-1", pool="node-1/pool-1")), ""),
    )
    found = entries_outside_allocation(versions, sent, GPU)
    assert (found.in_versions, found.in_writes, found.problems) == (2, 3, [])


def test_status_for_stale_allocation_fails_naming_the_claim_the_entry_and_the_allocation(tmp_path: Path) -> None:
    versions = [*A, A_WRITTEN, *B, B_WRITTEN]
    sent = writes(
        tmp_path,
        ("claim-a", "update", update(A[1], entry("gpu-0"), entry("gpu-1")), ""),
        ("claim-b", "update", update(B[1], entry("gpu-2")), ""),
        ("claim-b", "update", update(B_WRITTEN, entry("gpu-2"), entry("gpu-0"), entry("gpu-1")), STALE_REFUSED),  # a's, refused
    )
    found = entries_outside_allocation(versions, sent, GPU)
    assert found.in_writes == 6
    assert found.problems == [
        f"2026-12-01T17:00:32.123456Z claim ns/claim-b (b): a status update by {GPU_USER} (refused: {STALE_REFUSED}) sent an entry "
        f"of {GPU} for node-1/{device}, which the claim's allocation does not give it (its devices of {GPU} in the "
        "allocations the claim log saw: ['node-1/gpu-2'])"
        for device in ("gpu-0", "gpu-1")
    ]
    assert all(violation("status-for-stale-allocation", "ST-01").search(p) for p in found.problems)


def test_an_entry_outside_its_claim_versions_allocation_is_named_once() -> None:
    """A claim version the server kept with a stale entry (one that does not validate status,
    unlike ST-03's): named with the allocation of that version, once for the claim."""
    kept = [
        version("b", 12, [result("gpu-2")], entry("gpu-2"), entry("gpu-0")),
        version("b", 13, [result("gpu-2")], entry("gpu-2"), entry("gpu-0")),
    ]
    found = entries_outside_allocation([*A, *kept], [], GPU)
    assert found.problems == [
        f"2026-12-01T17:00:12.000000+00:00 claim ns/claim-b (b), resourceVersion 12: an entry of {GPU} for node-1/gpu-0, which the "
        f"claim's allocation does not give it (its devices of {GPU} in the allocation: ['node-1/gpu-2'])"
    ]
    assert entries_outside_allocation(kept, [], OTHER).problems == []  # another driver's entries are not its


def test_a_write_of_a_claim_the_log_saw_no_allocation_of_is_not_judged(tmp_path: Path) -> None:
    sent = writes(
        tmp_path, ("claim-x", "patch", apply("claim-x", entry("gpu-0")), ""), ("claim-a", "patch", apply("claim-a", entry("gpu-0")), "")
    )
    found = entries_outside_allocation([version("x", 1, None, event="ADDED"), *A], sent, GPU)
    assert (found.in_writes, found.problems) == (1, [])


# Claim s: gpu-0 of the driver and gpu-1 of the other driver, whose entry carries its own fields.
BOTH = [result("gpu-0"), result("gpu-1", driver=OTHER)]
THEIRS = entry("gpu-1", driver=OTHER, conditions=ready(OTHER), data={"uuid": "GPU-1"}, networkData={"interfaceName": "net1"})


def shared(rv: int, *entries: dict[str, Any], allocated: list[dict[str, str]] | None = BOTH) -> dict[str, Any]:
    return version("s", rv, allocated, *entries)


def test_a_correct_drivers_writes_keep_the_other_drivers_entries_field_by_field() -> None:
    versions = [
        shared(1, allocated=None),
        shared(2),
        shared(3, THEIRS),  # the other driver's write
        shared(4, THEIRS, entry("gpu-0", conditions=ready(GPU))),  # the driver's: theirs kept, every field
        shared(5, {**THEIRS, "conditions": ready(OTHER)[:0]}, entry("gpu-0", conditions=ready(GPU))),  # the other driver's again
        shared(6, {**THEIRS, "conditions": []}, entry("gpu-0", conditions=ready(GPU), data={"n": 2})),  # the driver's (apply)
    ]
    judged, violating, problems = others_not_kept_over_the_run(versions, GPU)
    assert (judged, violating, problems) == (2, [], [])
    assert others_not_kept_over_the_run(versions, OTHER)[2] == []  # the other driver's writes kept the driver's entries


def test_clobber_other_conditions_fails_naming_each_changed_field_before_and_after() -> None:
    clobbered = ready(GPU)
    versions = [
        shared(2),
        shared(3, THEIRS),
        shared(4, {**THEIRS, "conditions": clobbered}, entry("gpu-0", conditions=ready(GPU))),
    ]
    judged, violating, problems = others_not_kept_over_the_run(versions, GPU)
    assert judged == 1 and [v["resourceVersion"] for v in violating] == ["3", "4"]
    assert problems == [
        f"2026-12-01T17:00:04.000000+00:00 claim ns/claim-s (s): resourceVersion 4, a write of {GPU}'s entries, changed the "
        f"entries {OTHER} owns: node-1/gpu-1 conditions: {json.dumps(ready(OTHER), sort_keys=True)} -> "
        f"{json.dumps(clobbered, sort_keys=True)}"
    ]
    assert violation("clobber-other-conditions", "ST-08").search(problems[0])
    # Before the other driver's prepare (the fixed scenario writes its entry first): conditions from none.
    early = [
        shared(2, entry("gpu-1", driver=OTHER, data={"writtenBy": "dralab"})),
        shared(3, entry("gpu-1", driver=OTHER, data={"writtenBy": "dralab"}, conditions=clobbered), entry("gpu-0")),
    ]
    (line,) = others_not_kept(*early, GPU)
    assert line == f"changed the entries {OTHER} owns: node-1/gpu-1 conditions: absent -> {json.dumps(clobbered, sort_keys=True)}"
    assert violation("clobber-other-conditions", "ST-08").search(line)


def test_every_field_of_the_other_drivers_entry_is_compared() -> None:
    before = shared(3, THEIRS)
    after = shared(4, {**THEIRS, "data": {"uuid": "GPU-9"}, "networkData": None}, entry("gpu-0"))
    assert write_of(before, after, GPU)
    assert others_not_kept(before, after, GPU) == [
        f'changed the entries {OTHER} owns: node-1/gpu-1 data: {{"uuid": "GPU-1"}} -> {{"uuid": "GPU-9"}}; '
        'node-1/gpu-1 networkData: {"interfaceName": "net1"} -> absent'
    ]


def test_replace_status_still_fails_for_the_entries_it_removes() -> None:
    versions = [shared(2), shared(3, THEIRS), shared(4, entry("gpu-0"))]
    _, _, problems = others_not_kept_over_the_run(versions, GPU)
    assert problems == [
        f"2026-12-01T17:00:04.000000+00:00 claim ns/claim-s (s): resourceVersion 4, a write of {GPU}'s entries, removed the "
        f"entries {OTHER} owns: ['node-1/gpu-1'], still allocated"
    ]
    assert violation("replace-status", "ST-08").search(problems[0])


def test_a_version_that_is_not_the_drivers_write_is_not_judged() -> None:
    """Allocating or deallocating, or a write that leaves the driver's entries as they were or
    only removes them (the other driver's, maybe), changes other entries without a write of the
    driver."""
    assert not write_of(shared(3, THEIRS), shared(4, allocated=None), GPU)
    assert not write_of(shared(1, allocated=None), shared(2, THEIRS), GPU)
    assert not write_of(shared(3, THEIRS, entry("gpu-0")), shared(4, {**THEIRS, "data": {}}, entry("gpu-0")), GPU)
    assert not write_of(shared(3, THEIRS, entry("gpu-0")), shared(4, {**THEIRS, "data": {}}), GPU)  # another's drop of its entry
