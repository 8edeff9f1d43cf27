"""LAB-07: a failing test gets what the components logged while it ran, and only that."""

import re

INNER_TEST = '''
from pathlib import Path

import pytest

from clusters.providers import Lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    (logs / "node-1").mkdir()
    (logs / "node-1" / "node-1-kubelet.log").write_text("logged before the test\\n")
    (logs / "etcd.log").write_text("etcd was quiet\\n")
    return Lab(provider="fake", kubeconfig=Path("/dev/null"), kubectl=Path("/bin/true"), log_dir=logs, nodes=[])


def test_fails(lab):
    with open(lab.log_dir / "node-1" / "node-1-kubelet.log", "a") as log:
        log.write("kubelet logged this during the test\\n")
    assert False


def test_passes(lab):
    with open(lab.log_dir / "etcd.log", "a") as log:
        log.write("etcd logged this during a passing test\\n")
'''


def test_failing_test_report_carries_component_log_lines_written_during_it(pytester) -> None:
    pytester.makepyfile(INNER_TEST)
    result = pytester.runpytest("-p", "dralab.pytest_plugin")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert re.search(r"component log node-1/node-1-kubelet.log \(lab \S+\) during the test", out)
    assert "kubelet logged this during the test" in out
    assert "logged before the test" not in out
    assert "etcd logged this during a passing test" not in out


def test_junit_carries_requirements_observations_evidence_and_logs_for_the_report(pytester) -> None:
    """RP-01: what the certification report reads comes through the JUnit XML."""
    from reports.report import read_junit

    pytester.makepyfile(INNER_TEST.replace("def test_fails(lab):", '''@pytest.mark.requirement("MD-01")
def test_fails(lab, evidence):
    evidence.observe("seen", "one file")
    evidence.add("listing", "a.json")'''))
    pytester.runpytest("-p", "dralab.pytest_plugin", "--junitxml=junit.xml")
    (failed,) = [t for t in read_junit(pytester.path / "junit.xml") if t.verdict == "FAIL"]
    assert failed.requirements == ["MD-01"] and failed.observed == ["seen: one file"]
    assert failed.evidence[:2] == ["evidence: seen\none file", "evidence: listing\na.json"]
    assert any("kubelet logged this during the test" in e for e in failed.evidence)


def test_a_lab_that_breaks_under_a_test_is_an_error_not_a_fail(pytester) -> None:
    """RP-04: a component dying during a check says nothing about the driver; certify exits 3."""
    from reports.report import read_junit

    pytester.makepyfile(INNER_TEST.replace("    assert False", '''    from clusters.errors import LabBroken

    raise LabBroken("lab component node-1-kubelet (pid 1) has died")'''))
    result = pytester.runpytest_subprocess("-p", "dralab.pytest_plugin", "--junitxml=junit.xml", "--progress")
    progress = result.stdout.str() + result.stderr.str()  # the lines go where dralab's progress goes
    assert re.search(r"\] ERROR\s+test_a_lab_that_breaks_under_a_test_is_an_error_not_a_fail.py::test_fails",
                     progress), progress
    verdicts = {t.name.split("::")[-1]: t.verdict for t in read_junit(pytester.path / "junit.xml")}
    assert verdicts == {"test_fails": "ERROR", "test_passes": "PASS"}
