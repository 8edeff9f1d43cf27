"""docs/certify-your-driver.md followed for a driver packaged as a vendor packages one: dralab's
reference device plugin with an image archive of its own (built from its binary with `dralab
image build`, the guide's step 2) and its chart, next to a profile written as the guide says
(under its own resource name and image reference, so it never meets the reference profile).
The guide's commands run in the vendor's directory: the schema saved next to the profile,
validate, certify (the device plugin suite), and the report read as the guide reads it. Needs
root and a provisioned cache; certify starts and removes its own labs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.acme_vendor import IMAGE, RESOURCE, vendor_dir
from tests.e2e.test_lab_lifecycle import dralab

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def vendor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vendor_dir(tmp_path_factory.mktemp("acme"))


def test_schema_and_validate(vendor: Path) -> None:
    schema = dralab("driver", "schema")
    assert schema.returncode == 0, schema.stderr
    (vendor / "profile.schema.json").write_text(schema.stdout)
    assert json.loads(schema.stdout)["title"] == "dralab driver profile"
    done = dralab("driver", "validate", str(vendor / "profile.yaml"))
    assert done.returncode == 0 and "valid" in done.stderr, done.stdout + done.stderr


def test_certify_and_read_the_report(vendor: Path) -> None:
    out = vendor / "out"
    done = dralab("certify", "--driver", str(vendor / "profile.yaml"), "--only", "DP", "--out", str(out), timeout=1800)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"certify exited {done.returncode}, want 0 (CERTIFIED):\n{output[-4000:]}"
    assert output.strip().splitlines()[-1].startswith("CERTIFIED"), output[-2000:]
    report = json.loads((out / "report.json").read_text())
    verdicts = {r["id"]: r["verdict"] for r in report["requirements"] if r["section"] == "driver"}
    assert verdicts.get("DEP-01") == "PASS" and verdicts.get("DP-01") == "PASS", verdicts
    assert "CERTIFIED" in (out / "report.html").read_text()
    assert "<testsuite" in (out / "junit.xml").read_text()
    # The chart as rendered and applied, with the vendor's image from its own archive.
    applied = (out / "logs" / "manifests" / "acme-gpu-plugin.yaml").read_text()
    assert "kind: DaemonSet" in applied and f"--resource-name={RESOURCE}" in applied and IMAGE in applied
