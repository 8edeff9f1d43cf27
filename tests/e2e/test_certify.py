"""`dralab certify` end to end against a broken variant (RP-01, RP-04, MUT-01): it exits 1, every
result format carries the failure, and the HTML report, as Chromium renders it, names the
failing requirement with its evidence."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from PIL import Image

from clusters import residue
from tests.e2e.test_lab_lifecycle import dralab
from tests.headless_chromium import dom, screenshot

pytestmark = pytest.mark.e2e

FAIL_BACKGROUND = (255, 221, 221)  # reports/page_style.py VERDICTS .FAIL


@pytest.mark.requirement("RP-01")
@pytest.mark.requirement("RP-04")
def test_certify_against_a_broken_variant_exits_1_and_the_html_names_the_failure(tmp_path) -> None:
    out = tmp_path / "out"
    done = dralab("certify", "--driver", "gpu", "--variant", "wrong-path", "--only", "MD-01", "--out", str(out), timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 1, f"certify of gpu/wrong-path exited {done.returncode}, want 1:\n{output[-4000:]}"
    assert re.search(r"\[\s*\d+:\d\d( \d/\d)?\] FAIL\s+MD-01", output), f"no progress line for the failing test:\n{output}"
    assert "FAIL MD-01 (driver):" in output and output.strip().splitlines()[-1] == "NOT CERTIFIED: FAIL MD-01", output[-4000:]

    report = json.loads((out / "report.json").read_text())
    md01 = next(r for r in report["requirements"] if r["id"] == "MD-01")
    failing = [t for t in md01["tests"] if t["verdict"] == "FAIL"]
    assert md01["verdict"] == "FAIL" and failing and all(t["evidence"] for t in failing), md01
    assert report["environment"]["driver variant"] == "wrong-path"
    assert 'failures="' in (out / "junit.xml").read_text()
    allure = [json.loads(p.read_text()) for p in (out / "allure-results").glob("*-result.json")]
    assert any(r["status"] == "failed" and {"name": "story", "value": "MD-01"} in r["labels"] for r in allure)
    assert (out / "allure-report" / "index.html").stat().st_size > 0

    page = dom(out / "report.html")
    row = re.search(r'<tr class="FAIL" id="MD-01">(.*?)</tr>', page, re.S)
    assert row, f"no FAIL row for MD-01 in the rendered report:\n{page[:3000]}"
    assert "<details open" in row.group(1) and "evidence: " in row.group(1), row.group(1)[:3000]
    assert failing[0]["message"].splitlines()[0][:60] in row.group(1).replace("&quot;", '"').replace("&#x27;", "'")
    png = screenshot(out / "report.html", tmp_path / "report.png")
    colours = Image.open(png).convert("RGB").getcolors(maxcolors=1 << 24)
    failing_area = sum(count for count, colour in colours if colour == FAIL_BACKGROUND)
    assert failing_area > 20_000, f"the screenshot {png} shows {failing_area} pixels in the FAIL colour"


def test_the_clusters_refusal_of_a_status_apply_is_a_cluster_fail_with_spec_drift(tmp_path) -> None:
    """ST-09 on the local lab's Kubernetes: the claim sent canonically takes the apply, the one sent
    as the Python client sends it does not (v1.37.1); reported in the cluster section and as spec
    drift, never as the driver's."""
    out = tmp_path / "out"
    done = dralab("certify", "--only", "ST-09", "--out", str(out), timeout=600)
    report = json.loads((out / "report.json").read_text())
    st09 = next(r for r in report["requirements"] if r["id"] == "ST-09")
    verdicts = {t["name"].split("[")[-1].rstrip("]"): t["verdict"] for t in st09["tests"]}
    assert verdicts == {"canonically (as kubectl and client-go send it)": "PASS", "as the kubernetes Python client sends it": "FAIL"}, st09
    failed = next(t for t in st09["tests"] if t["verdict"] == "FAIL")
    assert "field cannot be modified once set" in failed["message"] and "Upstream:" in failed["message"], failed
    # A FAIL of the cluster is reported apart: it makes no driver NOT CERTIFIED (here none is judged).
    output = done.stdout + done.stderr
    assert done.returncode == 4 and output.strip().splitlines()[-1].startswith("NOTHING TO CERTIFY"), output[-4000:]
    assert st09["section"] == "cluster", st09["section"]
    assert "status.devices by server-side apply" in [d["topic"] for d in report["spec_drift"]], report["spec_drift"]


@pytest.mark.requirement("LAB-05")
def test_ctrl_c_during_certify_leaves_no_lab_behind(tmp_path) -> None:
    """A terminal's Ctrl-C reaches certify and its pytest (one process group): certify waits for
    the teardown, exits 130, and nothing of its lab is left."""
    log = tmp_path / "certify.log"
    with open(log, "w") as out:
        certify = subprocess.Popen(
            [sys.executable, "-m", "dralab.cli", "certify", "--driver", "gpu", "--only", "MD-01", "--out", str(tmp_path / "out")],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    deadline = time.monotonic() + 120
    while "deploying driver profile gpu" not in log.read_text():  # the lab is up: the interrupt finds something to tear down
        assert certify.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    time.sleep(3)
    os.killpg(certify.pid, signal.SIGINT)
    assert certify.wait(timeout=180) == 130, log.read_text()
    assert residue.find("cert") == [], f"left behind after Ctrl-C:\n{log.read_text()}"
