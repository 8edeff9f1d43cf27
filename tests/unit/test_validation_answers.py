"""A rejection passes a validation check only for the cause the case is about."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from suites.framework.evidence import Evidence
from suites.framework.validation import Cause, expect_answer

CONDITIONS = Cause("status.devices[0].conditions", "FieldValueTooMany", "at most 8")


def rejecting(*causes: dict[str, str]):
    def write() -> None:
        e = ApiException(status=422)
        e.body = json.dumps({"message": "invalid", "details": {"causes": list(causes)}})
        raise e

    return write


def cause(field: str, reason: str, message: str) -> dict[str, str]:
    return {"field": field, "reason": reason, "message": message}


def test_the_expected_cause_passes() -> None:
    expect_answer(
        "9 conditions",
        rejecting(cause(CONDITIONS.field, CONDITIONS.reason, "Too many: 9: must have at most 8 items")),
        (CONDITIONS,),
        Evidence(),
    )


@pytest.mark.parametrize(
    "write,why",
    [
        (rejecting(cause("status.devices[0].data", "FieldValueTooLong", "Too long")), "nothing else"),
        (
            rejecting(
                cause(CONDITIONS.field, CONDITIONS.reason, "Too many: 9: must have at most 8 items"),
                cause("status.devices[1]", "FieldValueDuplicate", "Duplicate value"),
            ),
            "nothing else",
        ),
        (rejecting(cause(CONDITIONS.field, CONDITIONS.reason, "Too many: 9")), "saying 'at most 8'"),
        (lambda: None, "accepted it"),
    ],
)
def test_another_cause_an_extra_one_or_acceptance_fails(write, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        expect_answer("9 conditions", write, (CONDITIONS,), Evidence())
