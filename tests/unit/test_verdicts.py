"""The verdict rules (docs/verdicts.md) as the plugin applies them, through the JUnit XML
the certification report reads; and LAB-07: a failing test gets what the components logged
while it ran, and only that. The lab is a fake whose health the inner tests set."""

import re

import pytest

from reports.report import read_junit

INNER_TEST = """
from pathlib import Path

import pytest

from clusters.provider_registry import provider
from clusters.providers import Lab
from dralab.pytest_plugin import lab_health

PROBLEMS = []  # what the lab's diagnosis finds: empty, healthy
lab_health.diagnose = lambda lab: PROBLEMS


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    (logs / "node-1").mkdir()
    (logs / "node-1" / "node-1-kubelet.log").write_text("logged before the test\\n")
    (logs / "etcd.log").write_text("etcd was quiet\\n")
    return Lab(provider=provider("kubeconfig"), kubeconfig=Path("/dev/null"), kubectl=Path("/bin/true"), log_dir=logs, nodes=[])


def test_fails(lab):
    with open(lab.log_dir / "node-1" / "node-1-kubelet.log", "a") as log:
        log.write("kubelet logged this during the test\\n")
    assert False


def test_passes(lab):
    with open(lab.log_dir / "etcd.log", "a") as log:
        log.write("etcd logged this during a passing test\\n")
"""


@pytest.fixture(autouse=True)
def _undo_the_inner_runs_patches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner runs share this process (runpytest) and patch the plugin and Lab as they import:
    put back what they patch, or later tests of the same process (make test's suites) would use a
    fake diagnosis and a Lab without an API client."""
    from clusters.providers import Lab
    from dralab.pytest_plugin import judging, lab_health

    for target, name in ((lab_health, "diagnose"), (judging.driver_evidence, "of_driver"), (Lab, "api")):
        monkeypatch.setattr(target, name, getattr(target, name))


def _verdicts(pytester, body: str, *args: str) -> dict[str, object]:
    pytester.makepyfile(INNER_TEST + body)
    pytester.runpytest("--junitxml=junit.xml", *args)
    return {t.name.split("::")[-1]: t for t in read_junit(pytester.path / "junit.xml")}


def test_failing_test_report_carries_component_log_lines_written_during_it(pytester) -> None:
    pytester.makepyfile(INNER_TEST)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert re.search(r"component log node-1/node-1-kubelet.log \(lab \S+\) during the test", out)
    assert "kubelet logged this during the test" in out
    assert "logged before the test" not in out
    assert "etcd logged this during a passing test" not in out


def test_junit_carries_requirements_observations_evidence_and_logs_for_the_report(pytester) -> None:
    """RP-01: what the certification report reads comes through the JUnit XML."""
    pytester.makepyfile(
        INNER_TEST.replace(
            "def test_fails(lab):",
            """@pytest.mark.requirement("MD-01")
def test_fails(lab, evidence):
    evidence.observe("seen", "one file")
    evidence.add("listing", "a.json")""",
        )
    )
    pytester.runpytest("--junitxml=junit.xml")
    (failed,) = [t for t in read_junit(pytester.path / "junit.xml") if t.verdict == "FAIL"]
    assert failed.requirements == ["MD-01"] and failed.observed == ["seen: one file"]
    assert failed.evidence[:2] == ["evidence: seen\none file", "evidence: listing\na.json"]
    assert any("kubelet logged this during the test" in e for e in failed.evidence)


def test_a_lab_that_breaks_under_a_test_is_an_error_not_a_fail(pytester) -> None:
    """A component dying during a check says nothing about the driver."""
    pytester.makepyfile(
        INNER_TEST.replace(
            "    assert False",
            """    from basics.errors import LabBroken

    raise LabBroken("lab component node-1-kubelet (pid 1) has died")""",
        )
    )
    result = pytester.runpytest_subprocess("--junitxml=junit.xml", "--progress")
    progress = result.stdout.str() + result.stderr.str()  # the lines go where dralab's progress goes
    assert re.search(r"\] ERROR\s+test_a_lab_that_breaks_under_a_test_is_an_error_not_a_fail.py::test_fails", progress), progress
    results = {t.name.split("::")[-1]: t for t in read_junit(pytester.path / "junit.xml")}
    assert {name: t.verdict for name, t in results.items()} == {"test_fails": "ERROR", "test_passes": "ERROR"}
    # A check on the lab after its fault does not run: it ends at once, naming the fault.
    assert "had a fault earlier in the run" in results["test_passes"].message
    assert "node-1-kubelet" in results["test_passes"].message


def test_a_wait_that_times_out_on_an_unhealthy_lab_is_an_error_with_the_diagnosis(pytester) -> None:
    found = _verdicts(
        pytester,
        """

def test_waits(lab):
    from suites.framework.waits import wait_for

    PROBLEMS.append("lab component containerd-node-1 (pid 7) is down")
    wait_for("pod p to be Running", lambda: None, timeout=0.1)
""",
    )
    assert found["test_waits"].verdict == "ERROR"
    assert "containerd-node-1" in found["test_waits"].diagnosis


def test_the_drivers_obligation_timing_out_on_a_healthy_lab_is_a_fail_naming_what_was_awaited(pytester) -> None:
    found = _verdicts(
        pytester,
        """

def test_waits(lab):
    from suites.framework.waits import driver_must

    driver_must("pod p to be Running", lambda: [], within=0.1)
""",
    )
    assert found["test_waits"].verdict == "FAIL"
    assert "pod p to be Running (the driver's obligation)" in found["test_waits"].message and "last seen: []" in found["test_waits"].message


def test_a_lab_or_harness_wait_timing_out_on_a_healthy_lab_is_an_error_naming_what_was_awaited(pytester) -> None:
    found = _verdicts(
        pytester,
        """

def test_waits(lab):
    from suites.framework.waits import wait_for

    wait_for("ServiceAccount default in namespace t-1", lambda: None, timeout=0.1)
""",
    )
    assert found["test_waits"].verdict == "ERROR"
    assert "ServiceAccount default in namespace t-1" in found["test_waits"].diagnosis


def test_a_harness_precondition_is_an_error_with_what_was_missing_not_a_fail(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.fixture
def probe(lab):
    from basics.errors import HarnessError

    raise HarnessError("nri-probe exited: no socket")


@pytest.mark.requirement("MD-01")
def test_needs_the_probe(probe):
    pass
""",
    )
    assert found["test_needs_the_probe"].verdict == "ERROR"
    assert "nri-probe exited" in found["test_needs_the_probe"].diagnosis


def test_a_driver_failing_inside_a_fixture_is_a_fail_not_a_bare_error(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.fixture
def scenario(lab):
    from suites.framework.verdicts import DriverFailure

    raise DriverFailure("pod p never started: kubelet: NodePrepareResources failed for claim c")


@pytest.mark.requirement("MD-01")
def test_uses_scenario(scenario):
    pass
""",
    )
    assert found["test_uses_scenario"].verdict == "FAIL"
    assert "NodePrepareResources failed" in found["test_uses_scenario"].message


def test_a_harness_bug_is_an_error_and_a_precondition_a_skip_with_the_remedy(pytester) -> None:
    found = _verdicts(
        pytester,
        """

def test_bug(lab):
    {}["missing"]


def test_precondition(lab):
    from suites.framework.verdicts import require

    require(False, "the lab has 1 slice-only node, the check needs 2", "start the lab with --slice-only-nodes 2")
""",
    )
    assert found["test_bug"].verdict == "ERROR" and "harness" in found["test_bug"].diagnosis
    assert found["test_precondition"].verdict == "SKIP"
    assert "--slice-only-nodes 2" in found["test_precondition"].message


def test_an_unmet_should_is_a_warning_never_a_fail(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.mark.requirement("ST-07")
def test_should_level(lab):
    assert False, "no Ready condition on gpu-0"


@pytest.mark.requirement("MD-02")
def test_should_part_of_a_must(lab, evidence):
    evidence.warn("the file holds v1alpha1 only; the cluster serves v1beta1")
""",
    )
    assert found["test_should_level"].verdict == "WARNING"
    assert "no Ready condition on gpu-0" in found["test_should_level"].message
    assert found["test_should_part_of_a_must"].verdict == "WARNING"
    assert "v1alpha1 only" in found["test_should_part_of_a_must"].message


def test_a_blocked_test_names_what_blocked_it(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.mark.requirement("MD-01")
def test_blocked(lab):
    from suites.framework.verdicts import Blocked

    raise Blocked("DEP-01", "driver profile gpu did not come up: CrashLoopBackOff")
""",
    )
    assert found["test_blocked"].verdict == "BLOCKED" and found["test_blocked"].blocked_by == "DEP-01"
    assert "CrashLoopBackOff" in found["test_blocked"].message


def _errors() -> dict[str, BaseException]:
    from basics.errors import HarnessError, LabBroken
    from drivers_under_test.deploy import DeployFailed
    from suites.framework.pods import ObservationFailed, PrepareRefused
    from suites.framework.verdicts import Blocked, DriverFailure
    from suites.framework.waits import DriverTimedOut, TooSlowToJudge, WaitTimeout

    return {
        "blocked": Blocked("DEP-01", "the driver never came up"),
        "lab broken": LabBroken("lab component node-1-kubelet (pid 7) has died"),
        "too slow": TooSlowToJudge("the lab was too slow to judge the driver by: 9.0x slower\ntimed out after 240s waiting for x"),
        "too slow, the driver's": TooSlowToJudge(
            "the lab was too slow to judge the driver by: 9.0x slower\nwaiting for x (the driver's obligation)"
        ),
        "driver failure": DriverFailure("the driver refused the claim"),
        "prepare refused": PrepareRefused("pod p cannot start: the DRA driver refused to prepare its claim"),
        "driver timed out": DriverTimedOut("timed out after 60s waiting for its slices (the driver's obligation)"),
        "deploy failed": DeployFailed("driver gpu: CrashLoopBackOff"),
        "assert": AssertionError("no CDI spec for the claim"),
        "harness": HarnessError("no pod of driver profile gpu on node-2 to restart"),
        "unobserved": ObservationFailed("claim ns/c (u) of running pod ns/p is not in node-1's kubelet DRA checkpoint"),
        "wait": WaitTimeout("timed out after 30s waiting for namespace t-1 gone"),
        "bug": KeyError("x"),
    }


# Every path of classify, in its order: (phase, error, the lab's problems, levels) -> verdict, and
# words the report shows for it.
@pytest.mark.parametrize(
    "when,error,problems,levels,verdict,why",
    [
        ("call", "blocked", ["kubelet down"], ["MUST"], "BLOCKED", "blocked by DEP-01"),
        ("call", "driver timed out", ["kubelet down"], ["MUST"], "ERROR", "the lab is unhealthy"),
        ("call", "assert", ["kubelet down"], ["MUST"], "ERROR", "kubelet down"),
        ("call", "lab broken", [], ["MUST"], "ERROR", "the lab broke"),
        ("call", "too slow", [], ["MUST"], "ERROR", "too slow to judge the driver by: 9.0x"),
        ("setup", "too slow, the driver's", [], ["MUST"], "ERROR", "too slow to judge"),
        ("call", "driver failure", [], ["MUST"], "FAIL", ""),
        ("setup", "prepare refused", [], ["MUST"], "FAIL", ""),
        ("teardown", "driver failure", [], ["MUST"], "FAIL", ""),
        ("call", "driver timed out", [], ["MUST"], "FAIL", ""),
        ("teardown", "driver timed out", [], ["MUST"], "FAIL", ""),
        ("call", "driver timed out", [], ["SHOULD"], "WARNING", "SHOULD"),
        ("setup", "deploy failed", [], ["MUST"], "FAIL", ""),
        ("call", "assert", [], ["MUST"], "FAIL", ""),
        ("setup", "assert", [], ["MUST"], "FAIL", ""),
        ("call", "assert", [], ["SHOULD"], "WARNING", "SHOULD"),
        ("call", "assert", [], ["SHOULD", "MUST"], "FAIL", ""),
        ("teardown", "assert", [], ["MUST"], "ERROR", "AssertionError in teardown"),
        ("setup", "harness", [], ["MUST"], "ERROR", "could not set up what the check needs (setup): no pod of driver profile gpu"),
        ("call", "unobserved", [], ["MUST"], "ERROR", "could not observe what the check judges (call): claim ns/c"),
        ("call", "wait", [], ["MUST"], "ERROR", "a wait of the lab or the harness ran out (call), not one on the driver: timed out"),
        ("call", "bug", [], ["MUST"], "ERROR", "KeyError in call"),
    ],
)
def test_classify(when: str, error: str, problems: list[str], levels: list[str], verdict: str, why: str) -> None:
    from dralab.verdicts import classify

    judged = classify(when, _errors()[error], problems, levels)
    assert (judged.verdict, why in judged.why) == (verdict, True), judged


SCENARIO_FAILS = """

@pytest.fixture(scope="module")
def driver_under_test(lab):
    from types import SimpleNamespace

    from suites.framework.drivers import DriverUnderTest

    return DriverUnderTest(profile=SimpleNamespace(name="acme"))


@pytest.fixture(scope="module")
def observed(driver_under_test):
    from suites.framework.verdicts import DriverFailure

    raise DriverFailure("pod p cannot start: the DRA driver refused to prepare its claim")


@pytest.mark.requirement("ST-07")
def test_should_first(observed):
    {}["observed"]  # never runs: its scenario failed


@pytest.mark.requirement("ST-04")
def test_cluster_check(observed):
    pass


@pytest.mark.requirement("ST-01")
def test_must(observed):
    pass


@pytest.mark.requirement("ST-02")
def test_other_must(observed):
    pass
"""


def test_a_scenario_the_driver_failed_is_one_fail_blocking_every_other_check_of_it(pytester) -> None:
    """The first driver MUST sharing the failed module fixture FAILs; a SHOULD and a cluster check
    of the same fixture are BLOCKED by it (never run without their fixture, never FAIL for it),
    whichever runs first, and so is another MUST."""
    found = _verdicts(pytester, SCENARIO_FAILS)
    assert found["test_must"].verdict == "FAIL" and "refused to prepare" in found["test_must"].message
    for name in ("test_should_first", "test_cluster_check", "test_other_must"):
        assert (found[name].verdict, found[name].blocked_by) == ("BLOCKED", "ST-01"), (name, found[name])
        assert "refused to prepare" in found[name].message and "test_must" in found[name].message


def test_a_fail_in_setup_carries_the_driver_under_test_it_had_set_up(pytester) -> None:
    """The evidence of a FAIL in a fixture names the driver the failed fixture was built on, though
    the test itself got none of its arguments."""
    found = _verdicts(
        pytester,
        SCENARIO_FAILS
        + """

from dralab.pytest_plugin import judging
judging.driver_evidence.of_driver = lambda lab, api, profile: [("driver's own log", "prepare: device busy")]
Lab.api = lambda self: None
""",
    )
    assert any("driver's own log" in e and "device busy" in e for e in found["test_must"].evidence), found["test_must"].evidence


def test_a_lab_failure_inside_a_wait_is_an_error_not_a_timeout_blamed_on_the_driver(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.mark.requirement("MD-20")
def test_waits(lab):
    from basics.errors import LabBroken
    from suites.framework.waits import wait_for

    def read():
        raise LabBroken("lab component node-1-containerd (pid 7) is down")

    wait_for("the metadata file of pod-3", read, timeout=1)
""",
    )
    assert found["test_waits"].verdict == "ERROR", found["test_waits"]
    assert "node-1-containerd" in found["test_waits"].message


def test_a_failure_after_a_lab_fault_is_an_error_naming_the_fault_even_once_the_lab_is_back(pytester) -> None:
    """A component that died under one check (and was started again since) leaves the lab suspect:
    a later check failing on it is no FAIL of the driver."""
    found = _verdicts(
        pytester,
        """

@pytest.mark.requirement("MD-01")
def test_breaks(lab):
    from basics.errors import LabBroken

    raise LabBroken("lab component node-1-containerd (pid 7) is down")


@pytest.mark.requirement("MD-13")
def test_later(lab):
    assert False, "no CDI spec for the claim"
""",
    )
    assert [found[t].verdict for t in ("test_breaks", "test_later", "test_passes")] == ["ERROR", "ERROR", "PASS"]
    assert "fault earlier in the run" in found["test_later"].diagnosis
    assert "node-1-containerd" in found["test_later"].diagnosis and "test_breaks" in found["test_later"].diagnosis


def test_a_test_failing_in_its_call_and_its_teardown_is_one_result_with_its_recorded_verdict(pytester) -> None:
    """pytest writes such a test as two JUnit testcases, the plugin's properties on the second:
    the first once read as a bare FAIL (MD-18 FAILed with a LabBroken as its message)."""
    _verdicts(
        pytester,
        """

@pytest.fixture
def pods_gone(lab):
    from basics.errors import LabBroken

    yield
    raise LabBroken("stopped waiting for pods gone: lab component node-1-containerd (pid 7) is down")


@pytest.mark.requirement("MD-18")
def test_lab_breaks_in_call_and_teardown(pods_gone):
    from basics.errors import LabBroken

    raise LabBroken("stopped waiting for pod p to be Running: lab component node-1-containerd (pid 7) is down")
""",
    )
    (test,) = [t for t in read_junit(pytester.path / "junit.xml") if t.name.endswith("::test_lab_breaks_in_call_and_teardown")]
    assert test.verdict == "ERROR" and test.diagnosis, test
    assert "pod p to be Running" in test.message and "pods gone" in test.traceback
    assert test.requirements == ["MD-18"]


def test_a_driver_fail_stays_a_fail_when_its_teardown_errs_too(pytester) -> None:
    found = _verdicts(
        pytester,
        """

@pytest.fixture
def cleanup(lab):
    yield
    {}["harness bug"]


@pytest.mark.requirement("MD-14")
def test_fails_then_teardown_errs(cleanup):
    assert False, "the claim's metadata dir is still on the node"
""",
    )
    assert found["test_fails_then_teardown_errs"].verdict == "FAIL"
    assert "still on the node" in found["test_fails_then_teardown_errs"].message


def test_the_last_teardown_of_a_run_on_a_broken_lab_is_an_error(pytester) -> None:
    """The run's last teardown tears the session lab down before the verdict: the lab the test
    used still decides it (removing the driver from a lab whose containerd died is no FAIL)."""
    found = _verdicts(
        pytester,
        """

@pytest.fixture(scope="module")
def deployed(lab):
    from drivers_under_test.deploy import DeployFailed

    yield
    raise DeployFailed("kubectl delete --wait failed: timed out waiting for namespaces/dralab-gpu")


def test_first(deployed):
    pass


def test_breaks(lab):
    from basics.errors import LabBroken

    raise LabBroken("lab component node-1-containerd (pid 7) is down")


@pytest.mark.requirement("MD-20")
def test_last(deployed):
    pass
""",
    )
    assert found["test_last"].verdict == "ERROR", found["test_last"]
    assert "node-1-containerd" in found["test_last"].diagnosis
