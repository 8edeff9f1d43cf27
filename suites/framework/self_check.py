"""What every suite's self-check (MUT-01) does: deploy a reference driver as a broken variant
and run checks that must FAIL, with evidence, rather than pass or break the lab."""

from __future__ import annotations

from typing import Callable

import pytest

from suites.framework.evidence import Evidence
from suites.framework.drivers import DriverUnderTest


def broken_reference_driver(request: pytest.FixtureRequest, deploy_driver, profile: str,
                            variant: str) -> DriverUnderTest:
    """The reference driver `profile` deployed as `variant`; SKIP when --driver names other drivers."""
    if request.config.getoption("--driver"):
        pytest.skip("the self-check runs against dralab's reference drivers only")
    return DriverUnderTest(deploy_driver(profile, variant), variant)


def must_fail(name: str, check: Callable[[Evidence], object]) -> str:
    """Run a check that must FAIL with an AssertionError and leave evidence; its first message line."""
    evidence = Evidence()
    with pytest.raises(AssertionError) as failed:
        check(evidence)
    assert evidence.items, f"{name} failed without evidence"
    return str(failed.value).splitlines()[0]
