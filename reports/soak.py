"""`dralab soak`: certifications in a row on one machine, as a nightly job runs them (issue 55):
each one `dralab certify` of its own, then the table of what must not change from run to run, the
verdicts, the residue after teardown, and the memory and open files of the lab's longest-lived
processes (the plugin recorder, the sysfs server, the hardware agents), sampled while each run goes,
beside how busy the machine was (load average) and how fast its labs went (clusters/pace.py). With
--load, busy processes of its own keep that many cores loaded during the runs: the verdicts
under load, beside an idle soak's, say whether a busy machine changes them (it must not give a FAIL)."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click

from basics.children import run_to_completion
from basics.junit_properties import Verdict
from basics.progress import console
from clusters.api_client import client_for
from clusters.config import labs_root, saved_config
from clusters.pace import Gauge

# The lab's long-lived processes, by their program (a binary's name, or the module python runs).
WATCHED = {"plugin-recorder": "plugin-recorder", "sysfs-fuse": "sysfs server", "fake_hardware.agent": "hardware agent"}


def watched_kind(argv: list[str]) -> str | None:
    program = argv[2] if len(argv) > 2 and argv[1] == "-m" else Path(argv[0]).name if argv else ""
    return WATCHED.get(program)


SAMPLE_SECONDS = 10


@dataclass
class Run:
    seed: int
    exit_code: int
    seconds: float
    outcome: str
    verdicts: dict[str, str]
    residue: str
    peaks: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"rss_kib", "fds"}: the largest seen
    # The machine's 1-minute load average at its highest, the labs' API round trip and pod start
    # (medians over the samples) and the slowest pace seen (times an idle lab's).
    machine: dict[str, float] = field(default_factory=dict)


class Machine:
    """How busy the machine is and how fast the labs on it go, sampled while a run goes."""

    def __init__(self) -> None:
        self.loads: list[float] = []
        self.api_ms: list[float] = []
        self.pod_start_s: list[float] = []
        self.factors: list[float] = []
        self._gauges: dict[Path, Gauge] = {}

    def sample(self) -> None:
        self.loads.append(os.getloadavg()[0])
        for kubeconfig in sorted(labs_root().glob("labs/*/pki/admin.kubeconfig")):
            cfg = saved_config(kubeconfig.parent.parent.name)
            if cfg is None:  # not started yet, or gone meanwhile
                continue
            gauge = self._gauges.setdefault(kubeconfig, Gauge(functools.partial(client_for, kubeconfig), cfg.node_names()))
            pace = gauge(True)
            if pace is not None:
                self.api_ms.append(pace.api_ms)
                self.factors.append(pace.factor())
                if pace.pod_start_s is not None:
                    self.pod_start_s.append(pace.pod_start_s)

    def figures(self) -> dict[str, float]:
        def median(values: list[float]) -> float:
            return round(statistics.median(values), 1) if values else -1.0

        return {
            "load_max": round(max(self.loads, default=0.0), 1),
            "api_ms": median(self.api_ms),
            "pod_start_s": median(self.pod_start_s),
            "pace_max": round(max(self.factors, default=0.0), 1),
        }


def _sample(peaks: dict[str, dict[str, int]]) -> None:
    """The RSS and open files of every watched process now, kept where larger than seen before."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            kind = watched_kind((proc / "cmdline").read_bytes().decode(errors="replace").split("\0"))
            if kind is None:
                continue
            rss = next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines() if line.startswith("VmRSS:"))
            fds = len(list((proc / "fd").iterdir()))
        except (OSError, StopIteration, ValueError):
            continue  # gone meanwhile, or a kernel thread
        peak = peaks.setdefault(kind, {"rss_kib": 0, "fds": 0})
        peak["rss_kib"], peak["fds"] = max(peak["rss_kib"], rss), max(peak["fds"], fds)


def _busy() -> None:
    while True:
        pass


def certify_once(out_dir: Path, seed: int, passed: list[str]) -> Run:
    """One `dralab certify` (its own process, as a user runs it), sampled while it runs."""
    peaks: dict[str, dict[str, int]] = {}
    machine = Machine()
    done = threading.Event()

    def sampler() -> None:
        while not done.wait(SAMPLE_SECONDS):
            _sample(peaks)
            machine.sample()

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    started = time.monotonic()
    rc = run_to_completion([sys.executable, "-m", "dralab.cli", "certify", "--seed", str(seed), "--out", str(out_dir), *passed])
    done.set()
    thread.join()
    report_path = out_dir / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    verdicts = {r["id"]: r["verdict"] for r in report.get("requirements", [])}
    residue = report.get("environment", {}).get("residue after teardown", "unknown")
    return Run(
        seed,
        rc,
        round(time.monotonic() - started, 1),
        report.get("summary", {}).get("outcome", "no report"),
        verdicts,
        residue if isinstance(residue, str) else f"{len(residue)} item(s)",
        peaks,
        machine.figures(),
    )


def differences(runs: list[Run]) -> list[str]:
    """What changed between runs of one seed: a verdict, or the set of IDs judged."""
    out = []
    for seed in sorted({r.seed for r in runs}):
        of_seed = [r for r in runs if r.seed == seed]
        first = of_seed[0]
        for n, run in enumerate(of_seed[1:], start=2):
            changed = {
                i: [first.verdicts.get(i, "-"), run.verdicts.get(i, "-")]
                for i in sorted(set(first.verdicts) | set(run.verdicts))
                if first.verdicts.get(i) != run.verdicts.get(i)
            }
            if changed:
                out.append(f"seed {seed}, run {n} against its first: {changed}")
    return out


# Growth of a watched process's peak from the first run to the last that says it leaks: memory by
# more than half again, open files by more than a few (a sample may catch a connection being made).
RSS_GROWTH, FD_GROWTH = 1.5, 4


def growth(runs: list[Run]) -> list[str]:
    """Each watched kind's peak RSS and open files in the first run and the last, and whether that grew
    past RSS_GROWTH / FD_GROWTH (each run starts its own processes: growth is what a run leaves the next)."""
    out = []
    for kind in sorted({k for r in runs for k in r.peaks}):
        seen = [r.peaks[kind] for r in runs if kind in r.peaks]
        first, last = seen[0], seen[-1]
        grew = last["rss_kib"] > first["rss_kib"] * RSS_GROWTH or last["fds"] > first["fds"] + FD_GROWTH
        out.append(
            f"{kind}: RSS {first['rss_kib']} -> {last['rss_kib']} KiB, open files {first['fds']} -> {last['fds']} "
            f"over {len(seen)} run(s){': GROWING' if grew else ''}"
        )
    return out


def table(runs: list[Run]) -> str:
    kinds = sorted({k for r in runs for k in r.peaks})
    head = ["run", "seed", "outcome", Verdict.FAIL, "s", "residue", *MACHINE, *(f"{k} RSS KiB / fds" for k in kinds)]
    rows = [
        [
            str(n),
            str(r.seed),
            r.outcome,
            ",".join(i for i, v in r.verdicts.items() if v == Verdict.FAIL) or "-",
            f"{r.seconds:.0f}",
            r.residue,
            *(_figure(r, key) for key in MACHINE.values()),
            *(f"{r.peaks[k]['rss_kib']} / {r.peaks[k]['fds']}" if k in r.peaks else "-" for k in kinds),
        ]
        for n, r in enumerate(runs, start=1)
    ]
    return _columns([head, *rows])


def side_by_side(before: list[Run], now: list[Run], names: tuple[str, str]) -> str:
    """Each ID's verdicts in two soaks (an idle one and one under load), the times below."""
    ids = sorted({i for r in [*before, *now] for i in r.verdicts})

    def verdicts(runs: list[Run], i: str) -> str:
        return ",".join(sorted({r.verdicts.get(i, "-") for r in runs}))

    rows = [["ID", *names]] + [[i, verdicts(before, i), verdicts(now, i)] for i in ids]
    rows.append(["seconds", *(",".join(f"{r.seconds:.0f}" for r in runs) for runs in (before, now))])
    rows += [[title, *(",".join(_figure(r, key) for r in runs) for runs in (before, now))] for title, key in MACHINE.items()]
    return _columns(rows)


# The machine's figures of a run, by their column title.
MACHINE = {"load max": "load_max", "API ms": "api_ms", "pod start s": "pod_start_s", "pace x": "pace_max"}


def _figure(run: Run, key: str) -> str:
    value = run.machine.get(key, -1.0)
    return "-" if value < 0 else f"{value:g}"


def _columns(rows: list[list[str]]) -> str:
    """Rows of cells as text columns, each as wide as its widest cell."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows)


def _runs_of(path: Path) -> list[Run]:
    return [Run(**r) for r in json.loads((path / "soak.json").read_text())["runs"]]


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--runs", type=click.IntRange(1, 100), default=10, show_default=True, help="Certifications in a row.")
@click.option("--seed", type=int, default=1, show_default=True, help="The seed of the generated workloads.")
@click.option("--vary-seeds", is_flag=True, help="Run K takes seed + K - 1 instead of the same seed every time.")
@click.option(
    "--load",
    type=click.IntRange(0, 64),
    default=0,
    show_default=True,
    help="Cores kept busy by processes of the soak's own while the runs go.",
)
@click.option("--out", "out_dir", default="soak", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--beside",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Another soak's --out (an idle one): print its verdicts and times beside these.",
)
@click.argument("certify_args", nargs=-1, type=click.UNPROCESSED)
def soak(runs: int, seed: int, vary_seeds: bool, load: int, out_dir: Path, beside: Path | None, certify_args: tuple[str, ...]) -> None:
    """Run `dralab certify` --runs times in a row (CERTIFY_ARGS after `--` go to each, e.g. `-- --only
    KP`), then print the table: outcome, FAILs, time, residue, the machine's load and the labs' pace,
    and the peak memory and open files of the recorder, sysfs server and hardware agents per run;
    soak.json in --out. Exit 1 when a seed's verdicts changed between its runs, a run left residue,
    or a watched process's peak grew from the first run to the last."""
    from reports.certify import writable

    out_dir = writable(out_dir.resolve())
    busy = [multiprocessing.get_context("fork").Process(target=_busy, daemon=True) for _ in range(load)]
    for process in busy:
        process.start()
    done: list[Run] = []
    try:
        for k in range(1, runs + 1):
            run_seed = seed + k - 1 if vary_seeds else seed
            console.print(f"[bold]soak {k}/{runs}: certify --seed {run_seed}{f' under a load of {load} core(s)' if load else ''}[/bold]")
            done.append(certify_once(out_dir / f"run-{k}", run_seed, list(certify_args)))
            console.print(f"  {done[-1].outcome} in {done[-1].seconds:.0f}s, residue {done[-1].residue}", markup=False)
    finally:
        for process in busy:
            process.kill()
    changed = differences(done)
    (out_dir / "soak.json").write_text(json.dumps({"load": load, "runs": [asdict(r) for r in done], "changed": changed}, indent=2))
    console.print(table(done), markup=False)
    grown = growth(done)
    for line in grown:
        console.print(line, markup=False)
    if beside is not None:
        console.print(side_by_side(_runs_of(beside), done, (f"{beside.name}", f"{out_dir.name} (load {load})")), markup=False)
    for line in changed:
        console.print(f"[red]changed:[/red] {line}")
    left = [r for r in done if r.residue != "none"]
    sys.exit(1 if changed or left or any(line.endswith("GROWING") for line in grown) else 0)
