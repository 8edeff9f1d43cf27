"""`dralab certify`: run every suite against a lab and summarise the verdicts per requirement.

For now the suites run against the embedded local lab (started and torn down by the pytest
plugin's session fixture); the report is the JUnit XML plus a per-requirement summary.
"""

from __future__ import annotations

import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import click

from clusters.progress import console

REPO = Path(__file__).resolve().parents[1]


def verdicts(junit: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        counts["FAIL" if "failure" in kinds else "ERROR" if "error" in kinds else "SKIP" if "skipped" in kinds else "PASS"] += 1
    return counts


@click.command()
@click.option("--out", "out_dir", default="out", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--cluster", type=click.Choice(["local", "kubeconfig"]), default="local", show_default=True)
@click.option("--kubeconfig", default=None, help="With --cluster kubeconfig: the cluster's kubeconfig.")
def certify(out_dir: Path, cluster: str, kubeconfig: str | None) -> None:
    """Run the conformance suites and write the results to OUT (exit 0 certified, 1 FAIL, 3 lab broke)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    junit = out_dir / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", str(REPO / "suites"), f"--junitxml={junit}", f"--cluster={cluster}",
           f"--results-dir={out_dir}", "-o", "junit_family=xunit2", "-p", "no:cacheprovider"]
    if kubeconfig:
        cmd.append(f"--kubeconfig={kubeconfig}")
    start = time.monotonic()
    rc = subprocess.call(cmd, cwd=REPO)
    if not junit.exists():
        console.print(f"[red]the suites produced no results (pytest exit {rc})[/red]")
        sys.exit(3)
    counts = verdicts(junit)
    certified = counts["FAIL"] == 0 and counts["ERROR"] == 0 and counts["PASS"] > 0
    summary = ", ".join(f"{counts[v]} {v}" for v in ("PASS", "FAIL", "ERROR", "SKIP"))
    console.print(f"{'CERTIFIED' if certified else 'NOT CERTIFIED'}: {summary} in {time.monotonic() - start:.0f}s; "
                  f"results in {junit}")
    sys.exit(0 if certified else 1 if counts["FAIL"] else 3)
