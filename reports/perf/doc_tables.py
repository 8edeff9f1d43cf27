"""The measured tables of docs/performance.md, rendered from the runs' own JSON records kept in
docs/performance-data/: a soak's soak.json as `dralab soak` wrote it, a certification's report.json
cut down to its summary and verdicts. Each table sits in the page between `<!-- generated: NAME -->`
and `<!-- end -->`, so the figures there are the records' and nothing else
(tests/unit/test_doc_tables.py holds the page to this module's output).

    python -m reports.perf.doc_tables                  # rewrite the page's generated sections
    python -m reports.perf.doc_tables --check          # exit 1 naming the sections that differ
    python -m reports.perf.doc_tables --record NAME DIR  # keep DIR's soak.json or report.json as NAME

A table of new runs: record them (`--record soak-one-seed soak/one-seed`), point the table's
RECORDS at them, regenerate."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from reports.soak import FD_GROWTH, MACHINE, RSS_GROWTH, Run

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "performance.md"
DATA = REPO / "docs" / "performance-data"
SECTION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end -->)", re.DOTALL)


@dataclass(frozen=True)
class Record:
    """A run kept in docs/performance-data: its file's stem, what made it and when."""

    name: str
    command: str
    date: str

    def data(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((DATA / f"{self.name}.json").read_text())
        return loaded

    def runs(self) -> list[Run]:
        return [Run(**r) for r in self.data()["runs"]]

    def cite(self) -> str:
        return f"`{self.name}.json` ({self.command}, {self.date})"


IDLE = Record("bench-load-idle", "`make bench-load`'s idle run", "2026-12-02")
LOAD_2 = Record("bench-load-load-2", "`make bench-load`'s `--load 2` run", "2026-12-01")
LOAD_4 = Record("bench-load-load-4", "`make bench-load`'s `--load 4` run", "2026-12-01")
CERTIFY_IDLE = Record("certify-idle", "`make certify`", "2026-12-01")
FULL_LOAD_4 = Record("bench-load-full-load-4", "`dralab soak --runs 1 --load 4`", "2026-12-02")
CERTIFY_LOAD_4 = Record("certify-full-load-4", "the report of that soak's run", "2026-12-02")
NARROWED = 'with `SOAK_CERTIFY="--only KP-03,KP-06"`'
ONE_SEED = Record("soak-one-seed", f"`make soak`'s first half {NARROWED}", "2026-12-01")
TEN_SEEDS = Record("soak-ten-seeds", f"`make soak`'s second half {NARROWED}", "2026-12-02")

# The machine's figures of a soak run, with the page's titles.
MACHINE_TITLES = {
    "load max": "load max (1 min)",
    "API ms": "API ms (median)",
    "pod start s": "pod start s (median)",
    "pace x": "pace x (slowest)",
}
# The order counts are given in, worst last.
VERDICTS = ["PASS", "WARNING", "SKIP", "FAIL", "ERROR", "BLOCKED"]


def markdown(rows: list[list[str]]) -> str:
    """A Markdown table, the first row its head."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])


def number(value: float) -> str:
    return f"{value:g}"


def _machine(run: Run, key: str) -> str:
    value = run.machine.get(key, -1.0)
    return "-" if value < 0 else number(value)


def _sources(*records: Record) -> str:
    return "From docs/performance-data/: " + "; ".join(r.cite() for r in records) + "."


def under_load() -> str:
    """Each ID's verdict idle and under loads, then the time and the machine's figures."""
    soaks = [("idle", IDLE), ("load-2", LOAD_2), ("load-4", LOAD_4)]
    runs = {title: record.runs() for title, record in soaks}
    ids = list(dict.fromkeys(i for each in runs.values() for r in each for i in r.verdicts))

    def cells(value: Callable[[list[Run]], str]) -> list[str]:
        return [value(each) for each in runs.values()]

    idle_seconds = statistics.mean(r.seconds for r in runs["idle"])
    rows = [["ID", *runs]]
    rows += [[i, *cells(lambda each: ",".join(sorted({r.verdicts.get(i, "-") for r in each})))] for i in ids]
    rows.append(["outcome", *cells(lambda each: ",".join(sorted({r.outcome for r in each})))])
    rows.append(["seconds", *cells(lambda each: ",".join(f"{r.seconds:.0f}" for r in each))])
    rows.append(["time / idle", *cells(lambda each: ",".join(f"{r.seconds / idle_seconds:.2f}" for r in each))])
    for title, key in MACHINE.items():
        rows.append([MACHINE_TITLES[title], *cells(lambda each: ",".join(_machine(r, key) for r in each))])
    return markdown(rows) + "\n\n" + _sources(IDLE, LOAD_2, LOAD_4)


def _counts(summary: dict[str, Any], verdicts: dict[str, str], sections: dict[str, str], section: str) -> str:
    counts = summary["requirements"][section]
    parts = []
    for verdict in VERDICTS:
        if counts.get(verdict):
            named = [i for i, v in verdicts.items() if v == verdict and sections[i] == section]
            parts.append(f"{counts[verdict]} {verdict}" + (f" ({', '.join(named)})" if verdict != "PASS" else ""))
    return ", ".join(parts) or "-"


def full_under_load() -> str:
    """The full certification under a load of 4 beside the idle `make certify`."""
    idle, loaded = CERTIFY_IDLE.data(), CERTIFY_LOAD_4.data()
    (run,) = FULL_LOAD_4.runs()
    same = sum(loaded["verdicts"].get(i) == v for i, v in idle["verdicts"].items())
    rows = [
        ["", "idle", "load 4"],
        ["outcome", idle["summary"]["outcome"], loaded["summary"]["outcome"]],
        ["wall seconds (report.json)", f"{idle['summary']['wall_seconds']:.0f}", f"{loaded['summary']['wall_seconds']:.0f}"],
        ["time / idle", "1.00", f"{loaded['summary']['wall_seconds'] / idle['summary']['wall_seconds']:.2f}"],
        *([MACHINE_TITLES[title], "-", _machine(run, key)] for title, key in MACHINE.items()),
        ["requirement IDs", str(len(idle["verdicts"])), str(len(loaded["verdicts"]))],
        ["same verdict as idle", "-", f"{same} of {len(idle['verdicts'])}"],
        *(
            [section, _counts(idle["summary"], idle["verdicts"], idle["sections"], section)]
            + [_counts(loaded["summary"], loaded["verdicts"], loaded["sections"], section)]
            for section in idle["summary"]["requirements"]
        ),
        ["residue", idle["residue"], loaded["residue"]],
    ]
    return markdown(rows) + "\n\n" + _sources(CERTIFY_IDLE, FULL_LOAD_4, CERTIFY_LOAD_4)


def soak_runs(record: Record) -> str:
    """A soak's table, as `dralab soak` prints it: a row per run."""
    runs = record.runs()
    kinds = sorted({k for r in runs for k in r.peaks})
    head = ["run", "seed", "outcome", "FAIL", "s", "residue", *MACHINE, *(f"{k} RSS KiB / fds" for k in kinds)]
    rows = [
        [
            str(n),
            str(r.seed),
            r.outcome,
            ",".join(i for i, v in r.verdicts.items() if v == "FAIL") or "-",
            f"{r.seconds:.0f}",
            r.residue,
            *(_machine(r, key) for key in MACHINE.values()),
            *(f"{r.peaks[k]['rss_kib']} / {r.peaks[k]['fds']}" if k in r.peaks else "-" for k in kinds),
        ]
        for n, r in enumerate(runs, start=1)
    ]
    return markdown([head, *rows]) + "\n\n" + _sources(record)


def _spread(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)} to {max(values)}"


def soak_summary() -> str:
    """What must not change from run to run, over each soak: outcomes, verdicts, residue, and
    each watched process's peaks, first run against last as `dralab soak` judges growth."""
    soaks = [("one seed", ONE_SEED), ("ten seeds", TEN_SEEDS)]
    data = {title: record.data() for title, record in soaks}
    runs = {title: record.runs() for title, record in soaks}
    kinds = sorted({k for each in runs.values() for r in each for k in r.peaks})
    rows = [["", *runs]]
    rows.append(["runs", *(str(len(each)) for each in runs.values())])
    rows.append(["seeds", *(_spread(sorted({r.seed for r in each})) for each in runs.values())])
    outcomes = [", ".join(f"{sum(r.outcome == o for r in each)} {o}" for o in sorted({r.outcome for r in each})) for each in runs.values()]
    rows.append(["outcomes", *outcomes])
    rows.append(["verdicts changed within a seed", *(str(len(d["changed"])) for d in data.values())])
    rows.append(["runs that left residue", *(str(sum(r.residue != "none" for r in each)) for each in runs.values())])
    rows.append(["seconds", *(_spread(sorted(round(r.seconds) for r in each)) for each in runs.values())])
    for kind in kinds:
        for unit, key in (("RSS KiB", "rss_kib"), ("open files", "fds")):
            cells = []
            for each in runs.values():
                seen = [r.peaks[kind][key] for r in each if kind in r.peaks]
                cells.append(f"{seen[0]} → {seen[-1]} ({_spread(sorted(seen))})")
            rows.append([f"{kind} peak {unit}: first → last (range)", *cells])
    grew = []
    for each in runs.values():
        growing = [
            k
            for k in kinds
            if (peaks := [r.peaks[k] for r in each if k in r.peaks])
            and (peaks[-1]["rss_kib"] > peaks[0]["rss_kib"] * RSS_GROWTH or peaks[-1]["fds"] > peaks[0]["fds"] + FD_GROWTH)
        ]
        grew.append(", ".join(growing) or "none")
    rows.append([f"GROWING (the last run's peak past {RSS_GROWTH:g}x the first's RSS, or over {FD_GROWTH} more open files)", *grew])
    return markdown(rows) + "\n\n" + _sources(ONE_SEED, TEN_SEEDS)


TABLES: dict[str, Callable[[], str]] = {
    "under-load": under_load,
    "full-under-load": full_under_load,
    "soak-one-seed": lambda: soak_runs(ONE_SEED),
    "soak-ten-seeds": lambda: soak_runs(TEN_SEEDS),
    "soak-summary": soak_summary,
}


def sections(text: str) -> dict[str, str]:
    """The page's generated sections, by name, as they stand (without the trailing newline)."""
    return {m.group(2): m.group(3).rstrip("\n") for m in SECTION.finditer(text)}


def render(text: str) -> str:
    """The page with each generated section's content rendered anew."""

    def one(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in TABLES:
            raise SystemExit(f"{PAGE}: no table named {name!r} ({', '.join(TABLES)})")
        return f"{match.group(1)}{TABLES[name]()}\n{match.group(4)}"

    return SECTION.sub(one, text)


def record(name: str, run_dir: Path, data: Path = DATA) -> Path:
    """DIR's record kept as docs/performance-data/NAME.json: a soak's soak.json as it is, a
    certification's report.json as its summary, each ID's verdict and section, and its residue."""
    data.mkdir(exist_ok=True)
    target = data / f"{name}.json"
    if (run_dir / "soak.json").exists():
        kept = json.loads((run_dir / "soak.json").read_text())
    else:
        report = json.loads((run_dir / "report.json").read_text())
        kept = {
            "summary": {k: report["summary"][k] for k in ("outcome", "exit_code", "requirements", "wall_seconds")},
            "verdicts": {r["id"]: r["verdict"] for r in report["requirements"]},
            "sections": {r["id"]: r["section"] for r in report["requirements"]},
            "residue": report["environment"].get("residue after teardown", "-"),
        }
    target.write_text(json.dumps(kept, indent=2) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.perf.doc_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing: exit 1 if a generated section differs")
    parser.add_argument("--record", nargs=2, metavar=("NAME", "DIR"), help="keep a run's soak.json or report.json")
    args = parser.parse_args(argv)
    if args.record:
        print(f"recorded {record(args.record[0], Path(args.record[1]))}")
        return 0
    text = PAGE.read_text()
    rendered = render(text)
    differ = [name for name, body in sections(rendered).items() if sections(text).get(name) != body]
    if args.check:
        for name in differ:
            print(f"{PAGE}: generated section {name} differs from docs/performance-data (python -m reports.perf.doc_tables)")
        return 1 if differ else 0
    PAGE.write_text(rendered)
    print(f"{PAGE}: {', '.join(differ) or 'nothing'} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
