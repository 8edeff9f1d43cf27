"""A test's verdict from what happened in it (docs/verdicts.md): who is at fault, the
driver (FAIL) or the lab and harness (ERROR), decided by the exception and the lab's diagnosis."""

from __future__ import annotations

from dataclasses import dataclass

from basics.errors import HarnessError, LabBroken
from basics.junit_properties import Verdict
from drivers_under_test.deploy import DeployFailed
from suites.framework.pods import ObservationFailed
from suites.framework.verdicts import Blocked, DriverFailure
from suites.framework.waits import TooSlowToJudge, WaitTimeout


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    why: str  # for the report: what decided the verdict


def classify(when: str, error: BaseException, lab_problems: list[str], levels: list[str]) -> Judgement:
    """The verdict of a test that raised `error` in phase `when` (setup, call, teardown), given
    what is wrong with its lab (empty: healthy) and the levels of its requirements. The first
    rule that holds decides."""
    if isinstance(error, Blocked):
        return Judgement(Verdict.BLOCKED, str(error))
    if lab_problems:
        return Judgement(Verdict.ERROR, "the lab is unhealthy, so no verdict on the driver:\n" + "\n".join(lab_problems))
    if isinstance(error, LabBroken):
        return Judgement(Verdict.ERROR, "the lab broke under the test")
    if isinstance(error, TooSlowToJudge):  # before DriverFailure: the driver's wait ran out on a lab too slow
        return Judgement(Verdict.ERROR, str(error).splitlines()[0])
    # What the driver did (or did not do in time) against a requirement, also inside a fixture's
    # scenario; a bare assert in a teardown is the harness's cleanup, not a requirement.
    if isinstance(error, (DriverFailure, DeployFailed)) or (isinstance(error, AssertionError) and when != "teardown"):
        if levels and all(level != "MUST" for level in levels):
            return Judgement(Verdict.WARNING, "a SHOULD of the requirement is not met")
        return Judgement(Verdict.FAIL, "")
    if isinstance(error, HarnessError):
        return Judgement(Verdict.ERROR, f"the harness could not set up what the check needs ({when}): {_first_line(error)}")
    if isinstance(error, ObservationFailed):
        return Judgement(Verdict.ERROR, f"the harness could not observe what the check judges ({when}): {_first_line(error)}")
    if isinstance(error, WaitTimeout):
        return Judgement(Verdict.ERROR, f"a wait of the lab or the harness ran out ({when}), not one on the driver: {_first_line(error)}")
    return Judgement(Verdict.ERROR, f"the harness could not reach a verdict ({type(error).__name__} in {when}); the lab is healthy")


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
