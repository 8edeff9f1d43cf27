"""A requirement's driver verdict comes only from tests of the driver under test (requirements.md,
Verdicts): a check of the API server with a fake driver tagged with a driver requirement would
count as that driver's PASS (ST-02 once showed PASS for a driver claiming no network data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from suites import catalogue

REPO = Path(__file__).resolve().parents[2]

# Writes each collected suite test's requirement IDs and fixture closure as JSON.
COLLECTOR = """
import json, os


def pytest_collection_finish(session):
    tests = [{"id": i.nodeid, "requirements": [m.args[0] for m in i.iter_markers("requirement")],
              "fixtures": list(i.fixturenames)} for i in session.items]
    with open(os.environ["DRALAB_COLLECTED"], "w") as f:
        json.dump(tests, f)
"""


def test_every_test_of_a_driver_requirement_sets_up_the_driver_under_test(tmp_path: Path) -> None:
    (tmp_path / "collector.py").write_text(COLLECTOR)
    out = tmp_path / "collected.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "collector", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "DRALAB_COLLECTED": str(out)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tests = json.loads(out.read_text())
    driver_ids = {r.id for r in catalogue.load().values() if r.checks is catalogue.Checks.DRIVER}
    of_driver = [t for t in tests if driver_ids & set(t["requirements"])]
    assert len(of_driver) > 50, f"only {len(of_driver)} driver tests collected: has the marker changed?"
    # deploy_driver is the only way a suite gets the driver under test (directly or through `driver`).
    assert [t["id"] for t in of_driver if "deploy_driver" not in t["fixtures"]] == []
