"""How a check says what kind of outcome it reached, beyond pass and assert (requirements.md,
Verdicts): the driver refused what a scenario needs (FAIL even inside a fixture), a test cannot
run because an earlier requirement FAILed (BLOCKED), a precondition the cluster does not meet
(SKIP with the remedy). A SHOULD that is not met is `Evidence.warn` (WARNING)."""

from __future__ import annotations

from typing import NoReturn

import pytest


class DriverFailure(AssertionError):
    """The driver under test did something contrary to a requirement where a scenario was being
    set up (refused to prepare a claim, never published its devices): a FAIL of the requirement
    the scenario serves, wherever it is raised."""


class Blocked(Exception):
    """The test cannot run: requirement `by` FAILed earlier for this driver (it never came up)."""

    def __init__(self, by: str, reason: str) -> None:
        super().__init__(f"blocked by {by}: {reason}")
        self.by = by


def require(condition: object, missing: str, remedy: str) -> None:
    """A precondition of the check: when the cluster or profile does not provide it, the check
    does not apply (SKIP) and says what is missing and how to provide it."""
    if not condition:
        skip(missing, remedy)


def skip(missing: str, remedy: str) -> NoReturn:
    pytest.skip(f"{missing}; {remedy}")
