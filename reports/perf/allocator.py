"""PF-07: what derived attributes cost the upstream structured allocator, in process and repeatably.

The Go benchmark in allocbench/ (k8s.io/dynamic-resource-allocation at the pinned Kubernetes
version) schedules one pod's claim, a device of each of three drivers on one NUMA node, on every
node of a cluster of nodes x 8 devices per driver: with a literal matchAttribute and with derived
attributes. The test binary is built once and run in rounds; each round measures both variants
seconds apart, in alternating order, so the load of a shared machine cancels out of each round's
derived/literal ratio. benchstat (built from its Go module) summarises the rounds; the ratio's
median and its distribution-free 95% interval come from the rounds' ratios."""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from clusters import versions
from clusters.errors import LabBroken
from clusters.progress import run_logged

BENCH_DIR = Path(__file__).resolve().parent / "allocbench"
BENCHSTAT = "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
VARIANTS = ("literal", "derived")
# Go's units -> the figures' keys; instructions/op only where the CPU's counters are exposed.
UNITS = {"ns/op": "ns_per_op", "cpu-ns/op": "cpu_ns_per_op", "instructions/op": "instructions_per_op",
         "B/op": "bytes_per_op", "allocs/op": "allocs_per_op"}
RATIOS = ("ns_per_op", "cpu_ns_per_op", "instructions_per_op")
_LINE = re.compile(r"^BenchmarkAllocator/attributes=(\w+)(?:-\d+)?\s+(\d+)\s+(.*)$")


def parse(output: str) -> dict[str, dict[str, float]]:
    """variant -> unit key -> value, from one `go test -bench` output."""
    found: dict[str, dict[str, float]] = {}
    for line in output.splitlines():
        m = _LINE.match(line.strip())
        if m:
            fields = m.group(3).split()
            found[m.group(1)] = {UNITS[unit]: float(value) for value, unit in zip(fields[::2], fields[1::2])
                                 if unit in UNITS}
    return found


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median: the order statistics x(k) and x(n+1-k) for the
    largest k whose binomial tail stays within (1 - confidence) / 2 (for 10 values at 95%: the
    2nd and 9th, covering 97.9%). None when there are too few values (fewer than 6 at 95%)."""
    ordered, n = sorted(values), len(values)
    k, tail = 0, 0.0
    while k < n and tail + math.comb(n, k) / 2**n <= (1 - confidence) / 2:
        tail += math.comb(n, k) / 2**n
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k else None


def _estimate(values: list[float]) -> dict[str, Any]:
    interval = median_interval(values)
    median = statistics.median(values)
    return {"median": median, "ci95": list(interval) if interval else None,
            "precision": (interval[1] - interval[0]) / 2 / median if interval and median else None,
            "samples": values}


def summarise(rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Per variant and unit the median with its interval; per unit the derived/literal ratio of
    each round, their median and interval."""
    per_variant = {v: {unit: _estimate([r[v][unit] for r in rounds]) for unit in rounds[0][v]} for v in VARIANTS}
    ratios = {unit: _estimate([r["derived"][unit] / r["literal"][unit] for r in rounds])
              for unit in RATIOS if unit in rounds[0]["literal"] and unit in rounds[0]["derived"]}
    return {"per_variant": per_variant, "derived_over_literal": ratios}


def _go_env() -> dict[str, str]:
    return {**os.environ, "GOFLAGS": "-buildvcs=false"}


def _benchstat(bench: Path) -> str:
    done = subprocess.run(["go", "run", BENCHSTAT, "-col", "/attributes", str(bench)], capture_output=True,
                          text=True, cwd=bench.parent, env=_go_env())
    if done.returncode:
        raise LabBroken(f"benchstat failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def measure(out_dir: Path, rounds: int = 10, nodes: int = 100, benchtime: str = "1s",
            progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Build the benchmark, run `rounds` rounds of both variants, write allocator.json (with
    benchstat's summary), bench.txt (benchstat's input) and benchstat.txt to `out_dir`."""
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / "allocbench.test"
    run_logged(["go", "test", "-c", "-o", binary, "."], out_dir / "allocbench-build.log", cwd=BENCH_DIR,
               env=_go_env(), what="building the allocator benchmark")
    start = time.monotonic()
    outputs, measured, unavailable = [], [], None
    for i in range(rounds):
        first = VARIANTS[i % 2]
        done = subprocess.run([str(binary), "-test.run", "^$", "-test.bench", ".", "-test.benchmem",
                               "-test.benchtime", benchtime, "-nodes", str(nodes), "-first", first],
                              capture_output=True, text=True)
        found = parse(done.stdout)
        if done.returncode or set(found) != set(VARIANTS):
            raise LabBroken(f"allocator benchmark round {i + 1} failed (exit {done.returncode}):\n"
                            f"{done.stdout[-3000:]}{done.stderr[-2000:]}")
        outputs.append(done.stdout)
        measured.append(found)
        unavailable = unavailable or next((line.split("not measured: ", 1)[1] for line in done.stdout.splitlines()
                                           if "instructions/op not measured: " in line), None)
        progress(f"round {i + 1}/{rounds} ({first} first): " + ", ".join(
            f"{v} {found[v]['ns_per_op'] / 1e6:.2f} ms/op" for v in VARIANTS) +
            f", derived/literal {found['derived']['ns_per_op'] / found['literal']['ns_per_op']:.3f}")
    seconds = time.monotonic() - start
    bench = out_dir / "bench.txt"
    bench.write_text("".join(outputs))
    summary = summarise(measured)
    result = {
        "requirement": "PF-07",
        "what": "one pod's claim (a device of each of 3 drivers on one NUMA node) scheduled on every node: "
                "NewAllocator over all slices, then Allocate per node; literal matchAttribute vs derived attributes",
        "kubernetes": versions.KUBERNETES, "module": f"k8s.io/dynamic-resource-allocation {versions.KUBERNETES_STAGING}",
        "nodes": nodes, "devices_per_driver": 8, "drivers": 3, "rounds": rounds, "benchtime": benchtime,
        "rounds_seconds": seconds, "instructions": "counted" if unavailable is None else f"not offered: {unavailable}",
        **summary,
        "benchstat": _benchstat(bench),
    }
    (out_dir / "benchstat.txt").write_text(result["benchstat"])
    (out_dir / "allocator.json").write_text(json.dumps(result, indent=2))
    return result


def note(result: dict[str, Any]) -> str:
    """One line for the report: the ratios with their intervals."""
    parts = []
    for unit, label in (("ns_per_op", "wall time"), ("cpu_ns_per_op", "CPU time"), ("instructions_per_op", "instructions")):
        ratio = result["derived_over_literal"].get(unit)
        if ratio:
            interval = f" (95% CI {ratio['ci95'][0]:.3f} to {ratio['ci95'][1]:.3f})" if ratio["ci95"] else ""
            parts.append(f"{label} {ratio['median']:.3f}{interval}")
    if "instructions_per_op" not in result["derived_over_literal"]:
        parts.append(f"instructions {result['instructions']}")
    return (f"PF-07 allocator, derived/literal over {result['rounds']} rounds at {result['nodes']} nodes: "
            + "; ".join(parts))
