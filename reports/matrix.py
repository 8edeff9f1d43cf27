"""`dralab matrix`: every shipped driver profile, reference and public, certified on each
Kubernetes version dralab provisions, as one table (the nightly job).

Each cell is one certification run (reports.certify.SuiteRun) with its own report. The matrix
keeps its history (history.json beside it): a cell whose verdicts changed since the previous
run is flagged with both reports linked. Every FAIL of a public driver (a profile built from its
Go module) is listed as a finding, with the first lines of its evidence, as a vendor could file
it upstream. With --qualify, each version's cluster is first qualified by Kubernetes' own DRA e2e
suite (`dralab qualify`), which the cells' reports and the matrix name. Written as matrix.json and
matrix.html. A cell of a Kubernetes version its driver's own project does not support (the
profile's kubernetesVersions) is not run: it is SKIP, with that range and where the project says so.

In CI the cells run apart, one job each: `--plan` prints them as the job matrix GitHub Actions or
GitLab takes, `--cell DRIVER@VERSION` certifies one into cell.json, and `dralab matrix merge`
joins those into the matrix (history and change flags included) as if one machine had run them.
"""

from __future__ import annotations

import calendar
import html
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn

import click
from click.core import ParameterSource

from basics.children import run_to_completion
from basics.errors import BadInput
from basics.junit_properties import Verdict
from basics.progress import console
from clusters import versions
from drivers_under_test import candidates
from drivers_under_test.profile import DriverProfile, load_profile, shipped_profiles
from reports import page_style
from reports.certify import NoResults, SuiteRun, selection
from reports.report import CERTIFIED, INCOMPLETE, first_message
from reports.run_history import RunHistory

LAB_PREFIX = "matrix"
HISTORY = "history.json"
CELL_RECORD = "cell.json"  # what `--cell` writes and merge reads
STAMP = "%Y%m%dT%H%M%SZ"
SKIP = Verdict.SKIP
# The most jobs one matrix of each CI system makes: GitHub Actions' strategy.matrix, GitLab's parallel:matrix.
PLAN_LIMITS = {"github": 256, "gitlab": 200}
# A selected cell that no merged directory recorded: its CI job never got to write one.
UNRECORDED = "no cell.json among the merged directories: its CI job wrote none (it failed before certifying, or was cancelled)"
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
    reason: str = ""  # why a cell without a report (report "") has none

    @property
    def key(self) -> str:
        return key(self.driver, self.version)


def key(driver: str, version: str) -> str:
    """A cell's name, as --cell takes it: gpu@v1.37.1."""
    return f"{driver}@{version}"


@dataclass(frozen=True)
class Finding:
    driver: str
    version: str
    id: str
    message: str
    report: str
    cause: str = ""  # where in the driver's own code it comes from, as its profile's `findings` says


@dataclass(frozen=True)
class CellRecord:
    """What `dralab matrix --cell` ran, as cell.json keeps it for merge."""

    started: str  # STAMP
    wall_seconds: float
    cells: list[Cell]
    findings: list[Finding]
    qualifications: dict[str, str]


# A cell to run: a driver on a Kubernetes version.
Todo = tuple[DriverProfile, str]


def cell_of(driver: DriverProfile, version: str, report: dict[str, Any], report_path: str, seconds: float) -> Cell:
    return Cell(
        driver.name,
        version,
        driver.module is not None,
        report["summary"]["outcome"],
        {r["id"]: r["verdict"] for r in report["requirements"]},
        report_path,
        round(seconds, 1),
    )


def reportless_cell(driver: DriverProfile, version: str, outcome: str, reason: str) -> Cell:
    return Cell(driver.name, version, driver.module is not None, outcome, {}, "", 0.0, reason=reason)


def findings(cell: Cell, report: dict[str, Any], causes: dict[str, str] | None = None) -> list[Finding]:
    """A public driver's FAILs, each with the first lines of its message and, where its profile's
    `findings` (`causes`) names one, the cause read in the driver's code. The cluster's FAILs (its
    section of the report) are not the driver's to fix."""
    if not cell.public:
        return []
    out = []
    for requirement in report["requirements"]:
        if requirement["verdict"] != Verdict.FAIL or requirement.get("section", "driver") != "driver":
            continue
        failing = next(t for t in requirement["tests"] if t["verdict"] == Verdict.FAIL)
        lines = (failing["message"] or first_message(requirement)).splitlines()[:FINDING_LINES]
        out.append(
            Finding(cell.driver, cell.version, requirement["id"], "\n".join(lines), cell.report, (causes or {}).get(requirement["id"], ""))
        )
    return out


def compared(cells: list[Cell], previous: dict[str, Any] | None) -> list[Cell]:
    """The cells with what changed since the previous run of the same driver and version: an ID
    whose verdict differs, or that one of the runs did not have."""
    before = {key(c["driver"], c["version"]): c for c in (previous or {}).get("cells", [])}
    out = []
    for cell in cells:
        old = before.get(cell.key)
        if old is None:
            out.append(cell)
            continue
        ids = sorted(set(old["verdicts"]) | set(cell.verdicts))
        changed = {
            i: [old["verdicts"].get(i, "-"), cell.verdicts.get(i, "-")] for i in ids if old["verdicts"].get(i) != cell.verdicts.get(i)
        }
        if old["outcome"] != cell.outcome:
            changed["outcome"] = [old["outcome"], cell.outcome]
        previous_report = (old["report"] or None) if changed else None  # a SKIP cell had none
        out.append(Cell(**{**asdict(cell), "changed": changed, "previous_report": previous_report}))
    return out


def write(
    out_dir: Path,
    cells: list[Cell],
    found: list[Finding],
    started: str,
    wall_seconds: float,
    qualifications: dict[str, str] | None = None,
    unshipped: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """matrix.json, matrix.html and the run appended to history.json; with `unshipped`, what the
    Go module proxy answered today for the public drivers not shipped (drivers_under_test.candidates)."""
    history = RunHistory(out_dir / HISTORY)
    cells = compared(cells, history.runs[-1] if history.runs else None)
    data = {
        "started": started,
        "wall_seconds": round(wall_seconds, 1),
        "versions": sorted({c.version for c in cells}),
        "drivers": sorted({c.driver for c in cells}),
        "cells": [asdict(c) for c in cells],
        "findings": [asdict(f) for f in found],
        "qualifications": qualifications or {},
        "unshipped": unshipped or {},
    }
    history.append({k: data[k] for k in ("started", "cells")})
    (out_dir / "matrix.json").write_text(json.dumps(data, indent=2))
    (out_dir / "matrix.html").write_text(render_html(data))
    return data


# After page_style's rules: a changed cell outlined.
STYLE = ".changed{outline:3px solid #c0c}b.changed{color:#c0c;outline:none}pre{white-space:pre-wrap}"


def render_html(data: dict[str, Any]) -> str:
    e = html.escape
    cells = {(c["driver"], c["version"]): c for c in data["cells"]}
    ids = sorted({i for c in data["cells"] for i in c["verdicts"]})

    def outcome(c: dict[str, Any] | None) -> str:
        if c is None:
            return "<td>-</td>"
        label = f"<a href='{e(c['report'])}'>{e(c['outcome'])}</a>" if c["report"] else e(c["outcome"])
        reason = f"<br><small>{e(c['reason'])}</small>" if c["reason"] else ""
        before = f" (<a href='{e(c['previous_report'])}'>before</a>)" if c["previous_report"] else ""
        flag = f" <b class='changed'>changed</b>{before}" if c["changed"] else ""
        return f"<td class='{e(c['outcome'].replace(' ', '-'))}'>{label}{reason}{flag}</td>"

    summary = "".join(f"<tr><th>{e(d)}</th>{''.join(outcome(cells.get((d, v))) for v in data['versions'])}</tr>" for d in data["drivers"])
    grid = "".join(
        f"<tr><th>{e(c['driver'])} @ {e(c['version'])}</th>"
        + "".join(
            f"<td class='{e(c['verdicts'].get(i, ''))}{' changed' if i in c['changed'] else ''}'"
            f"{' title=' + chr(39) + e(' -> '.join(c['changed'][i])) + chr(39) if i in c['changed'] else ''}>"
            f"<a href='{e(c['report'])}#{e(i)}'>{e(c['verdicts'].get(i, ''))}</a></td>"
            for i in ids
        )
        + "</tr>"
        for c in data["cells"]
        if c["report"]
    )
    found = (
        "".join(
            f"<li><b>{e(f['driver'])} @ {e(f['version'])}: FAIL {e(f['id'])}</b> "
            f"(<a href='{e(f['report'])}#{e(f['id'])}'>report</a>)<pre>{e(f['message'])}</pre>"
            + (f"<p>cause: {e(f['cause'])}</p>" if f.get("cause") else "")
            + "</li>"
            for f in data["findings"]
        )
        or "<li>none</li>"
    )
    unshipped = (
        "".join(f"<li><b>{e(m)}</b> ({e(c['what'])}), {e(c['asked'])}: {e(c['answer'])}</li>" for m, c in data.get("unshipped", {}).items())
        or "<li>not asked</li>"
    )
    qualified = (
        "".join(f"<li><b>{e(v)}</b>: {e(q)}</li>" for v, q in data.get("qualifications", {}).items())
        or "<li>not run (dralab matrix --qualify)</li>"
    )
    return f"""{page_style.head("dralab matrix", page_style.VERDICTS + STYLE)}
<h1>dralab matrix: {len(data["drivers"])} driver(s) x {len(data["versions"])} Kubernetes version(s)</h1>
<p>Run {e(data["started"])}, {data["wall_seconds"]}s. A cell outlined changed since the previous run; a SKIP cell's
version is not one its driver's own project supports.</p>
<table><tr><th>driver</th>{"".join(f"<th>{e(v)}</th>" for v in data["versions"])}</tr>{summary}</table>
<h2>Requirements</h2>
<table><tr><th></th>{"".join(f"<th>{e(i)}</th>" for i in ids)}</tr>{grid}</table>
<h2>The clusters, qualified by Kubernetes' own DRA e2e suite</h2><ul>{qualified}</ul>
<h2>Findings in public drivers</h2><ul>{found}</ul>
<h2>Public drivers not shipped: the Go module proxy's answer today</h2><ul>{unshipped}</ul></body></html>
"""


def qualify(version: str, out_dir: Path) -> str:
    """`dralab qualify` on a local lab of `version` (its own process, as a user runs it): the summary
    it records, which the cells' certifications then name in their environment."""
    from reports import qualification

    rc = run_to_completion([sys.executable, "-m", "dralab.cli", "qualify", "--kubernetes-version", version, "--out", str(out_dir)])
    return qualification.recorded("local", version) if rc in (0, 1) else f"ERROR: dralab qualify exited {rc}; {out_dir}"


def planned(profiles: list[DriverProfile], kubernetes_versions: list[str]) -> list[Todo]:
    """Every cell of the selection, in the order one machine runs them: version by version."""
    return [(profile, version) for version in kubernetes_versions for profile in profiles]


def certify_cell(profile: DriverProfile, version: str, out_dir: Path, stamp: str, only: str | None) -> tuple[Cell, list[Finding]]:
    """One certification run (its labs go at its end), its report under out_dir/runs/stamp."""
    suite_run = SuiteRun(
        out_dir / "runs" / stamp / f"{profile.name}-{version}",
        *selection(only),
        drivers=[profile],
        lab_prefix=LAB_PREFIX,
        kubernetes_version=version,
    )
    started = time.monotonic()
    try:
        report = suite_run.report(suite_run.pytest(), {}, {})
    except NoResults:
        report = {"requirements": [], "summary": {"outcome": INCOMPLETE}}
    cell = cell_of(
        profile, version, report, (suite_run.out_dir / "report.html").relative_to(out_dir).as_posix(), time.monotonic() - started
    )
    return cell, findings(cell, report, profile.findings)


def run(
    todo: list[Todo], out_dir: Path, stamp: str, only: str | None, qualifications: dict[str, str] | None = None
) -> tuple[list[Cell], list[Finding]]:
    """Certify each cell, one after another; a cell its driver's project does not support is SKIP,
    unrun. With `qualifications` (a dict to fill), each version's cluster is qualified before its
    first cell."""
    cells, found = [], []
    for n, (profile, version) in enumerate(todo, 1):
        unsupported = profile.unsupported_kubernetes(version)
        if unsupported is None and qualifications is not None and version not in qualifications:
            console.print(f"[bold]matrix: qualifying a Kubernetes {version} cluster[/bold]")
            qualifications[version] = qualify(version, out_dir / "runs" / stamp / f"qualify-{version}")
        console.print(f"[bold]matrix {n}/{len(todo)}: {profile.name} on Kubernetes {version}[/bold]")
        if unsupported is not None:
            cell = reportless_cell(profile, version, SKIP, unsupported)
        else:
            cell, its_findings = certify_cell(profile, version, out_dir, stamp, only)
            found += its_findings
        cells.append(cell)
        console.print(f"  {cell.outcome} in {cell.seconds:.0f}s" + (f": {cell.reason}" if cell.reason else ""), markup=False)
    return cells, found


def plan(todo: list[Todo], plan_format: str) -> str:
    """The cells of `todo` to run, one CI job each, as one line of JSON: for GitHub Actions'
    strategy.matrix `{"include": [{"cell", "driver", "kubernetes_version"}, ...]}`, for GitLab's
    parallel:matrix one entry per version, `[{"KUBERNETES_VERSION": [v], "CELL": [...]}, ...]`.
    A cell that would be SKIP is left out: it needs no job (merge adds it)."""
    runnable = [(p.name, v) for p, v in todo if p.unsupported_kubernetes(v) is None]
    if not runnable:
        reasons = "; ".join(sorted({p.unsupported_kubernetes(v) or "" for p, v in todo}))
        raise BadInput(
            f"--plan: no cell to run, every one selected would be SKIP ({reasons}): select others with --driver and --kubernetes-version"
        )
    if len(runnable) > PLAN_LIMITS[plan_format]:
        raise BadInput(
            f"--plan: {len(runnable)} cells, and one {plan_format} matrix makes at most "
            f"{PLAN_LIMITS[plan_format]} jobs: plan fewer with --driver or --kubernetes-version"
        )
    if plan_format == "github":
        doc: Any = {"include": [{"cell": key(d, v), "driver": d, "kubernetes_version": v} for d, v in runnable]}
    else:
        doc = [
            {"KUBERNETES_VERSION": [version], "CELL": [key(d, v) for d, v in runnable if v == version]}
            for version in dict.fromkeys(v for _, v in runnable)
        ]
    return json.dumps(doc, separators=(",", ":"))


def requested_cells(names: tuple[str, ...]) -> list[Todo]:
    """The cells --cell names (DRIVER@VERSION); BadInput for one that is not a shipped profile on a
    version dralab builds."""
    todo = []
    for name in dict.fromkeys(names):
        driver, at, version = name.partition("@")
        if not (driver and at and version):
            raise BadInput(
                f"--cell {name!r}: expected DRIVER@VERSION, a shipped profile on a Kubernetes version, "
                f"e.g. gpu@{versions.KUBERNETES} (`dralab matrix --plan` lists them)"
            )
        if driver not in shipped_profiles():
            raise BadInput(f"--cell {name}: {driver} is not a shipped profile (these are: {', '.join(shipped_profiles())})")
        unsupported = versions.unsupported(version)
        if unsupported:
            raise BadInput(f"--cell {name}: {unsupported}")
        todo.append((load_profile(driver), version))
    return todo


def write_record(out_dir: Path, record: CellRecord) -> Path:
    path = out_dir / CELL_RECORD
    path.write_text(json.dumps(asdict(record), indent=2))
    return path


def read_record(directory: Path) -> CellRecord:
    path = directory / CELL_RECORD
    if not path.is_file():
        raise BadInput(
            f"dralab matrix merge {directory}: no {CELL_RECORD} there; give the directories that "
            "`dralab matrix --cell ... --out DIR` wrote (the cell jobs' artifacts, downloaded)"
        )
    try:
        data = json.loads(path.read_text())
        time.strptime(data["started"], STAMP)
        return CellRecord(
            data["started"],
            data["wall_seconds"],
            [Cell(**c) for c in data["cells"]],
            [Finding(**f) for f in data["findings"]],
            dict(data["qualifications"]),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise BadInput(
            f"dralab matrix merge: {path} is not the {CELL_RECORD} of `dralab matrix --cell` ({e!r}): run that cell again"
        ) from None


def merge(directories: list[Path], todo: list[Todo], out_dir: Path, unshipped: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """The matrix of the cells recorded in `directories`, written as one run of `todo` (reports
    copied under out_dir, so the links hold): a cell of `todo` that none recorded is SKIP where its
    driver's project does not support the version, else INCOMPLETE (UNRECORDED)."""
    records = [read_record(d) for d in directories]  # every one read before anything is written
    recorded: dict[str, Cell] = {}
    for directory, record in zip(directories, records):
        for cell in record.cells:
            if cell.key in recorded:
                raise BadInput(
                    f"dralab matrix merge: cell {cell.key} is recorded twice, the second time in "
                    f"{directory}: give each cell's directory once"
                )
            recorded[cell.key] = cell
    out_dir.mkdir(parents=True, exist_ok=True)
    for directory in directories:
        if (directory / "runs").is_dir() and (directory / "runs").resolve() != (out_dir / "runs").resolve():
            shutil.copytree(directory / "runs", out_dir / "runs", symlinks=True, dirs_exist_ok=True)
    cells = [recorded.pop(key(p.name, v), None) or _unrecorded(p, v) for p, v in todo] + list(recorded.values())  # type: ignore[arg-type]  # mypy takes pop's default from the `or` in a comprehension
    order = {c.key: n for n, c in enumerate(cells)}
    found = sorted((f for r in records for f in r.findings), key=lambda f: order[key(f.driver, f.version)])
    starts = [calendar.timegm(time.strptime(r.started, STAMP)) for r in records]
    wall = max(s + r.wall_seconds for s, r in zip(starts, records)) - min(starts)
    return write(
        out_dir,
        cells,
        found,
        records[starts.index(min(starts))].started,
        wall,
        {v: q for r in records for v, q in r.qualifications.items()},
        unshipped,
    )


def _unrecorded(profile: DriverProfile, version: str) -> Cell:
    unsupported = profile.unsupported_kubernetes(version)
    if unsupported is not None:
        return reportless_cell(profile, version, SKIP, unsupported)
    return reportless_cell(profile, version, INCOMPLETE, UNRECORDED)


def finish(cells: list[dict[str, Any]], found: list[dict[str, Any]], written: list[Path], matrix_written: bool) -> NoReturn:
    """The summary line (for a matrix written, what changed since its last run) and the exit: 3 when
    a cell is INCOMPLETE, else 0."""
    outcomes = [c["outcome"] for c in cells]
    changed = (
        ""
        if not matrix_written
        else ", changed since the last run: " + (", ".join(key(c["driver"], c["version"]) for c in cells if c["changed"]) or "none")
    )
    console.print(
        f"matrix: {len(cells)} cell(s), {outcomes.count(CERTIFIED)} CERTIFIED, {outcomes.count(SKIP)} SKIP, "
        f"{len(found)} finding(s) in public drivers{changed}; {', '.join(map(str, written))}",
        markup=False,
    )
    sys.exit(3 if INCOMPLETE in outcomes else 0)


def _profiles(names: tuple[str, ...]) -> list[DriverProfile]:
    chosen = list(names) or shipped_profiles()
    unknown = sorted(set(chosen) - set(shipped_profiles()))
    if unknown:
        raise BadInput(f"--driver {', '.join(unknown)}: not a shipped profile (these are: {', '.join(shipped_profiles())})")
    return [load_profile(n) for n in chosen]


def _selected(driver_names: tuple[str, ...], kubernetes_versions: tuple[str, ...]) -> list[Todo]:
    return planned(_profiles(driver_names), list(kubernetes_versions or versions.KUBERNETES_VERSIONS))


def _out_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--out", "out_dir", default="matrix", show_default=True, help=help, type=click.Path(file_okay=False, path_type=Path)
    )


def _selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--driver and --kubernetes-version: the cells a matrix run, its plan and a merge take."""
    command = click.option(
        "--kubernetes-version",
        "kubernetes_versions",
        multiple=True,
        type=click.Choice(versions.KUBERNETES_VERSIONS),
        help=f"Only this version (repeatable); default: every one dralab builds ({', '.join(versions.KUBERNETES_VERSIONS)}).",
    )(command)
    return click.option(
        "--driver",
        "driver_names",
        multiple=True,
        help="Only this shipped profile (repeatable); default: every shipped profile, reference and public.",
    )(command)


@click.group(invoke_without_command=True)
@_out_option("Where matrix.json and matrix.html go (with --cell: cell.json), each cell's run under runs/.")
@_selection_options
@click.option("--only", default=None, help="Comma-separated suites or requirement IDs, as for certify.")
@click.option(
    "--qualify",
    "with_qualify",
    is_flag=True,
    help="First qualify each version's cluster with Kubernetes' own DRA e2e suite (dralab qualify; about 30 minutes each).",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Run nothing: print the cells the options select, SKIP ones "
    "left out, as one line of JSON a CI system's job matrix takes (--plan-format).",
)
@click.option(
    "--plan-format",
    type=click.Choice(sorted(PLAN_LIMITS)),
    default=None,
    help='github (default): {"include": [...]} for strategy.matrix; gitlab: the list parallel:matrix takes.',
)
@click.option(
    "--cell",
    "cell_names",
    multiple=True,
    metavar="DRIVER@VERSION",
    help="Run only this cell (repeatable; one of --plan's) and write cell.json in --out for `dralab matrix merge` instead of the matrix.",
)
@click.pass_context
def matrix(
    ctx: click.Context,
    out_dir: Path,
    driver_names: tuple[str, ...],
    kubernetes_versions: tuple[str, ...],
    only: str | None,
    with_qualify: bool,
    plan_only: bool,
    plan_format: str | None,
    cell_names: tuple[str, ...],
) -> None:
    """Certify every shipped driver profile on each Kubernetes version dralab provisions and write
    matrix.json and matrix.html (cells changed since the previous run flagged, public drivers'
    FAILs listed as findings). Exit 0 when every cell has a verdict, 3 when one is INCOMPLETE.
    In CI: --plan, a job per cell with --cell, then `dralab matrix merge`."""
    if ctx.invoked_subcommand is not None:
        given = [p.opts[0] for p in ctx.command.params if ctx.get_parameter_source(p.name or "") is not ParameterSource.DEFAULT]
        if given:
            raise BadInput(
                f"{', '.join(given)} before {ctx.invoked_subcommand}: give its options after it "
                f"(dralab matrix {ctx.invoked_subcommand} --help)"
            )
        return
    if plan_format and not plan_only:
        raise BadInput("--plan-format is for --plan")
    if cell_names and (plan_only or driver_names or kubernetes_versions):
        raise BadInput("--cell names its driver and version: drop --plan, --driver and --kubernetes-version")
    selection(only)  # bad input before any lab
    if plan_only:
        click.echo(plan(_selected(driver_names, kubernetes_versions), plan_format or "github"))
        return
    todo = requested_cells(cell_names) if cell_names else _selected(driver_names, kubernetes_versions)
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime(STAMP, time.gmtime())
    started = time.monotonic()
    qualifications: dict[str, str] | None = {} if with_qualify else None
    cells, found = run(todo, out_dir, stamp, only, qualifications)
    wall_seconds = time.monotonic() - started
    if cell_names:
        record = CellRecord(stamp, round(wall_seconds, 1), cells, found, qualifications or {})
        path = write_record(out_dir, record)
        finish([asdict(c) for c in cells], [asdict(f) for f in found], [path], matrix_written=False)
    data = write(out_dir, cells, found, stamp, wall_seconds, qualifications, candidates.probed())
    finish(data["cells"], data["findings"], [out_dir / "matrix.html", out_dir / "matrix.json"], matrix_written=True)


@matrix.command("merge")
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@_out_option(
    "Where matrix.json, matrix.html and history.json go (a previous run's history there is kept); the cells' runs are copied under runs/."
)
@_selection_options
def merge_command(
    directories: tuple[Path, ...], out_dir: Path, driver_names: tuple[str, ...], kubernetes_versions: tuple[str, ...]
) -> None:
    """Join the cells `dralab matrix --cell` recorded in DIRECTORIES (each one's --out: the cell
    jobs' artifacts) into the matrix in --out, as one run of the cells --driver and
    --kubernetes-version select (those --plan was given): matrix.json and matrix.html, the run
    appended to history.json, changed cells flagged. A selected cell no directory recorded is SKIP
    where its driver's project does not support the version, else INCOMPLETE. Exits as dralab matrix."""
    out_dir = out_dir.resolve()
    data = merge(list(directories), _selected(driver_names, kubernetes_versions), out_dir, candidates.probed())
    finish(data["cells"], data["findings"], [out_dir / "matrix.html", out_dir / "matrix.json"], matrix_written=True)
