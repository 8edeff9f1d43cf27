"""`dralab selfcheck` end to end on a subset that fits CI (MUT-01, MUT-02): broken variants of
each kind of driver (metadata, status, device plugin) FAIL what they break with the violation
named (and WARN on the SHOULD they miss), a valid one is CERTIFIED, every run after the first
uses the first one's lab, and no lab is left at the end."""

from __future__ import annotations

import json

import pytest

from clusters import residue
from reports.certify import lab_names
from reports.selfcheck import LAB_PREFIX
from tests.e2e.test_lab_lifecycle import dralab

pytestmark = pytest.mark.e2e


@pytest.mark.requirement("MUT-01")
@pytest.mark.requirement("MUT-02")
def test_selfcheck_judges_a_broken_and_a_valid_variant_on_one_lab(tmp_path) -> None:
    out = tmp_path / "selfcheck"
    variants = ["gpu:leave-files", "gpu:status-other-node", "fake-gpu-plugin:never-unhealthy", "gpu:cdi-etc"]
    done = dralab(
        "selfcheck", "--only", "MD-14,ST-04,DP-03", *(a for v in variants for a in ("--variant", v)), "--out", str(out), timeout=2400
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"selfcheck exited {done.returncode}, want 0:\n{output[-5000:]}"
    data = json.loads((out / "selfcheck.json").read_text())
    by_name = {(v["driver"], v["variant"]): v for v in data["variants"]}
    broken, valid = by_name[("gpu", "leave-files")], by_name[("gpu", "cdi-etc")]
    assert broken["match"] and broken["observed"]["MD-14"] == "FAIL" and "MD-14" in broken["messages"], broken
    status, plugin = by_name[("gpu", "status-other-node")], by_name[("fake-gpu-plugin", "never-unhealthy")]
    assert status["match"] and status["observed"]["ST-04"] == "FAIL" and status["observed"]["ST-06"] == "WARNING", status
    assert plugin["match"] and plugin["observed"]["DP-03"] == "FAIL", plugin
    assert valid["match"] and valid["observed"]["outcome"] == "CERTIFIED" and valid["observed"]["MD-14"] == "PASS", valid
    assert output.count("starting lab") == 1 and "(--reuse-labs)" in output, output[-5000:]
    page = (out / "selfcheck.html").read_text()
    assert "4 of 4 variants as expected" in page and "variants/gpu-leave-files/report.html" in page
    left = [str(r) for lab in lab_names(LAB_PREFIX) for r in residue.find(lab)]
    assert not left, f"selfcheck left its labs behind: {left}"
