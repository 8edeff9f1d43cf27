"""The verdict rules end to end (docs/verdicts.md; RP-04), each on a variant
of a reference driver made for it: a crash-looping driver is NOT CERTIFIED by DEP-01 within
minutes with its own error text as evidence, its other tests BLOCKED; a driver refusing to
prepare fails the scenario's requirement with the kubelet's event; a missing Ready condition (a
SHOULD) is CERTIFIED with a WARNING; containerd dying under a metadata check is an ERROR naming
containerd, never the driver's FAIL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters import residue
from reports.certify import LAB_PREFIX, lab_names

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def certify(out: Path, *args: str) -> tuple[int, str, dict, float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dralab.cli", "certify", "--out", str(out), *args], capture_output=True, text=True, timeout=1200, cwd=REPO
    )
    output = done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return done.returncode, output, report, time.monotonic() - start


def requirement(report: dict, rid: str) -> dict:
    return next(r for r in report["requirements"] if r["id"] == rid)


def test_crash_looping_driver_is_not_certified_by_dep01_within_3_minutes(tmp_path: Path) -> None:
    rc, output, report, seconds = certify(tmp_path / "out", "--driver", "gpu", "--variant", "crash-at-start", "--only", "MD-01")
    assert rc == 1, output[-4000:]
    assert output.strip().splitlines()[-1] == "NOT CERTIFIED: FAIL DEP-01", output[-2000:]
    assert seconds < 180, f"the verdict took {seconds:.0f}s"
    dep = requirement(report, "DEP-01")
    assert dep["verdict"] == "FAIL" and dep["section"] == "driver"
    # The container's own words, from its previous run or its termination message.
    (test,) = dep["tests"]
    assert "cannot open the device control node" in test["message"].splitlines()[0], test["message"][:3000]
    md01 = requirement(report, "MD-01")
    assert md01["verdict"] == "BLOCKED" and all(t["blocked_by"] == "DEP-01" for t in md01["tests"])
    assert residue.find(LAB_PREFIX) == []


def test_driver_refusing_to_prepare_fails_the_requirement_with_the_kubelet_event(tmp_path: Path) -> None:
    rc, output, report, _ = certify(tmp_path / "out", "--driver", "gpu", "--variant", "refuse-prepare", "--only", "MD-01")
    assert rc == 1, output[-4000:]
    assert requirement(report, "DEP-01")["verdict"] == "PASS"
    md01 = requirement(report, "MD-01")
    assert md01["verdict"] == "FAIL", json.dumps(md01)[:3000]
    (test,) = md01["tests"]
    said = test["message"] + test["traceback"]  # JUnit's message attribute is a shortened first line
    assert "FailedPrepareDynamicResources" in said and "device configuration rejected" in said, said[:3000]
    assert any("log of dralab-gpu/" in e for e in test["evidence"]), "the driver's logs are not in the evidence"


def test_missing_ready_condition_is_certified_with_a_warning(tmp_path: Path) -> None:
    rc, output, report, _ = certify(tmp_path / "out", "--driver", "gpu", "--variant", "no-ready-condition", "--only", "ST-01,ST-07")
    assert rc == 0, output[-4000:]
    assert report["summary"]["outcome"] == "CERTIFIED" and report["summary"]["warnings"] == ["ST-07"]
    assert requirement(report, "ST-07")["verdict"] == "WARNING" and requirement(report, "ST-01")["verdict"] == "PASS"
    assert "WARNING (SHOULD not met) ST-07" in output.strip().splitlines()[-1]


def test_a_status_apply_the_cluster_refuses_blocks_the_drivers_status_checks_by_st09(tmp_path: Path) -> None:
    """Claims sent as the Python client sends them (as dralab did before ST-09): the cluster refuses
    the status applies of the net driver's status-apply variant for status.allocation, which the
    apply did not send, and its ST checks are BLOCKED by ST-09 with the audit log's evidence."""
    from clusters.api_client import PYTHON_CLIENT_ENV

    out = tmp_path / "out"
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dralab.cli",
            "certify",
            "--out",
            str(out),
            "--driver",
            "net",
            "--variant",
            "status-apply",
            "--only",
            "ST-01,ST-02,ST-09",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
        env={**os.environ, PYTHON_CLIENT_ENV: "1"},
    )
    output, report = done.stdout + done.stderr, json.loads((out / "report.json").read_text())
    assert done.returncode == 3, f"exit {done.returncode} after {time.monotonic() - start:.0f}s:\n{output[-4000:]}"
    for rid in ("ST-01", "ST-02"):
        blocked = requirement(report, rid)
        assert blocked["verdict"] == "BLOCKED", blocked
        assert all(t["verdict"] in ("BLOCKED", "PASS", "SKIP") for t in blocked["tests"]), blocked
        message = next(t["message"] for t in blocked["tests"] if t["verdict"] == "BLOCKED")
        assert "blocked by ST-09" in message and "status.allocation" in message and "audit" in message, message
    st09 = requirement(report, "ST-09")
    assert st09["verdict"] == "FAIL" and "field cannot be modified once set" in json.dumps(st09), st09
    assert any(d["topic"] == "status.devices by server-side apply" for d in report["spec_drift"]), report["spec_drift"]
    assert "INCOMPLETE" in output.strip().splitlines()[-1]


KILLER = '''
import os
import signal

import pytest


@pytest.fixture(scope="module", autouse=True)
def containerd_dies(request):
    """Before the metadata module's scenario starts, containerd dies (SIGKILL) on every node."""
    if request.module.__name__.endswith("test_device_metadata"):
        lab = request.getfixturevalue("lab")
        for node in lab.nodes:
            os.kill(lab.local_node(node.name).component("containerd").pid, signal.SIGKILL)
'''


def test_containerd_dying_under_a_metadata_check_is_an_error_naming_containerd(tmp_path: Path) -> None:
    (tmp_path / "containerd_dies.py").write_text(KILLER)
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites/deployment",
            "suites/device_metadata/test_device_metadata.py",
            "--driver",
            "gpu",
            "--requirement-ids",
            "MD-01",
            "-p",
            "containerd_dies",
            "--lab-prefix",
            "kill",
            f"--junitxml={junit}",
            f"--results-dir={tmp_path}",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
    )
    from reports.report import read_junit

    verdicts = {t.requirements[0]: t for t in read_junit(junit)}
    assert verdicts["DEP-01"].verdict == "PASS", done.stdout[-3000:]
    md01 = verdicts["MD-01"]
    assert md01.verdict == "ERROR", (md01.verdict, md01.message[:2000])
    assert "containerd" in md01.diagnosis and "is down" in md01.diagnosis, md01.diagnosis
    assert residue.find("kill") == []


# Kills one lab component of node-1 (DRALAB_KILL: containerd or kubelet) as the fifth test of the
# run starts its body: a lab fault in the middle of a certification, after verdicts were reached.
MID_RUN_KILLER = """
import os
import signal

import pytest

started = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    started.append(item.nodeid)
    if len(started) == 5:
        lab = item._request.getfixturevalue("lab")
        os.kill(lab.local_node("node-1").component(os.environ["DRALAB_KILL"]).pid, signal.SIGKILL)
"""


@pytest.mark.parametrize("component", ["containerd", "kubelet"])
def test_a_component_killed_mid_certification_makes_it_incomplete_never_not_certified(tmp_path: Path, component: str) -> None:
    """A lab fault decides no certification: every check it touched is an ERROR naming the dead
    component (with the lab's diagnosis), none a FAIL; the outcome is INCOMPLETE, exit 3."""
    (tmp_path / "mid_run_killer.py").write_text(MID_RUN_KILLER)
    env = {"PYTEST_PLUGINS": "mid_run_killer", "PYTHONPATH": str(tmp_path), "DRALAB_KILL": component}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dralab.cli", "certify", "--driver", "gpu", "--only", "MD", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=REPO,
        env={**__import__("os").environ, **env},
    )
    output = done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    verdicts = {r["id"]: r["verdict"] for r in report["requirements"] if r["section"] == "driver"}
    print(f"{component} killed: exit {done.returncode} in {time.monotonic() - start:.0f}s; {verdicts}")
    assert done.returncode == 3 and report["summary"]["outcome"] == "INCOMPLETE", output[-4000:]
    assert [rid for rid, v in verdicts.items() if v == "FAIL"] == [], output[-4000:]
    errors = [t for r in report["requirements"] for t in r["tests"] if t["verdict"] == "ERROR"]
    assert errors and all(f"node-1-{component}" in t["diagnosis"] for t in errors), [t["diagnosis"][:300] for t in errors]
    assert [r for lab in lab_names(LAB_PREFIX) for r in residue.find(lab)] == []
