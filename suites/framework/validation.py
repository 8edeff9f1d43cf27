"""Checks of the API server's validation: make a write, take its answer (accepted, or rejected
as 422 Invalid with the server's message), compare it with what the case expects."""

from __future__ import annotations

import json
from typing import Callable

from kubernetes.client.rest import ApiException

from suites.framework.evidence import Evidence


def expect_answer(case: str, write: Callable[[], object], accepted: bool, ev: Evidence, because: str = "") -> None:
    """`because`: what a rejection's message must say (the limit the case is about)."""
    try:
        write()
        answer = "accepted"
    except ApiException as e:
        assert e.status == 422, f"want 422 Invalid or success, got {e.status}: {e.body}"
        answer = f"rejected: {json.loads(e.body)['message']}"
    ev.observe("the API server's answer", answer)
    assert answer.startswith("accepted" if accepted else "rejected"), \
        f"{case}: want {'accepted' if accepted else 'rejected'}, the API server {answer}"
    assert because in answer, f"{case}: want a rejection because {because!r}, the API server {answer}"
