"""PF-07: what derived attributes cost the upstream structured allocator, in process and repeatably.

The Go benchmark in allocbench/ (k8s.io/dynamic-resource-allocation at the pinned Kubernetes
version) schedules one pod's claim, a device of each of three drivers on one NUMA node, on every
node of a cluster of nodes x 8 devices per driver: with a literal matchAttribute and with derived
attributes (BenchmarkAllocator, what each variant costs). BenchmarkDerivedOverLiteral gives the
ratio itself, from both variants run back to back on each node, so the load of a shared machine
cancels out. The test binary is built once and run with -count; benchstat (built from its Go
module) summarises the runs, and each figure's median gets a distribution-free 95% interval."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from basics.errors import LabBroken
from basics.progress import run_logged
from clusters import versions
from suites.framework.figures import quantile_interval

BENCH_DIR = Path(__file__).resolve().parent / "allocbench"
BENCHSTAT = "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
VARIANTS = ("literal", "derived")
# Go's units -> the figures' keys; instructions only where the CPU's counters are exposed.
UNITS = {
    "ns/op": "ns_per_op",
    "cpu-ns/op": "cpu_ns_per_op",
    "instructions/op": "instructions_per_op",
    "B/op": "bytes_per_op",
    "allocs/op": "allocs_per_op",
    "cpu-derived/literal": "cpu",
    "wall-derived/literal": "wall",
    "instructions-derived/literal": "instructions",
}
_LINE = re.compile(r"^Benchmark(Allocator/attributes=(\w+)|DerivedOverLiteral)(?:-\d+)?\s+\d+\s+(.*)$")


def parse(output: str) -> dict[str, list[dict[str, float]]]:
    """From `go test -bench` output: each variant's runs and the ratio benchmark's ("ratio"),
    each run as unit key -> value."""
    found: dict[str, list[dict[str, float]]] = {}
    for line in output.splitlines():
        m = _LINE.match(line.strip())
        if m:
            fields = m.group(3).split()
            found.setdefault(m.group(2) or "ratio", []).append(
                {UNITS[unit]: float(value) for value, unit in zip(fields[::2], fields[1::2]) if unit in UNITS}
            )
    return found


def _estimate(values: list[float]) -> dict[str, Any]:
    interval = quantile_interval(values, 0.5)
    median = statistics.median(values)
    return {
        "median": median,
        "ci95": list(interval) if interval else None,
        "precision": (interval[1] - interval[0]) / 2 / median if interval and median else None,
        "samples": values,
    }


def summarise(runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Per variant and unit, and per unit of the ratio, the median over runs with its interval."""

    def estimates(samples: list[dict[str, float]], units: list[str]) -> dict[str, Any]:
        return {unit: _estimate([s[unit] for s in samples]) for unit in units if samples and all(unit in s for s in samples)}

    return {
        "per_variant": {v: estimates(runs[v], list(runs[v][0]) if runs.get(v) else []) for v in VARIANTS},
        "derived_over_literal": estimates(runs.get("ratio", []), ["cpu", "wall", "instructions"]),
    }


def _go_env() -> dict[str, str]:
    return {**os.environ, "GOFLAGS": "-buildvcs=false"}


def _benchstat(bench: Path) -> str:
    """benchstat's tables: the variants side by side, then the ratio benchmark's figures."""
    tables = []
    for args in (["-filter", ".name:Allocator", "-col", "/attributes"], ["-filter", ".name:DerivedOverLiteral"]):
        done = subprocess.run(["go", "run", BENCHSTAT, *args, str(bench)], capture_output=True, text=True, cwd=bench.parent, env=_go_env())
        if done.returncode:
            raise LabBroken(f"benchstat failed (exit {done.returncode}): {done.stderr[-2000:]}")
        tables.append(done.stdout)
    return "\n".join(tables)


def measure(
    out_dir: Path, count: int = 10, nodes: int = 100, benchtime: str = "1s", progress: Callable[[str], None] = print
) -> dict[str, Any]:
    """Build the benchmark, run it `count` times, write allocator.json (with benchstat's
    summary), bench.txt (benchstat's input) and benchstat.txt to `out_dir`."""
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / "allocbench.test"
    run_logged(
        ["go", "test", "-c", "-o", binary, "."],
        out_dir / "allocbench-build.log",
        cwd=BENCH_DIR,
        env=_go_env(),
        what="building the allocator benchmark",
    )
    start = time.monotonic()
    lines = []
    with subprocess.Popen(
        [
            str(binary),
            "-test.run",
            "^$",
            "-test.bench",
            ".",
            "-test.benchmem",
            "-test.count",
            str(count),
            "-test.benchtime",
            benchtime,
            "-nodes",
            str(nodes),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line)
            if line.startswith("Benchmark"):
                progress(" ".join(line.split()))
    output = "".join(lines)
    runs = parse(output)
    if child.returncode or any(len(runs.get(k, [])) != count for k in (*VARIANTS, "ratio")):
        raise LabBroken(f"the allocator benchmark failed (exit {child.returncode}):\n{output[-4000:]}")
    seconds = time.monotonic() - start
    bench = out_dir / "bench.txt"
    bench.write_text(output)
    unavailable = next((line.split("not measured: ", 1)[1] for line in lines if "instructions not measured: " in line), None)
    result = {
        "requirement": "PF-07",
        "what": "one pod's claim (a device of each of 3 drivers on one NUMA node) scheduled on every node: "
        "NewAllocator over all slices, then Allocate per node; literal matchAttribute vs derived "
        "attributes. The ratio: medians of derived/literal over each node's Allocate run back to back",
        "kubernetes": versions.KUBERNETES,
        "module": f"k8s.io/dynamic-resource-allocation {versions.KUBERNETES_STAGING}",
        "nodes": nodes,
        "devices_per_driver": 8,
        "drivers": 3,
        "count": count,
        "benchtime": benchtime,
        "benchmark_seconds": seconds,
        "instructions": "counted" if unavailable is None else f"not offered: {unavailable.strip()}",
        **summarise(runs),
        "benchstat": _benchstat(bench),
    }
    (out_dir / "benchstat.txt").write_text(result["benchstat"])
    (out_dir / "allocator.json").write_text(json.dumps(result, indent=2))
    return result


def note(result: dict[str, Any]) -> str:
    """One line for the report: the ratios with their intervals."""
    parts = []
    for unit, label in (("cpu", "CPU time"), ("wall", "wall time"), ("instructions", "instructions")):
        ratio = result["derived_over_literal"].get(unit)
        if ratio:
            interval = f" (95% CI {ratio['ci95'][0]:.3f} to {ratio['ci95'][1]:.3f})" if ratio["ci95"] else ""
            parts.append(f"{label} {ratio['median']:.3f}{interval}")
    if "instructions" not in result["derived_over_literal"]:
        parts.append(f"instructions {result['instructions']}")
    return f"PF-07 allocator, derived/literal over {result['count']} runs at {result['nodes']} nodes: " + "; ".join(parts)
