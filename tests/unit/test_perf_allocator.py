"""PF-07's summary of the allocator benchmark: go test's lines parsed, the median's distribution-free
interval, the derived/literal ratio taken per round, and the report's line."""

from __future__ import annotations

import pytest

from reports.perf import allocator

OUTPUT = """goos: linux
BenchmarkAllocator/attributes=derived-2   	      22	  52000000 ns/op	  40000000 cpu-ns/op	10427852 B/op	  123778 allocs/op
--- BENCH: BenchmarkAllocator/attributes=derived-2
    allocator_test.go:76: instructions/op not measured: perf_event_open(instructions): no such file or directory
BenchmarkAllocator/attributes=literal-2   	      25	  40000000 ns/op	  32000000 cpu-ns/op	 9270000 B/op	  111294 allocs/op
PASS
"""


def test_both_variants_are_read_from_go_test_output() -> None:
    found = allocator.parse(OUTPUT)
    assert found["derived"] == {"ns_per_op": 52e6, "cpu_ns_per_op": 40e6, "bytes_per_op": 10427852.0,
                                "allocs_per_op": 123778.0}
    assert found["literal"]["ns_per_op"] == 40e6


def test_the_median_interval_takes_order_statistics_wide_enough_for_95_percent() -> None:
    assert allocator.median_interval([float(v) for v in range(10, 0, -1)]) == (2.0, 9.0)  # 97.9% for n=10
    assert allocator.median_interval([float(v) for v in range(1, 21)]) == (6.0, 15.0)  # 95.9% for n=20
    assert allocator.median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # even the extremes cover only 93.8%
    assert allocator.median_interval([float(v) for v in range(1, 7)]) == (1.0, 6.0)


def test_the_ratio_is_taken_within_each_round() -> None:
    # The machine gets twice as slow from the third round on: each round's ratio stays 1.1.
    rounds = [{"literal": {"ns_per_op": s * 100.0}, "derived": {"ns_per_op": s * 110.0}}
              for s in (1, 1, 2, 2, 2, 2)]
    summary = allocator.summarise(rounds)
    ratio = summary["derived_over_literal"]["ns_per_op"]
    assert ratio["median"] == pytest.approx(1.1) and ratio["ci95"] == pytest.approx([1.1, 1.1])
    assert ratio["precision"] == pytest.approx(0.0)
    literal = summary["per_variant"]["literal"]["ns_per_op"]
    assert literal["median"] == 200.0 and literal["ci95"] == [100.0, 200.0] and literal["precision"] == 0.25
    assert set(summary["derived_over_literal"]) == {"ns_per_op"}  # no CPU or instruction counts given


def test_the_report_line_names_each_ratio_with_its_interval_and_missing_instructions() -> None:
    rounds = [{v: {"ns_per_op": 100.0 * f, "cpu_ns_per_op": 90.0 * f} for v, f in (("literal", 1), ("derived", r))}
              for r in (1.01, 1.02, 1.03, 1.04, 1.05, 1.06)]
    result = {**allocator.summarise(rounds), "rounds": 6, "nodes": 100, "instructions": "not offered: ENOENT"}
    assert allocator.note(result) == (
        "PF-07 allocator, derived/literal over 6 rounds at 100 nodes: wall time 1.035 (95% CI 1.010 to 1.060); "
        "CPU time 1.035 (95% CI 1.010 to 1.060); instructions not offered: ENOENT")
