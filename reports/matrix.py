"""`dralab matrix`: every shipped driver profile, reference and public, certified on each
Kubernetes version dralab provisions, as one table (the nightly job).

Each cell is one certification run (reports.certify.SuiteRun) with its own report. The matrix
keeps its history (history.json beside it): a cell whose verdicts changed since the previous
run is flagged with both reports linked. Every FAIL of a public driver (a profile built from its
Go module) is listed as a finding, with the first lines of its evidence, as a vendor could file
it upstream. With --qualify, each version's cluster is first qualified by Kubernetes' own DRA e2e
suite (`dralab qualify`), which the cells' reports and the matrix name. Written as matrix.json and
matrix.html.
"""

from __future__ import annotations

import html
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from clusters import versions
from clusters.children import run_to_completion
from clusters.errors import BadInput
from clusters.progress import console
from drivers_under_test.profile import DriverProfile, load_profile, shipped_profiles
from reports.certify import NoResults, SuiteRun, selection
from reports.report import CERTIFIED, INCOMPLETE, first_message

LAB_PREFIX = "matrix"
HISTORY = "history.json"
# How many lines of a finding's message stay in the matrix (the report has the rest).
FINDING_LINES = 6


@dataclass(frozen=True)
class Cell:
    """One driver on one Kubernetes version."""

    driver: str
    version: str
    public: bool  # built from its Go module: its FAILs are findings
    outcome: str
    verdicts: dict[str, str]  # requirement ID -> verdict
    report: str  # relative to the matrix's directory
    seconds: float
    changed: dict[str, list[str]] = field(default_factory=dict)  # ID -> [before, now], against the previous run
    previous_report: str | None = None

    @property
    def key(self) -> str:
        return f"{self.driver}@{self.version}"


@dataclass(frozen=True)
class Finding:
    driver: str
    version: str
    id: str
    message: str
    report: str
    cause: str = ""  # where in the driver's own code it comes from, as its profile's `findings` says


def cell_of(driver: DriverProfile, version: str, report: dict[str, Any], report_path: str, seconds: float) -> Cell:
    return Cell(driver.name, version, driver.module is not None, report["summary"]["outcome"],
                {r["id"]: r["verdict"] for r in report["requirements"]}, report_path, round(seconds, 1))


def findings(cell: Cell, report: dict[str, Any], causes: dict[str, str] | None = None) -> list[Finding]:
    """A public driver's FAILs, each with the first lines of its message and, where its profile's
    `findings` (`causes`) names one, the cause read in the driver's code."""
    if not cell.public:
        return []
    out = []
    for requirement in report["requirements"]:
        if requirement["verdict"] != "FAIL":
            continue
        failing = next(t for t in requirement["tests"] if t["verdict"] == "FAIL")
        lines = (failing["message"] or first_message(requirement)).splitlines()[:FINDING_LINES]
        out.append(Finding(cell.driver, cell.version, requirement["id"], "\n".join(lines), cell.report,
                           (causes or {}).get(requirement["id"], "")))
    return out


def compared(cells: list[Cell], previous: dict[str, Any] | None) -> list[Cell]:
    """The cells with what changed since the previous run of the same driver and version: an ID
    whose verdict differs, or that one of the runs did not have."""
    before = {c["driver"] + "@" + c["version"]: c for c in (previous or {}).get("cells", [])}
    out = []
    for cell in cells:
        old = before.get(cell.key)
        if old is None:
            out.append(cell)
            continue
        ids = sorted(set(old["verdicts"]) | set(cell.verdicts))
        changed = {i: [old["verdicts"].get(i, "-"), cell.verdicts.get(i, "-")] for i in ids
                   if old["verdicts"].get(i) != cell.verdicts.get(i)}
        if old["outcome"] != cell.outcome:
            changed["outcome"] = [old["outcome"], cell.outcome]
        out.append(Cell(**{**asdict(cell), "changed": changed, "previous_report": old["report"] if changed else None}))
    return out


def write(out_dir: Path, cells: list[Cell], found: list[Finding], started: str, wall_seconds: float,
          qualifications: dict[str, str] | None = None) -> dict[str, Any]:
    """matrix.json, matrix.html and the run appended to history.json."""
    history_path = out_dir / HISTORY
    history = json.loads(history_path.read_text()) if history_path.exists() else []
    cells = compared(cells, history[-1] if history else None)
    data = {"started": started, "wall_seconds": round(wall_seconds, 1),
            "versions": sorted({c.version for c in cells}), "drivers": sorted({c.driver for c in cells}),
            "cells": [asdict(c) for c in cells], "findings": [asdict(f) for f in found],
            "qualifications": qualifications or {}}
    history.append({k: data[k] for k in ("started", "cells")})
    history_path.write_text(json.dumps(history, indent=2))
    (out_dir / "matrix.json").write_text(json.dumps(data, indent=2))
    (out_dir / "matrix.html").write_text(render_html(data))
    return data


def render_html(data: dict[str, Any]) -> str:
    e = html.escape
    cells = {(c["driver"], c["version"]): c for c in data["cells"]}
    ids = sorted({i for c in data["cells"] for i in c["verdicts"]})

    def outcome(c: dict[str, Any] | None) -> str:
        if c is None:
            return "<td>-</td>"
        flag = (f" <b class='changed'>changed</b> (<a href='{e(c['previous_report'])}'>before</a>)"
                if c["changed"] else "")
        return f"<td class='{e(c['outcome'].replace(' ', '-'))}'><a href='{e(c['report'])}'>{e(c['outcome'])}</a>{flag}</td>"

    summary = "".join(f"<tr><th>{e(d)}</th>{''.join(outcome(cells.get((d, v))) for v in data['versions'])}</tr>"
                      for d in data["drivers"])
    grid = "".join(
        f"<tr><th>{e(c['driver'])} @ {e(c['version'])}</th>" + "".join(
            f"<td class='{e(c['verdicts'].get(i, ''))}{' changed' if i in c['changed'] else ''}'"
            f"{' title=' + chr(39) + e(' -> '.join(c['changed'][i])) + chr(39) if i in c['changed'] else ''}>"
            f"<a href='{e(c['report'])}#{e(i)}'>{e(c['verdicts'].get(i, ''))}</a></td>" for i in ids) + "</tr>"
        for c in data["cells"])
    found = "".join(f"<li><b>{e(f['driver'])} @ {e(f['version'])}: FAIL {e(f['id'])}</b> "
                    f"(<a href='{e(f['report'])}#{e(f['id'])}'>report</a>)<pre>{e(f['message'])}</pre>"
                    + (f"<p>cause: {e(f['cause'])}</p>" if f.get("cause") else "") + "</li>"
                    for f in data["findings"]) or "<li>none</li>"
    qualified = "".join(f"<li><b>{e(v)}</b>: {e(q)}</li>" for v, q in data.get("qualifications", {}).items()) \
        or "<li>not run (dralab matrix --qualify)</li>"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>dralab matrix</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em;text-align:left}}.CERTIFIED,.PASS{{background:#dfd}}
.NOT-CERTIFIED,.FAIL{{background:#fdd}}.INCOMPLETE,.ERROR,.BLOCKED{{background:#fec}}.WARNING{{background:#ffd}}
.changed{{outline:3px solid #c0c}}b.changed{{color:#c0c;outline:none}}pre{{white-space:pre-wrap}}</style></head><body>
<h1>dralab matrix: {len(data['drivers'])} driver(s) x {len(data['versions'])} Kubernetes version(s)</h1>
<p>Run {e(data['started'])}, {data['wall_seconds']}s. A cell outlined changed since the previous run.</p>
<table><tr><th>driver</th>{''.join(f'<th>{e(v)}</th>' for v in data['versions'])}</tr>{summary}</table>
<h2>Requirements</h2>
<table><tr><th></th>{''.join(f'<th>{e(i)}</th>' for i in ids)}</tr>{grid}</table>
<h2>The clusters, qualified by Kubernetes' own DRA e2e suite</h2><ul>{qualified}</ul>
<h2>Findings in public drivers</h2><ul>{found}</ul></body></html>
"""


def qualify(version: str, out_dir: Path) -> str:
    """`dralab qualify` on a local lab of `version` (its own process, as a user runs it): the summary
    it records, which the cells' certifications then name in their environment."""
    from reports import qualification

    rc = run_to_completion([sys.executable, "-m", "dralab.cli", "qualify", "--kubernetes-version", version,
                            "--out", str(out_dir)])
    return qualification.recorded("local", version) if rc in (0, 1) else f"ERROR: dralab qualify exited {rc}; {out_dir}"


def run(profiles: list[DriverProfile], kubernetes_versions: list[str], out_dir: Path, stamp: str,
        only: str | None, qualifications: dict[str, str] | None = None) -> tuple[list[Cell], list[Finding]]:
    """Certify each profile on each version, one after another; each run's labs go at its end. With
    `qualifications` (a dict to fill), each version's cluster is qualified before its cells."""
    cells, found = [], []
    todo = [(profile, version) for version in kubernetes_versions for profile in profiles]
    for n, (profile, version) in enumerate(todo, 1):
        if qualifications is not None and version not in qualifications:
            console.print(f"[bold]matrix: qualifying a Kubernetes {version} cluster[/bold]")
            qualifications[version] = qualify(version, out_dir / "runs" / stamp / f"qualify-{version}")
        console.print(f"[bold]matrix {n}/{len(todo)}: {profile.name} on Kubernetes {version}[/bold]")
        suite_run = SuiteRun(out_dir / "runs" / stamp / f"{profile.name}-{version}", *selection(only),
                             drivers=[profile], lab_prefix=LAB_PREFIX, kubernetes_version=version)
        started = time.monotonic()
        try:
            report = suite_run.report(suite_run.pytest(), {}, {})
        except NoResults:
            report = {"requirements": [], "summary": {"outcome": INCOMPLETE}}
        cell = cell_of(profile, version, report, (suite_run.out_dir / "report.html").relative_to(out_dir).as_posix(),
                       time.monotonic() - started)
        cells.append(cell)
        found += findings(cell, report, profile.findings)
        console.print(f"  {cell.outcome} in {cell.seconds:.0f}s")
    return cells, found


@click.command()
@click.option("--out", "out_dir", default="matrix", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--driver", "driver_names", multiple=True, help="Only this shipped profile (repeatable); default: "
              "every shipped profile, reference and public.")
@click.option("--only", default=None, help="Comma-separated suites or requirement IDs, as for certify.")
@click.option("--kubernetes-version", "kubernetes_versions", multiple=True, type=click.Choice(versions.KUBERNETES_VERSIONS),
              help=f"Only this version (repeatable); default: every one dralab builds ({', '.join(versions.KUBERNETES_VERSIONS)}).")
@click.option("--qualify", "with_qualify", is_flag=True, help="First qualify each version's cluster with Kubernetes' "
              "own DRA e2e suite (dralab qualify; about 30 minutes each).")
def matrix(out_dir: Path, driver_names: tuple[str, ...], only: str | None, kubernetes_versions: tuple[str, ...],
           with_qualify: bool) -> None:
    """Certify every shipped driver profile on each Kubernetes version dralab provisions and write
    matrix.json and matrix.html (cells changed since the previous run flagged, public drivers'
    FAILs listed as findings). Exit 0 when every cell has a verdict, 3 when one is INCOMPLETE."""
    names = list(driver_names) or shipped_profiles()
    unknown = sorted(set(names) - set(shipped_profiles()))
    if unknown:
        raise BadInput(f"--driver {', '.join(unknown)}: not a shipped profile (these are: {', '.join(shipped_profiles())})")
    profiles = [load_profile(n) for n in names]
    selection(only)  # bad input before any lab
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    started = time.monotonic()
    qualifications: dict[str, str] | None = {} if with_qualify else None
    cells, found = run(profiles, list(kubernetes_versions or versions.KUBERNETES_VERSIONS), out_dir, stamp, only,
                       qualifications)
    data = write(out_dir, cells, found, stamp, time.monotonic() - started, qualifications)
    changed = [c["driver"] + "@" + c["version"] for c in data["cells"] if c["changed"]]
    console.print(f"matrix: {len(cells)} cell(s), {sum(c.outcome == CERTIFIED for c in cells)} CERTIFIED, "
                  f"{len(found)} finding(s) in public drivers, changed since the last run: {', '.join(changed) or 'none'}; "
                  f"{out_dir / 'matrix.html'}, {out_dir / 'matrix.json'}", markup=False)
    sys.exit(3 if any(c.outcome == INCOMPLETE for c in cells) else 0)
