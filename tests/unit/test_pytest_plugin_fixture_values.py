"""What the plugin knows of a test's fixtures before and during its setup, when its arguments are not
filled yet (dralab/pytest_plugin/fixture_values.py): an inner run records it before each test's
setup and at a failed setup's report."""

from __future__ import annotations

import json

import pytest

RECORDER = """
import json

import pytest

from dralab.pytest_plugin import fixture_values

SEEN = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    SEEN[item.name] = {"before setup": fixture_values.of(item)}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "setup" and call.excinfo is not None:
        SEEN[item.name]["failed setup"] = fixture_values.of(item)
        SEEN[item.name]["raised by"] = fixture_values.raised(item, call.excinfo.value)
    return report


def pytest_unconfigure(config):
    with open("seen.json", "w") as f:
        json.dump(SEEN, f)
"""

SHARED = """

@pytest.fixture(scope="session")
def shared():
    return "the session's"
"""

SCENARIO = """
import pytest


@pytest.fixture(scope="module")
def driver_under_test(shared):
    return "the module's driver"


@pytest.fixture(scope="module")
def scenario(driver_under_test):
    raise RuntimeError("the driver refused")


@pytest.fixture
def per_test(scenario):
    return "never"


def test_first(shared):
    pass


def test_scenario(per_test):
    pass


def test_scenario_again(scenario):
    pass
"""


def _seen(pytester: pytest.Pytester, conftest: str = RECORDER + SHARED) -> dict[str, dict]:
    pytester.makeconftest(conftest)
    pytester.runpytest()
    return json.loads((pytester.path / "seen.json").read_text())


def test_before_its_setup_a_test_sees_the_fixtures_up_that_it_shares(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a_scenario=SCENARIO, test_b_other="def test_later(shared):\n    pass\n")
    seen = _seen(pytester)
    assert seen["test_first"]["before setup"] == {}
    assert seen["test_scenario"]["before setup"] == {"shared": "the session's"}
    assert seen["test_scenario_again"]["before setup"] == {"shared": "the session's", "driver_under_test": "the module's driver"}
    # Another module's test: the first module's fixtures are not its own.
    assert seen["test_later"]["before setup"] == {"shared": "the session's"}


def test_a_failed_setup_names_the_fixture_that_raised_and_keeps_those_set_up(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SCENARIO)
    seen = _seen(pytester)
    failed = seen["test_scenario"]
    assert failed["failed setup"] == {"shared": "the session's", "driver_under_test": "the module's driver"}
    # per_test raised the error too, as it needs scenario: scenario raised it.
    assert failed["raised by"] == ["scenario", "module"]
    # pytest raises the cached error again for the module's next test: the same fixture.
    assert seen["test_scenario_again"]["raised by"] == ["scenario", "module"]


def test_a_definition_closer_to_the_test_overrides_one_farther(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="def test_a(thing):\n    pass\n",
        test_b="""
import pytest


@pytest.fixture(scope="session")
def thing():
    return "test_b's"


def test_b1(thing):
    pass


def test_b2(thing):
    pass
""",
        test_c="def test_c(thing):\n    pass\n",
    )
    seen = _seen(pytester, RECORDER + '@pytest.fixture(scope="session")\ndef thing():\n    return "the conftest\'s"\n')
    assert seen["test_b2"]["before setup"] == {"thing": "test_b's"}  # both definitions are up
    assert seen["test_c"]["before setup"] == {"thing": "the conftest's"}
