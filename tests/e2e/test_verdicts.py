"""The verdict rules end to end (requirements.md, Verdicts and Outcome; RP-04), each on a variant
of a reference driver made for it: a crash-looping driver is NOT CERTIFIED by DEP-01 within
minutes with its own error text as evidence, its other tests BLOCKED; a driver refusing to
prepare fails the scenario's requirement with the kubelet's event; a missing Ready condition (a
SHOULD) is CERTIFIED with a WARNING; containerd dying under a metadata check is an ERROR naming
containerd, never the driver's FAIL."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters import residue
from reports.certify import LAB_PREFIX

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def certify(out: Path, *args: str) -> tuple[int, str, dict, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dralab.cli", "certify", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=1200, cwd=REPO)
    output = done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return done.returncode, output, report, time.monotonic() - start


def requirement(report: dict, rid: str) -> dict:
    return next(r for r in report["requirements"] if r["id"] == rid)


def test_crash_looping_driver_is_not_certified_by_dep01_within_3_minutes(tmp_path: Path) -> None:
    rc, output, report, seconds = certify(tmp_path / "out", "--driver", "gpu", "--variant", "crash-at-start",
                                          "--only", "MD-01")
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
    rc, output, report, _ = certify(tmp_path / "out", "--driver", "gpu", "--variant", "no-ready-condition",
                                    "--only", "ST-01,ST-07")
    assert rc == 0, output[-4000:]
    assert report["summary"]["outcome"] == "CERTIFIED" and report["summary"]["warnings"] == ["ST-07"]
    assert requirement(report, "ST-07")["verdict"] == "WARNING" and requirement(report, "ST-01")["verdict"] == "PASS"
    assert "WARNING (SHOULD not met) ST-07" in output.strip().splitlines()[-1]


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
    done = subprocess.run([sys.executable, "-m", "pytest", "suites/deployment", "suites/device_metadata/test_device_metadata.py",
                           "--driver", "gpu", "--requirement-ids", "MD-01", "-p", "containerd_dies", "--lab-prefix", "kill",
                           f"--junitxml={junit}", f"--results-dir={tmp_path}", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=900, cwd=REPO,
                          env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    from reports.report import read_junit

    verdicts = {t.requirements[0]: t for t in read_junit(junit)}
    assert verdicts["DEP-01"].verdict == "PASS", done.stdout[-3000:]
    md01 = verdicts["MD-01"]
    assert md01.verdict == "ERROR", (md01.verdict, md01.message[:2000])
    assert "containerd" in md01.diagnosis and "is down" in md01.diagnosis, md01.diagnosis
    assert residue.find("kill") == []
