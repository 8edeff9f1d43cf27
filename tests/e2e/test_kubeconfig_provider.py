"""LAB-06: the `kubeconfig` provider runs the suites against an existing cluster; here, a local lab."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clusters.providers import Capability, Lab

pytestmark = pytest.mark.e2e


@pytest.mark.requirement("LAB-06")
def test_suites_run_against_an_existing_cluster_through_its_kubeconfig(lab: Lab) -> None:
    if Capability.HOST_PROCESSES not in lab.capabilities:
        pytest.skip("already running with --cluster=kubeconfig")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites/lab/test_cluster.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "--cluster=kubeconfig",
            f"--kubeconfig={lab.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout[-4000:]
    # Host-side checks (NRI socket, CDI dir) skip with the reason; everything else passes.
    assert "6 passed, 2 skipped" in summary, summary
