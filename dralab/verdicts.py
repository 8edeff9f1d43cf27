"""A test's verdict from what happened in it (docs/verdicts.md): who is at fault, the
driver (FAIL) or the lab and harness (ERROR), decided by the exception and the lab's diagnosis."""

from __future__ import annotations

from dataclasses import dataclass

from basics.errors import LabBroken
from basics.junit_properties import Verdict
from drivers_under_test.deploy import DeployFailed
from suites.framework.verdicts import Blocked, DriverFailure
from suites.framework.waits import TooSlowToJudge


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    why: str  # for the report: what decided the verdict


def classify(when: str, error: BaseException, lab_problems: list[str], levels: list[str]) -> Judgement:
    """The verdict of a test that raised `error` in phase `when` (setup, call, teardown), given
    what is wrong with its lab (empty: healthy) and the levels of its requirements."""
    if isinstance(error, Blocked):
        return Judgement(Verdict.BLOCKED, str(error))
    if lab_problems:
        return Judgement(Verdict.ERROR, "the lab is unhealthy, so no verdict on the driver:\n" + "\n".join(lab_problems))
    if isinstance(error, LabBroken):
        return Judgement(Verdict.ERROR, "the lab broke under the test")
    if isinstance(error, TooSlowToJudge):
        return Judgement(Verdict.ERROR, str(error).splitlines()[-1])
    # What the driver did (or did not do) against a requirement, also inside a fixture's scenario.
    driver_at_fault = isinstance(error, (DriverFailure, DeployFailed)) or (isinstance(error, AssertionError) and when != "teardown")
    if not driver_at_fault:
        return Judgement(Verdict.ERROR, f"the harness could not reach a verdict ({type(error).__name__} in {when}); the lab is healthy")
    if levels and all(level != "MUST" for level in levels):
        return Judgement(Verdict.WARNING, "a SHOULD of the requirement is not met")
    return Judgement(Verdict.FAIL, "")
