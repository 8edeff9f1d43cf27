"""`dralab perf` end to end at a small size (RP-03): every PF figure measured on real labs, two
runs into one directory give a history, the trend plot and a baseline for each figure."""

from __future__ import annotations

import json

import pytest

from clusters import residue
from tests.e2e.test_lab_lifecycle import dralab

pytestmark = [pytest.mark.e2e, pytest.mark.benchmark]


@pytest.mark.requirement("RP-03")
def test_two_small_perf_runs_make_a_history_with_baselines(tmp_path) -> None:
    certification = tmp_path / "report.json"  # PF-05 from a recorded certification, not a 14-minute run
    certification.write_text(json.dumps({"summary": {"wall_seconds": 810.0}, "environment": {"suites": ["suites"]}}))
    out = tmp_path / "perf"
    args = [
        "perf",
        "--out",
        str(out),
        "--bringup-rounds",
        "1",
        "--no-cold",
        "--startup-rounds",
        "1",
        "--startup-pods",
        "4",
        "--scale",
        "10x4x20",
        "--certify-report",
        str(certification),
        "--allocator-count",
        "2",
        "--allocator-benchtime",
        "1x",
        "--allocator-nodes",
        "10",
        "--kwok-scale",
        "10x4x20",
    ]
    for run in (1, 2):
        done = dralab(*args, timeout=900)
        print(done.stdout[-3000:])
        assert done.returncode in (0, 1), f"perf run {run} exited {done.returncode}:\n{done.stdout[-4000:]}{done.stderr}"
    report = json.loads((out / "perf.json").read_text())
    missing = [f["key"] for f in report["figures"] if f["value"] is None and f["key"] != "bringup_cold_s"]
    assert not missing, f"figures not measured: {missing}; errors: {report['run']['errors']}"
    assert all(c["runs"] == 1 for c in report["comparisons"] if c["value"] is not None and c["key"] != "bringup_cold_s")
    assert len((out / "perf-history.jsonl").read_text().splitlines()) == 2
    assert (out / "perf.html").read_text().count("data:image/png;base64,") == 3
    assert [r for lab in ("perf", "perf-scale", "perf-kwok-scale") for r in residue.find(lab)] == []
