"""docs/certify-your-driver.md's step 5 ("Try it by hand") and docs/drivers.md's driver commands,
run with the pages' very words: a lab named `try` with the dgx-like hardware, the vendor's driver
(tests/e2e/acme_vendor.py, laid out as deploy/dralab/ of the guide's directory) deployed and
removed, the reference GPU driver deployed in a variant and removed, the lab taken down, nothing
left (tests/unit/doc_command_runs.py names it for these commands). Needs root and a provisioned cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clusters import residue
from tests.e2e.acme_vendor import vendor_dir

pytestmark = pytest.mark.e2e

LAB = "try"


def dralab(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dralab.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def test_the_guides_driver_and_a_reference_driver_deployed_and_removed_by_hand(tmp_path: Path) -> None:
    profile_dir = tmp_path / "deploy" / "dralab"
    profile_dir.mkdir(parents=True)
    vendor_dir(profile_dir)
    steps = [
        ("up", "--name", LAB, "--hardware", "dgx-like"),
        ("driver", "deploy", "--profile", "deploy/dralab/profile.yaml", "--lab", LAB),
        ("driver", "remove", "--profile", "deploy/dralab/profile.yaml", "--lab", LAB),
        ("driver", "deploy", "--profile", "gpu", "--variant", "leave-files", "--lab", LAB),
        ("driver", "remove", "--profile", "gpu", "--lab", LAB),
    ]
    try:
        for step in steps:
            done = dralab(tmp_path, *step)
            assert done.returncode == 0, f"dralab {' '.join(step)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    finally:
        down = dralab(tmp_path, "down", "--name", LAB)
    assert down.returncode == 0, down.stdout + down.stderr
    assert residue.find(LAB) == [], "the lab left something behind"
