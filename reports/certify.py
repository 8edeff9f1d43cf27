"""`dralab certify`: run every suite against a lab and summarise the verdicts per requirement.

For now the suites run against the embedded local lab (started and torn down by the pytest
plugin's session fixture); it writes the JUnit XML, report.json and report.html (reports/report.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import click

from clusters import versions
from clusters.errors import BadInput
from clusters.lab_configurations import SESSION_LAB
from clusters.progress import console
from drivers_under_test.profile import DriverProfile, load_profile
from reports.report import build, read_junit, write

REPO = Path(__file__).resolve().parents[1]


# Requirement ID prefix -> the suite that checks it (`--only`).
SUITES = {"LAB": "suites/lab", "MD": "suites/device_metadata", "ST": "suites/resource_claim_status",
          "DA": "suites/derived_attributes", "DP": "suites/device_plugin"}


def suite_paths(only: str | None) -> list[str]:
    """The suites `--only MD,ST` names (all without it); BadInput for an unknown prefix."""
    if not only:
        return ["suites"]
    wanted = [p.strip().upper() for p in only.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in SUITES]
    if unknown or not wanted:
        raise BadInput(f"--only {only!r}: unknown suite(s) {', '.join(unknown) or '(none given)'}; "
                       f"choose from {', '.join(SUITES)}")
    return [SUITES[p] for p in dict.fromkeys(wanted)]


def environment(cluster: str, drivers: list[DriverProfile]) -> dict[str, object]:
    """What the verdicts were reached on: component versions and, for the embedded lab, its gates and hardware."""
    env: dict[str, object] = {"cluster": cluster, **versions.ALL,
                              "driver profiles": [str(d.source) for d in drivers] or "the reference drivers"}
    if cluster == "local":
        env.update({"feature gates": SESSION_LAB.feature_gates, "hardware": SESSION_LAB.hardware})
    return env


@click.command()
@click.option("--out", "out_dir", default="out", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--cluster", type=click.Choice(["local", "kubeconfig"]), default="local", show_default=True)
@click.option("--kubeconfig", default=None, help="With --cluster kubeconfig: the cluster's kubeconfig.")
@click.option("--driver", "driver_names", multiple=True, help="Driver profile under test (name or .yaml; repeatable); "
              "default: each suite's reference drivers.")
@click.option("--only", default=None, help=f"Comma-separated suites by requirement prefix: {', '.join(SUITES)}.")
def certify(out_dir: Path, cluster: str, kubeconfig: str | None, driver_names: tuple[str, ...], only: str | None) -> None:
    """Run the conformance suites and write the results to OUT (exit 0 certified, 1 FAIL, 2 bad input, 3 lab broke)."""
    paths = suite_paths(only)
    drivers = [load_profile(name) for name in driver_names]  # a bad profile stops here, before any lab starts
    out_dir.mkdir(parents=True, exist_ok=True)
    junit = out_dir / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", *(str(REPO / p) for p in paths), f"--junitxml={junit}",
           f"--cluster={cluster}", f"--results-dir={out_dir}", "-p", "no:cacheprovider",
           *(f"--driver={d.source}" for d in drivers)]
    if kubeconfig:
        cmd.append(f"--kubeconfig={kubeconfig}")
    start = time.monotonic()
    rc = subprocess.call(cmd, cwd=REPO)
    if not junit.exists():
        console.print(f"[red]the suites produced no results (pytest exit {rc})[/red]")
        sys.exit(3)
    results = read_junit(junit)
    report = build(results, environment(cluster, drivers), time.monotonic() - start)
    as_json, as_html = write(report, out_dir)
    summary = report["summary"]
    counts = ", ".join(f"{n} {v}" for v, n in summary["requirements"].items())
    console.print(f"{'CERTIFIED' if summary['certified'] else 'NOT CERTIFIED'}: requirements {counts} in "
                  f"{summary['wall_seconds']:.0f}s; {as_html}, {as_json}, {junit}")
    sys.exit(0 if summary["certified"] else 1 if summary["requirements"]["FAIL"] else 3)
