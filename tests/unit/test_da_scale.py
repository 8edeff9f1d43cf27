"""The DA scale harness's size option and its summary (medians, spread, the 5% objective)."""

from __future__ import annotations

import pytest

from suites.derived_attributes.scale import OBJECTIVE_FIGURE, Size, summarise


def test_size_parses_nodes_devices_pods_and_refuses_what_cannot_fit() -> None:
    assert Size.parse("500x8x1000") == Size(500, 8, 1000)
    assert str(Size()) == "100x8x200"
    for bad in ("100x8", "0x8x10", "axbxc"):
        with pytest.raises(ValueError, match="NODESxDEVICESxPODS"):
            Size.parse(bad)
    with pytest.raises(ValueError, match="not enough"):
        Size.parse("2x2x5")


def _run(mode: str, throughput: float, filter_mean: float) -> dict:
    latency = {"p50": 0.5, "p99": 1.0, "mean": 0.4}
    return {
        "mode": mode,
        "throughput_pods_per_s": throughput,
        "latency_s": {
            "scheduler_attempt": latency,
            "scheduler_filter": {**latency, "mean": filter_mean},
            "scheduler_sli": latency,
            "watch": latency,
            "pod_timestamps": latency,
        },
    }


def test_summary_gives_medians_spread_and_the_ratio_against_the_objective() -> None:
    runs = [
        _run("literal", 80, 0.010),
        _run("derived", 70, 0.0104),
        _run("literal", 100, 0.012),
        _run("derived", 90, 0.0102),
        _run("literal", 90, 0.011),
        _run("derived", 80, 0.0103),
    ]
    summary = summarise(runs)
    literal = summary["per_mode"]["literal"]
    assert literal["throughput_pods_per_s"] == {"median": 90, "spread": pytest.approx(20 / 90)}
    assert summary["derived_over_literal"][OBJECTIVE_FIGURE] == pytest.approx(0.0103 / 0.011)
    assert summary["within_objective"] is True
    slower = summarise([_run("literal", 80, 0.010), _run("derived", 80, 0.0106)])
    assert slower["within_objective"] is False and slower["per_mode"]["derived"]["throughput_pods_per_s"]["spread"] is None
