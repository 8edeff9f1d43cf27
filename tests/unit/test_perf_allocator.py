"""PF-07's summary of the allocator benchmark: go test's lines parsed, the median with its distribution-free
interval over runs (suites.framework.figures.quantile_interval, tested in test_perf), and the report's line."""

from __future__ import annotations

import pytest

from reports.perf import allocator

OUTPUT = """goos: linux
BenchmarkAllocator/attributes=literal-2   	      25	  40000000 ns/op	  32000000 cpu-ns/op	 9270000 B/op	  111294 allocs/op
--- BENCH: BenchmarkAllocator/attributes=literal-2
    allocator_test.go:52: instructions not measured: perf_event_open(instructions): no such file or directory
BenchmarkAllocator/attributes=derived-2   	      22	  52000000 ns/op	  40000000 cpu-ns/op	10427852 B/op	  123778 allocs/op
BenchmarkDerivedOverLiteral-2   	     873	   1803642 ns/op	         1.155 cpu-derived/literal	         1.162 wall-derived/literal	  545248 B/op	    6054 allocs/op
BenchmarkDerivedOverLiteral-2   	     712	   1717060 ns/op	         1.148 cpu-derived/literal	         1.146 wall-derived/literal	  545248 B/op	    6054 allocs/op
PASS
"""


def test_each_variant_and_the_ratio_are_read_from_go_test_output() -> None:
    runs = allocator.parse(OUTPUT)
    assert runs["derived"] == [{"ns_per_op": 52e6, "cpu_ns_per_op": 40e6, "bytes_per_op": 10427852.0, "allocs_per_op": 123778.0}]
    assert runs["literal"][0]["ns_per_op"] == 40e6
    assert [r["cpu"] for r in runs["ratio"]] == [1.155, 1.148] and runs["ratio"][1]["wall"] == 1.146


def test_each_figure_gets_its_median_and_interval_over_runs() -> None:
    runs = {
        "literal": [{"ns_per_op": 100.0 * s} for s in (1, 1, 2, 2, 2, 2)],
        "derived": [{"ns_per_op": 110.0 * s} for s in (1, 1, 2, 2, 2, 2)],
        "ratio": [{"cpu": r, "wall": r + 0.1} for r in (1.10, 1.11, 1.12, 1.13, 1.14, 1.15)],
    }
    summary = allocator.summarise(runs)
    literal = summary["per_variant"]["literal"]["ns_per_op"]
    assert literal["median"] == 200.0 and literal["ci95"] == [100.0, 200.0] and literal["precision"] == 0.25
    cpu = summary["derived_over_literal"]["cpu"]
    assert cpu["median"] == pytest.approx(1.125) and cpu["ci95"] == [1.10, 1.15]
    assert cpu["precision"] == pytest.approx(0.025 / 1.125)
    assert set(summary["derived_over_literal"]) == {"cpu", "wall"}  # no instruction counts given


def test_the_report_line_names_each_ratio_with_its_interval_and_missing_instructions() -> None:
    runs = {"literal": [], "derived": [], "ratio": [{"cpu": r, "wall": r} for r in (1.01, 1.02, 1.03, 1.04, 1.05, 1.06)]}
    result = {**allocator.summarise(runs), "count": 6, "nodes": 100, "instructions": "not offered: ENOENT"}
    assert allocator.note(result) == (
        "PF-07 allocator, derived/literal over 6 runs at 100 nodes: CPU time 1.035 (95% CI 1.010 to 1.060); "
        "wall time 1.035 (95% CI 1.010 to 1.060); instructions not offered: ENOENT"
    )
