"""The JUnit properties the pytest plugin records per test and the certification report reads,
and the verdicts they carry."""

from enum import StrEnum


class Verdict(StrEnum):
    """A test's or requirement's verdict (docs/verdicts.md), worst first. Its values are the names
    written in JUnit properties and report.json."""

    FAIL = "FAIL"
    ERROR = "ERROR"
    BLOCKED = "BLOCKED"
    WARNING = "WARNING"
    PASS = "PASS"
    SKIP = "SKIP"


# The requirement IDs a test checks, what it observed (whatever its verdict), for a failure its
# evidence and the component logs.
REQUIREMENT, OBSERVED, EVIDENCE = "requirement", "observed", "evidence"
# The verdict where it is not the JUnit outcome's (docs/verdicts.md): FAIL of a driver
# failing inside a fixture, ERROR of a check whose lab broke, WARNING of an unmet SHOULD, BLOCKED
# of a test an earlier FAIL kept from running; with the lab's diagnosis, each unmet SHOULD and
# the requirement that blocked it.
VERDICT, DIAGNOSIS, WARNING, BLOCKED_BY = "verdict", "diagnosis", "warning", "blocked_by"


# Worst first: a test whose phases got several verdicts (a call FAIL, then a teardown ERROR) keeps
# the worst, as a requirement takes its tests' worst.
WORST_FIRST = tuple(Verdict)


def final_verdict(outcome: str, properties: list[tuple[str, str]]) -> str:
    """The verdict of a test: the worst the plugin recorded for its phases where it differs from
    the JUnit outcome (PASS, FAIL, ERROR, SKIP), else that outcome."""
    recorded = {v for k, v in properties if k == VERDICT}
    return next((v for v in WORST_FIRST if v in recorded), outcome)
