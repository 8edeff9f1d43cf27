"""Checks of the API server's validation: make a write, take its answer (accepted, or rejected
as 422 Invalid with the server's causes), compare it with what the case expects. A rejection
counts only for the expected cause: the field path, the reason and what the message says, with
no other cause beside it, so a write refused for something else does not pass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from kubernetes.client.rest import ApiException

from suites.framework.evidence import Evidence


@dataclass(frozen=True)
class Cause:
    field: str  # the cause's field path, e.g. status.devices[0].conditions
    reason: str  # FieldValueTooMany, FieldValueInvalid, ...
    says: str = ""  # what its message must contain (the limit the case is about)


def message(e: ApiException) -> str:
    """What the API server said when it refused a request (its Status message), else the body."""
    try:
        return json.loads(e.body or "{}").get("message") or e.body or f"{e.status} {e.reason}"
    except ValueError:
        return e.body or ""


def causes(e: ApiException) -> list[dict[str, Any]]:
    body = json.loads(e.body or "{}")  # a 422's body: the callers check the status first
    return (body.get("details") or {}).get("causes") or [{"message": body.get("message", "")}]


def expect_answer(case: str, write: Callable[[], object], rejected_for: tuple[Cause, ...], ev: Evidence) -> None:
    """`rejected_for`: empty if the write must be accepted, else every cause it must be rejected
    for (more than one only where the case cannot break one limit alone, e.g. 33 derived
    attributes need 33 constraints, one past that limit too)."""
    try:
        write()
        got: list[dict[str, Any]] = []
    except ApiException as e:
        assert e.status == 422, f"{case}: want 422 Invalid or success, got {e.status}: {e.body}"
        got = causes(e)
    ev.observe("the API server's answer", {"rejected": got} if got else "accepted")
    if not rejected_for:
        assert not got, f"{case}: want accepted, the API server rejected it: {got}"
        return
    want = " and ".join(f"{c.reason} at {c.field}" for c in rejected_for)
    assert got, f"{case}: want rejected for {want}, the API server accepted it"
    assert sorted((c.get("field", ""), c.get("reason", "")) for c in got) == sorted((c.field, c.reason) for c in rejected_for), (
        f"{case}: want rejected for {want} and nothing else; the API server gave {got}"
    )
    for cause in rejected_for:
        said = next(c.get("message", "") for c in got if (c.get("field"), c.get("reason")) == (cause.field, cause.reason))
        assert cause.says in said, f"{case}: want {cause.field} rejected saying {cause.says!r}, the API server said {said!r}"
