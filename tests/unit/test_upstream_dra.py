"""`dralab qualify`'s pieces without a cluster: reading the suite's specs and labels, planning
gates and SKIPs, each spec's outcome from ginkgo's report, and the qualification report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reports import qualification
from suites.upstream_dra.plan import plan_foreign, plan_owned, upstream_runtime_config
from suites.upstream_dra.run import FAILED, PASSED, SKIPPED, Outcome, outcome_of
from suites.upstream_dra.specs import Spec, specs_of, spec_labels, spec_name

DEFAULTS = {"DynamicResourceAllocation": True, "DRADeviceTaints": True, "DRAResourcePoolStatus": False, "DRAOptionalNodeOperations": False}


def _report(texts: list[str], leaf: str, labels: list[list[str]], leaf_labels: list[str], **extra: object) -> dict:
    return {
        "ContainerHierarchyTexts": texts,
        "ContainerHierarchyLabels": labels,
        "LeafNodeText": leaf,
        "LeafNodeLabels": leaf_labels,
        "LeafNodeType": "It",
        "LeafNodeLocation": {"FileName": "k8s.io/kubernetes@v1.37.1/test/e2e/dra/dra.go", "LineNumber": 42},
        **extra,
    }


def _spec(name: str, *gates: str) -> Spec:
    return Spec(name, frozenset(f"FeatureGate:{g}" for g in gates), "dra.go:1")


def test_a_spec_is_named_and_labelled_by_its_containers_and_its_leaf(tmp_path: Path) -> None:
    report = _report(
        ["[sig-node] [DRA]", "kubelet [Feature:DynamicResourceAllocation]"],
        "runs a pod [Slow]",
        [["sig-node", "DRA"], ["FeatureGate:DynamicResourceAllocation"]],
        ["Slow"],
    )
    assert spec_name(report) == "[sig-node] [DRA] kubelet [Feature:DynamicResourceAllocation] runs a pod [Slow]"
    assert spec_labels(report) == {"sig-node", "DRA", "FeatureGate:DynamicResourceAllocation", "Slow"}
    path = tmp_path / "r.json"
    path.write_text(json.dumps([{"SpecReports": [report, {"LeafNodeType": "SynchronizedBeforeSuite"}]}]))
    assert [spec_name(s) for s in specs_of(path)] == [spec_name(report)]


def test_a_lab_dralab_starts_turns_on_exactly_the_gates_off_by_default_that_specs_need() -> None:
    specs = [
        _spec("a", "DynamicResourceAllocation"),
        _spec("b", "DynamicResourceAllocation", "DRAResourcePoolStatus"),
        _spec("c", "DRADeviceTaints"),
    ]
    plan = plan_owned(specs, DEFAULTS, {"resource.k8s.io/v1beta1": True})
    assert plan.feature_gates == {"DRAResourcePoolStatus": True}
    assert plan.runtime_config == {"resource.k8s.io/v1beta1": True} and not plan.skips and plan.skip_regex() is None


def test_on_a_kubeconfig_cluster_specs_needing_a_gate_off_by_default_skip_naming_it_unless_said_on() -> None:
    specs = [
        _spec("[DRA] a [x]", "DynamicResourceAllocation"),
        _spec("[DRA] b (pool status)", "DRAResourcePoolStatus"),
        _spec("[DRA] c", "DRAOptionalNodeOperations", "DRAResourcePoolStatus"),
    ]
    plan = plan_foreign(specs, DEFAULTS, set(), set())
    assert set(plan.skips) == {"[DRA] b (pool status)", "[DRA] c"} and not plan.feature_gates
    assert "DRAOptionalNodeOperations, DRAResourcePoolStatus" in plan.skips["[DRA] c"]
    assert "--gates-on" in plan.skips["[DRA] c"]
    # ginkgo's --skip matches each whole name, brackets and parentheses as text (RE2 reads these escapes alike).
    skip = re.compile(plan.skip_regex() or "")
    assert [s.name for s in specs if skip.search(s.name)] == ["[DRA] b (pool status)", "[DRA] c"]
    assert set(plan_foreign(specs, DEFAULTS, {"DRAResourcePoolStatus"}, set()).skips) == {"[DRA] c"}


def test_on_a_kubeconfig_cluster_specs_using_an_api_version_it_does_not_serve_skip_naming_it() -> None:
    specs = [
        _spec("[DRA] kubelet with v1beta1 API supports simple ResourceClaim"),
        _spec("[DRA] CRUD Tests resource.k8s.io/v1 ResourceClaim [Conformance]"),
        _spec("[DRA] metadata v1beta1 must mount device metadata for resource claims"),  # metadata's version
        _spec("[DRA] kubelet with v1beta2 API supports requests with alternatives"),
    ]
    plan = plan_foreign(specs, DEFAULTS, set(), {"resource.k8s.io/v1", "resource.k8s.io/v1beta2"})
    assert plan.skips == {
        "[DRA] kubelet with v1beta1 API supports simple ResourceClaim": (
            "uses resource.k8s.io/v1beta1, which this cluster's API server does not serve "
            "(kube-apiserver --runtime-config=resource.k8s.io/v1beta1=true serves it)"
        )
    }


def test_upstream_kind_configs_runtime_config_is_what_labs_serve(tmp_path: Path) -> None:
    kind = tmp_path / "test" / "e2e" / "dra" / "kind.yaml"
    kind.parent.mkdir(parents=True)
    kind.write_text('kind: Cluster\nruntimeConfig:\n  "resource.k8s.io/v1beta1": "true"\n  "x.k8s.io/v1": "false"\n')
    assert upstream_runtime_config(tmp_path) == {"resource.k8s.io/v1beta1": True, "x.k8s.io/v1": False}


@pytest.mark.parametrize("state", ["failed", "timedout", "panicked", "interrupted"])
def test_every_unsuccessful_ginkgo_state_is_a_fail_with_the_message_and_where(state: str) -> None:
    report = _report(
        ["[DRA]"],
        "prepares",
        [],
        [],
        State=state,
        RunTime=3e9,
        Failure={"Message": "Timed out after 60s: pod not running", "Location": {"FileName": "dra.go", "LineNumber": 77}},
    )
    outcome = outcome_of(report, {})
    assert outcome.state == FAILED and outcome.seconds == 3.0
    assert f"[{state}] Timed out after 60s: pod not running" in outcome.message and "dra.go:77" in outcome.message


def test_a_skip_says_why_its_own_reason_or_the_plans() -> None:
    own = _report(["[DRA]"], "a", [], [], State="skipped", Failure={"Message": "Only supported for 2 nodes"})
    assert outcome_of(own, {}).message == "Only supported for 2 nodes"
    planned = _report(["[DRA]"], "b", [], [], State="skipped")
    assert outcome_of(planned, {"[DRA] b": "needs feature gate(s) X"}).message == "needs feature gate(s) X"
    assert outcome_of(_report(["[DRA]"], "c", [], [], State="passed"), {}).state == PASSED


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / f"kubeconfig-{abs(hash(server))}"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return path


def test_the_qualification_counts_lists_and_is_recorded_for_certify(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path / "labs"))
    outcomes = [
        Outcome("[DRA] a", PASSED, 1.0, "dra.go:1"),
        Outcome("[DRA] b", SKIPPED, 0, "dra.go:2", "needs X"),
        Outcome("[DRA] c", FAILED, 9.0, "dra.go:3", "[failed] boom\nat dra.go:9"),
    ]
    q = qualification.build(
        outcomes,
        "kubeconfig",
        "v1.37.1",
        "https://10.99.1.1:6443 (v1.37.1)",
        61.4,
        {"gates": "x"},
        ["node-1-kubelet: exited 1"],
        owned=False,
    )
    assert q["outcome"] == qualification.NOT_QUALIFIED and q["counts"] == {PASSED: 1, FAILED: 1, SKIPPED: 1}
    assert [s["name"] for s in q["specs"]][0] == "[DRA] c"  # failures first
    _, page = qualification.write(q, tmp_path)
    text = page.read_text()
    assert "1 × needs X" in text and "[failed] boom" in text and "node-1-kubelet: exited 1" in text
    assert "not run" in qualification.recorded("kubeconfig", "v1.37.1")
    qualification.record(q, tmp_path)
    said = qualification.recorded("kubeconfig", "v1.37.1", str(kubeconfig(tmp_path, "https://10.99.1.1:6443")))
    assert said.startswith("NOT QUALIFIED: 3 upstream DRA specs, 1 passed, 1 failed, 1 skipped") and str(page) in said
    assert "not run" in qualification.recorded("kubeconfig", "v1.37.1", str(kubeconfig(tmp_path, "https://other:6443")))
    assert "not run" in qualification.recorded("local", "v1.37.1")
    empty = qualification.build([], "local", "v1.37.1", "s", 1, {}, [])
    assert empty["outcome"] == qualification.NOT_QUALIFIED  # nothing observed is not qualified
    # A lab dralab started that broke under the run makes it INCOMPLETE (exit 3), never NOT QUALIFIED;
    # a kubeconfig cluster's broken parts are its own.
    broke = qualification.build(outcomes, "local", "v1.37.1", "s", 1, {}, ["node-2 kubelet: exited 2"])
    assert broke["outcome"] == qualification.INCOMPLETE and qualification.EXIT_CODES[broke["outcome"]] == 3
    theirs = qualification.build(outcomes, "kubeconfig", "v1.37.1", "s", 1, {}, ["x"], owned=False)
    assert theirs["outcome"] == qualification.NOT_QUALIFIED


def test_progress_counts_finished_specs_from_ginkgos_succinct_output(tmp_path: Path) -> None:
    from suites.upstream_dra.run import progress

    log = tmp_path / "ginkgo.log"
    assert progress(log) == "0 specs ran (0 failed), 0 skipped"
    log.write_text(
        "Running in parallel across 3 processes\n••S•\n------------------------------\n"
        "• [FAILED] [12.3 seconds]\n[sig-node] [DRA] x\n------------------------------\n"
        "• [SLOW TEST] [301.2 seconds]\n[sig-node] [DRA] y\n•S\nSUCCESS! -- 3 Passed\n"
    )
    assert progress(log) == "6 specs ran (1 failed), 2 skipped"


def test_the_suites_images_are_made_under_the_names_its_own_code_asks_for(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from clusters import versions
    from clusters.provision import e2e_suite

    tools = SimpleNamespace(drivers_under_test=tmp_path / "dut")
    names = {
        "busybox": "registry.k8s.io/e2e-test-images/busybox:1.37.0-1",
        "hostpathplugin": "registry.k8s.io/sig-storage/hostpathplugin:v1.17.0",
        "sample-device-plugin": "registry.k8s.io/e2e-test-images/sample-device-plugin:1.7",
        "pause": versions.PAUSE_IMAGE,
    }
    specs = {s.ref: s for s in e2e_suite.image_specs(names, tmp_path / "suite", tools)}  # type: ignore[arg-type]  # a SimpleNamespace stands in for the Toolchain
    assert set(specs) == {names["busybox"], names["hostpathplugin"], names["sample-device-plugin"]}
    assert specs[names["hostpathplugin"]].files["/hostpathplugin"] == tmp_path / "dut" / "socket-proxy"
    assert "/bin/sh" in specs[names["hostpathplugin"]].symlinks  # the test driver's pods run sh
    assert specs[names["sample-device-plugin"]].entrypoint == ["/sampledeviceplugin", "-alsologtostderr"]
    # v1.35's suite asks for another pause than the lab's: it is made too.
    monkeypatch.setattr(e2e_suite, "pause_binary", lambda offline: tmp_path / "pause")
    older = {**names, "pause": "registry.k8s.io/pause:3.10.1"}
    refs = [s.ref for s in e2e_suite.image_specs(older, tmp_path / "suite", tools)]  # type: ignore[arg-type]  # a SimpleNamespace stands in for the Toolchain
    assert "registry.k8s.io/pause:3.10.1" in refs


def test_stopping_the_suite_ends_ginkgo_and_every_process_it_started_even_when_they_ignore_the_interrupt(tmp_path: Path) -> None:
    import os
    import subprocess
    import time

    from suites.upstream_dra.run import _stop

    pids = tmp_path / "pids"
    # A ginkgo that ignores SIGINT, with a child (an e2e.test process) that ignores it too.
    proc = subprocess.Popen(["sh", "-c", f"trap '' INT; sleep 300 & echo $! > {pids}; wait"], start_new_session=True)
    while not pids.exists() or not pids.read_text().strip():
        time.sleep(0.05)
    child = int(pids.read_text())
    started = time.monotonic()
    _stop(proc, grace_seconds=0.5)
    assert proc.returncode is not None and time.monotonic() - started < 10
    for _ in range(100):  # the child is reaped by init once killed
        if not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"process {child} outlived the stop")
