"""Which tests a run takes, in what order and in which shard, and which SKIP as not applicable
(dralab/pytest_plugin/selection.py), on inner runs that collect marked tests."""

from __future__ import annotations

import pytest

TESTS = """
import pytest


@pytest.mark.over_the_run
@pytest.mark.requirement("KP-03")
def test_over_the_run():
    pass


@pytest.mark.requirement("MD-01")
def test_md():
    pass


def test_unmarked():
    pass


@pytest.mark.requirement("DEP-01")
def test_dep():
    pass


@pytest.mark.requirement("MD-20")
def test_md_again():
    pass
"""


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", *args)
    return [line.split("::")[-1] for line in result.outlines if "::" in line]


def test_deployment_first_the_checks_over_the_run_last_the_rest_as_collected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    assert _collected(pytester) == ["test_dep", "test_md", "test_unmarked", "test_md_again", "test_over_the_run"]


@pytest.mark.parametrize(
    "ids,kept",
    [
        ("md-01", ["test_dep", "test_md"]),  # an ID, in any case; DEP-01 always comes along
        ("MD", ["test_dep", "test_md", "test_md_again"]),  # a suite's prefix
        ("KP-03, MD-20", ["test_dep", "test_md_again", "test_over_the_run"]),
    ],
)
def test_requirement_ids_keep_their_tests_and_deployments(pytester: pytest.Pytester, ids: str, kept: list[str]) -> None:
    pytester.makepyfile(TESTS)
    assert _collected(pytester, "--requirement-ids", ids) == kept


SHARDED = """
import pytest


@pytest.mark.parametrize("driver", ["gpu", "net"])
def test_a(driver):
    pass


@pytest.mark.parametrize("driver", ["gpu", "net"])
def test_b(driver):
    pass


def test_cluster():
    pass
"""


def test_shards_split_the_run_keeping_a_drivers_tests_together(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHARDED)
    first, second = _collected(pytester, "--shard", "1/2"), _collected(pytester, "--shard", "2/2")
    assert sorted(first + second) == sorted(_collected(pytester))
    assert {first[0].split("[")[-1], second[0].split("[")[-1]} == {"gpu]", "net]"}
    for shard in (first, second):
        drivers = {t.split("[")[-1] for t in shard if "[" in t}
        assert len(drivers) == 1 and len([t for t in shard if "[" in t]) == 2, shard


def test_a_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHARDED)
    result = pytester.runpytest("--shard", "3/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--shard '3/2': give K/N*"])


def test_a_benchmark_beside_other_runs_skips(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest


@pytest.mark.benchmark
def test_figures():
    pass
"""
    )
    pytester.runpytest("--shard", "1/2").assert_outcomes(skipped=1)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_test_that_does_not_apply_skips_even_on_a_lab_that_had_a_fault(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It would not have run on a healthy lab either: its SKIP says why, no ERROR of the lab."""
    from dralab.pytest_plugin import lab_health, labs

    monkeypatch.setattr(labs, "known_gates", lambda config: set())  # components without DRADerivedAttributes
    monkeypatch.setattr(lab_health, "diagnose", lambda lab: [])
    pytester.makepyfile(
        """
from pathlib import Path

import pytest

from basics.errors import LabBroken
from clusters.provider_registry import provider
from clusters.providers import Lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    return Lab(provider=provider("kubeconfig"), kubeconfig=Path("/dev/null"), kubectl=Path("/bin/true"), log_dir=logs, nodes=[])


def test_breaks(lab):
    raise LabBroken("lab component etcd (pid 1) has died")


@pytest.mark.e2e
@pytest.mark.requirement("DA-04")
def test_needs_derived_attributes(lab):
    pass


def test_on_the_broken_lab(lab):
    pass
"""
    )
    result = pytester.runpytest("--kubernetes-version", "v1.36.3", "-rsE")
    result.assert_outcomes(failed=1, skipped=1, errors=1)
    result.stdout.fnmatch_lines(["SKIPPED *DA-04 applies from Kubernetes v1.37*", "ERROR *::test_on_the_broken_lab*"])
