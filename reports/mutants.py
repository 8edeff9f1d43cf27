"""`dralab mutants`: mutation testing of the reference drivers (issue 52, point 4).

go-mutesting's mutants of the drivers' code that produces what the suites observe
(reports/mutant_listing.py) are sampled within a budget; each one is applied to a copy of the
drivers module and the programs holding the mutated file are built from it (reports/mutant_build.py,
cached by the copy's source); the drivers image then carries those programs in place of the
tree's (clusters.provision.drivers_built_in) and each program's profile is certified on its
driver requirements, one run after another on reused labs, as dralab selfcheck certifies variants.
A mutant is killed when some requirement FAILs; the report (reports/mutant_report.py) says which.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from basics.errors import LabBroken
from basics.progress import console
from clusters.provision import drivers_built_in, ensure_go, provision
from drivers_under_test.profile import DriverProfile, load_profile
from reports.certify import NoResults, SuiteRun, certifiable, selection
from reports.mutant_build import PROGRAMS, affected, built, programs_of
from reports.mutant_listing import DRIVERS_MODULE, GO_MUTESTING, MUTATED, Mutant, listed, sampled
from reports.mutant_report import EQUIVALENTS, SURVIVED, Outcome, classified, equivalents, write
from reports.report import INCOMPLETE
from reports.selfcheck import remove_labs

LAB_PREFIX = "mut"


def mutants_of_the_drivers() -> list[Mutant]:
    """Every mutant of the MUTATED files, go-mutesting built first if the cache lacks it."""
    tool = ensure_go(GO_MUTESTING, offline=False) / "go-mutesting"
    return listed(tool, DRIVERS_MODULE, list(MUTATED))


def certified(profile: DriverProfile, out_dir: Path, seed: int, lab_prefix: str) -> dict[str, Any] | None:
    """The report of `profile` certified on its driver requirements (None: no results at all)."""
    paths, ids = selection(",".join(["DEP", *certifiable(profile)]))
    suite_run = SuiteRun(out_dir, paths, ids, drivers=[profile], lab_prefix=lab_prefix, reuse_labs=True, seed=seed)
    try:
        return suite_run.report(suite_run.pytest(), {}, {})
    except NoResults:
        return None


def drop_image() -> None:
    """The mutant's drivers image archive (165 MB) removed: its build stays cached, the archive is
    made again from it in seconds, and a run of many mutants would fill the cache's disk."""
    provision(offline=True).drivers_image.archive.unlink(missing_ok=True)


def judged(mutant: Mutant, programs: list[str], out_dir: Path, seed: int, known: dict[str, str], lab_prefix: str) -> Outcome:
    started = time.monotonic()
    if not programs:  # in no program: nothing to build or certify (and no image of its own to drop)
        return classified(mutant, {}, known)
    try:
        builds = built(mutant, DRIVERS_MODULE, programs, out_dir / "work")
    except LabBroken as e:
        return classified(mutant, {}, known, build_error=str(e)[-1500:], seconds=time.monotonic() - started)
    reports: dict[str, dict[str, Any] | None] = {}
    paths: dict[str, str] = {}
    run_dir = out_dir / "runs" / mutant.id.replace("/", "-")
    with drivers_built_in(builds):
        try:
            for program in programs:
                profile = load_profile(PROGRAMS[program])
                reports[profile.name] = report = certified(profile, run_dir / profile.name, seed, lab_prefix)
                if report is not None:
                    paths[profile.name] = (run_dir / profile.name / "report.html").relative_to(out_dir).as_posix()
                if report is None or report["summary"]["outcome"] == INCOMPLETE:
                    remove_labs(lab_prefix)  # a lab that broke under this mutant is not one to reuse
        finally:
            drop_image()
    return classified(mutant, reports, known, seconds=time.monotonic() - started, paths=paths)


def run(chosen: list[Mutant], out_dir: Path, seed: int, known: dict[str, str], lab_prefix: str = LAB_PREFIX) -> list[Outcome]:
    """Each mutant built and certified in turn; the labs go at the end whatever happens."""
    programs = programs_of(DRIVERS_MODULE)
    outcomes = []
    try:
        for n, mutant in enumerate(chosen, 1):
            console.print(f"[bold]mutant {n}/{len(chosen)}: {mutant.id}[/bold] ({mutant.where})")
            outcome = judged(mutant, affected(mutant, programs), out_dir, seed, known, lab_prefix)
            outcomes.append(outcome)
            console.print(
                f"  {outcome.status} in {outcome.seconds:.0f}s {', '.join(outcome.killed_by)} {outcome.reason[:200]}", markup=False
            )
    finally:
        remove_labs(lab_prefix)
    return outcomes


@click.command()
@click.option("--list", "list_only", is_flag=True, help="Print the mutants (id, file:line, diff) drawn; build and run nothing.")
@click.option("--budget", type=click.IntRange(min=1), default=None, help="How many mutants to draw (default: all).")
@click.option(
    "--seed", type=int, default=1, show_default=True, help="Draws the mutants, and the generated workloads of their certifications."
)
@click.option("--out", "out_dir", default="mutants", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--equivalents",
    "equivalents_file",
    default=EQUIVALENTS,
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML: mutant id -> why it changes nothing any requirement speaks of.",
)
def mutants(list_only: bool, budget: int | None, seed: int, out_dir: Path, equivalents_file: Path) -> None:
    """Mutation testing of the reference drivers: each mutant drawn is built into the drivers image
    and certified on its drivers' requirements; mutants.json, mutants.html and history.json in OUT
    (exit 0 none survived, 1 some survived, 2 bad input, 3 a lab's or a build's failure)."""
    found = mutants_of_the_drivers()
    chosen = sampled(found, budget, seed)
    if list_only:
        for m in chosen:
            click.echo(f"{m.id} {m.where}\n{m.diff}")
        click.echo(f"{len(chosen)} of {len(found)} mutants of {len(MUTATED)} files")
        return
    known = equivalents(equivalents_file)
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    started, clock = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.monotonic()
    outcomes = run(chosen, out_dir, seed, known)
    data = write(out_dir, outcomes, len(found), started, time.monotonic() - clock, seed)
    s = data["summary"]
    console.print(
        f"mutants: {s['killed']} killed, {s['survived']} survived, {s['equivalent']} equivalent, {s['build-failed']} "
        f"did not build, {s['incomplete']} incomplete of {s['run']} run; score {s['score']}; {out_dir / 'mutants.html'}",
        markup=False,
    )
    sys.exit(1 if s[SURVIVED] else 0)
