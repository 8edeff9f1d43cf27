"""`dralab perf --out DIR`: measure PF-01 to PF-05, PF-07 and PF-08, write perf.json and perf.html, append to the
history in DIR and flag regressions against the median of the previous runs there (shown with their range)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import click

from clusters import versions
from basics.children import run_to_completion
from basics.errors import BadInput
from clusters.config import ClusterConfig
from clusters.lab_configurations import PERF, renamed, scale
from basics.progress import console
from drivers_under_test.profile import NO_HARDWARE, DriverProfile, load_profile
from reports.perf import allocator, bringup, history, kwok_scale, page, pod_startup
from reports.perf.figures import entries, values
from reports.perf.history import Comparison

REPO = Path(__file__).resolve().parents[2]
# Every PF requirement (requirements.md) -> the stage that measures it: PF-03's and PF-06's figures come
# from PF-02's pods (pod_startup), so they run it.
STAGE_OF = {
    "PF-01": "PF-01",
    "PF-02": "PF-02",
    "PF-03": "PF-02",
    "PF-04": "PF-04",
    "PF-05": "PF-05",
    "PF-06": "PF-02",
    "PF-07": "PF-07",
    "PF-08": "PF-08",
}
MEASUREMENTS = tuple(dict.fromkeys(STAGE_OF.values()))


def _progress(line: str) -> None:
    console.print(f"  {line}", markup=False, highlight=False)


def _on_lab(cfg, work: Callable[[Any], Any]) -> Any:
    """`work(lab)` on a lab of `cfg` started for it and torn down afterwards, whatever happens."""
    from clusters.local.provider import LOCAL

    lab = LOCAL.up(cfg, offline=True)
    try:
        return work(lab)
    finally:
        lab.down()


def _startup_lab(profile: DriverProfile | None) -> ClusterConfig:
    """PF-02's lab: two nodes with the hardware the measured driver expects (dgx-like for gpu)."""
    if profile is None or profile.hardware == PERF.hardware["node-1"]:
        return PERF
    hardware = {} if profile.hardware == NO_HARDWARE else {n: profile.hardware for n in PERF.hardware}
    return PERF.model_copy(update={"hardware": hardware})


def _certify(out_dir: Path, report: Path | None) -> dict[str, Any]:
    """PF-05 from a full certification: the given report.json, or one run now."""
    if report is None:
        report = out_dir / "certify" / "report.json"
        run_to_completion([sys.executable, "-m", "dralab.cli", "certify", "--out", str(report.parent)], cwd=REPO)
    data = json.loads(report.read_text())
    suites = data.get("environment", {}).get("suites", ["suites"])
    return {
        "wall_seconds": data["summary"]["wall_seconds"],
        "summary": data["summary"],
        "report": str(report),
        "full": suites == ["suites"],
    }


def _environment() -> dict[str, Any]:
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return {
        **versions.ALL,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "commit": commit.stdout.strip() or "unknown",
    }


def _selected(only: str | None) -> list[str]:
    if not only:
        return list(MEASUREMENTS)
    wanted = [w.strip().upper() for w in only.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in STAGE_OF]
    if unknown or not wanted:
        raise BadInput(
            f"--only {only!r}: unknown {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(STAGE_OF)} (PF-03 and PF-06 are measured by PF-02's pod startups)"
        )
    return list(dict.fromkeys(STAGE_OF[w] for w in wanted))  # PF-02,PF-03,PF-06: one stage, run once


def _line(c: Comparison) -> str:
    """A measured figure's console line: its value and, against history, the baseline median with the
    range of the runs it comes from, so a flag can be told from the figure's usual swing."""
    text = f"  {c.key} = {c.value:.4g}"
    if c.change is not None and c.baseline_range is not None:
        low, high = c.baseline_range
        text += f" (baseline {c.baseline:.4g}, range {low:.4g} to {high:.4g} over {c.runs} runs, {c.change:+.1%})"
    return text + (" REGRESSED" if c.regressed else "")


@click.command()
@click.option(
    "--out",
    "out_dir",
    default="perf",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where perf.json, perf.html and the history file go; keep it across runs for trends.",
)
@click.option("--bringup-rounds", default=3, show_default=True, type=click.IntRange(1), help="PF-01 warm bring-ups.")
@click.option(
    "--cold/--no-cold", default=True, show_default=True, help="PF-01 cold: provision into an empty dralab cache, then bring up from it."
)
@click.option(
    "--startup-rounds",
    default=3,
    show_default=True,
    type=click.IntRange(1),
    help="PF-02/03/06 rounds per mode, each one pod per free device of the driver (16 GPUs on the 2-node lab).",
)
@click.option("--startup-pods", default=16, show_default=True, type=click.IntRange(1), help="PF-02/03/06 at most this many pods per round.")
@click.option(
    "--profile",
    "profile_name",
    default="gpu",
    show_default=True,
    help="PF-02/03/06: the driver profile measured (shipped name or .yaml path), on the dgx-like lab.",
)
@click.option(
    "--scale",
    "scale_size",
    default="100x8x200",
    show_default=True,
    metavar="NODESxDEVICESxPODS",
    help="PF-04 size of the DA scale harness.",
)
@click.option("--scale-runs", default=1, show_default=True, type=click.IntRange(1), help="PF-04 rounds per mode.")
@click.option(
    "--certify-report",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="PF-05 from this full certification's report.json (e.g. out/report.json after `make certify`); "
    "without it perf runs a full certification itself (about 14 minutes on 2 cores).",
)
@click.option(
    "--allocator-count",
    default=10,
    show_default=True,
    type=click.IntRange(1),
    help="PF-07 runs of each allocator benchmark (go test -count).",
)
@click.option(
    "--allocator-nodes",
    default=100,
    show_default=True,
    type=click.IntRange(1),
    help="PF-07 cluster size (nodes x 8 devices of each of 3 drivers).",
)
@click.option(
    "--allocator-benchtime", default="1s", show_default=True, help="PF-07 time of each run, in go test's -benchtime form (1s, 20x)."
)
@click.option(
    "--kwok-scale",
    "kwok_size",
    default=kwok_scale.DEFAULT_SIZE,
    show_default=True,
    metavar="NODESxDEVICESxPODS",
    help="PF-08 size: kwok nodes (up to 5000), devices per node and driver, pods per mode.",
)
@click.option(
    "--threshold",
    default=0.25,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help="Relative change for the worse that flags a regression.",
)
@click.option(
    "--window", default=5, show_default=True, type=click.IntRange(1), help="How many previous runs the baseline median is taken over."
)
@click.option(
    "--only",
    default=None,
    help="Comma-separated PF IDs, PF-01 to PF-08; PF-02, PF-03 and PF-06 come from one stage (pod startups), run once.",
)
def perf(
    out_dir: Path,
    bringup_rounds: int,
    cold: bool,
    startup_rounds: int,
    startup_pods: int,
    profile_name: str,
    scale_size: str,
    scale_runs: int,
    certify_report: Path | None,
    allocator_count: int,
    allocator_nodes: int,
    allocator_benchtime: str,
    kwok_size: str,
    threshold: float,
    window: int,
    only: str | None,
) -> None:
    """Measure the performance figures (PF-01 to PF-05, PF-07, PF-08) and write perf.json and perf.html to OUT
    (exit 0; 1 when a figure regressed; 3 when a measurement failed)."""
    from suites.derived_attributes import scale as da_scale

    selected = _selected(only)
    try:
        size = da_scale.Size.parse(scale_size)
        kwok = da_scale.Size.parse(kwok_size)
        scale(kwok.nodes)  # the lab's own limit on kwok nodes, checked before anything runs
        profile = load_profile(profile_name) if "PF-02" in selected else None
    except ValueError as e:
        raise BadInput(str(e)) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "perf.log"
    stages: dict[str, tuple[str, Callable[[], Any]]] = {
        "PF-01": (
            "bringup",
            lambda: {"warm": bringup.warm(bringup_rounds, _progress), **({"cold": bringup.cold(log, _progress)} if cold else {})},
        ),
        "PF-02": (
            "pod_startup",
            lambda: _on_lab(_startup_lab(profile), lambda lab: pod_startup.measure(lab, profile, startup_rounds, startup_pods, _progress)),  # type: ignore[arg-type]  # PF-02 selected: loaded
        ),
        "PF-04": (
            "da_scale",
            lambda: _on_lab(renamed(scale(size.nodes), PERF.name), lambda lab: da_scale.run(lab, size, scale_runs, _progress)),
        ),
        "PF-05": ("certify", lambda: _certify(out_dir, certify_report)),
        "PF-07": ("allocator", lambda: allocator.measure(out_dir, allocator_count, allocator_nodes, allocator_benchtime, _progress)),
        "PF-08": ("kwok_scale", lambda: kwok_scale.run(kwok, _progress)),
    }
    start = time.monotonic()
    measured: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for pf in selected:
        name, work = stages[pf]
        console.print(f"[bold]{pf}[/bold] {name} ({time.monotonic() - start:.0f}s elapsed)")
        began = time.monotonic()
        try:
            measured[name] = work()
        except Exception as e:  # one failed measurement must not lose the others
            errors[name] = f"{type(e).__name__}: {e}"
            with open(log, "a") as f:
                f.write(f"{pf} {name} failed:\n{traceback.format_exc()}\n")
            console.print(f"[red]  {name} failed: {e} (traceback in {log})[/red]")
        console.print(f"  {name}: {time.monotonic() - began:.0f}s")
    notes = []
    if "certify" in measured and not measured["certify"]["full"]:
        notes.append(f"PF-05 comes from a partial certification ({measured['certify']['report']})")
    if "allocator" in measured:
        notes.append(allocator.note(measured["allocator"]))
    if "kwok_scale" in measured:
        notes.append(kwok_scale.note(measured["kwok_scale"]))
    run: dict[str, Any] = {
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": time.monotonic() - start,
        "measured": selected,
        "errors": errors,
        "notes": notes,
        "environment": _environment(),
    }
    run["commit"] = run["environment"]["commit"]
    current = values(measured)
    previous = history.load(out_dir)
    comparisons = history.compare(current, previous, window, threshold)
    history.append(out_dir, {"finished": run["finished"], "commit": run["commit"], "figures": current})
    (out_dir / "perf.json").write_text(
        json.dumps(
            {"run": run, "figures": entries(measured), "comparisons": [c.__dict__ for c in comparisons], "measured": measured},
            indent=2,
            default=str,
        )
    )
    (out_dir / "perf.html").write_text(page.render(run, measured, comparisons, [*previous, {"figures": current}], threshold))
    for c in comparisons:
        if c.value is not None:
            console.print(_line(c), markup=False)
    regressed = [c.key for c in comparisons if c.regressed]
    console.print(
        f"perf: {len(current) - list(current.values()).count(None)} figures, {len(regressed)} regressed, "
        f"{len(errors)} measurement(s) failed, in {run['wall_seconds']:.0f}s; "
        f"{out_dir / 'perf.html'}, {out_dir / 'perf.json'}, {out_dir / history.HISTORY}"
    )
    sys.exit(3 if errors else 1 if regressed else 0)
