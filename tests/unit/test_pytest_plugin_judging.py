"""The plugin's bookkeeping of verdicts (dralab/pytest_plugin/judging.py) beside tests/unit/test_verdicts.py's
rules: a scenario no other test shares, and the properties a report carries to pytest-xdist's controller."""

from __future__ import annotations

import pytest

from basics.junit_properties import VERDICT
from reports.report import read_junit

OWN_SCENARIO = """
import pytest

from suites.framework.verdicts import DriverFailure


@pytest.fixture
def scenario():
    raise DriverFailure("pod p cannot start: the DRA driver refused to prepare its claim")


@pytest.mark.requirement("ST-01")
def test_must(scenario):
    pass


@pytest.mark.requirement("ST-07")
def test_should(scenario):
    pass


@pytest.mark.requirement("ST-04")
def test_cluster_check(scenario):
    pass
"""


def test_a_scenario_of_each_tests_own_fails_a_driver_must_and_blocks_the_others(pytester: pytest.Pytester) -> None:
    """A function-scoped fixture fails for each test apart: no MUST shares it to take the FAIL."""
    pytester.makepyfile(OWN_SCENARIO)
    pytester.runpytest("--junitxml=junit.xml")
    found = {t.name.split("::")[-1]: t for t in read_junit(pytester.path / "junit.xml")}
    assert found["test_must"].verdict == "FAIL" and "refused to prepare" in found["test_must"].message
    for name in ("test_should", "test_cluster_check"):
        assert (found[name].verdict, found[name].blocked_by) == ("BLOCKED", "the driver's scenario"), found[name]
        assert "the driver failed fixture scenario" in found[name].message


def test_the_verdicts_in_a_reports_properties_are_plain_strings(pytester: pytest.Pytester) -> None:
    """pytest-xdist sends each report to its controller, and cannot send an enum."""
    pytester.makepyfile(OWN_SCENARIO)
    reports = pytester.inline_run().getreports("pytest_runtest_logreport")
    verdicts = [v for r in reports if r.when == "teardown" for k, v in r.user_properties if k == VERDICT]  # each test's last
    assert sorted(verdicts) == ["BLOCKED", "BLOCKED", "FAIL"] and {type(v) for v in verdicts} == {str}
