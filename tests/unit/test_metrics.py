"""Histograms as the performance harnesses read them from /metrics: buckets, sum, count, quantiles."""

from __future__ import annotations

import math

from clusters.local.metrics import Histogram, histogram

TEXT = """# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency for a pod being scheduled.
# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.01"} 2
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.1"} 8
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="1"} 10
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="+Inf"} 10
scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="1"} 1.2
scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 10
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="0.01"} 0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="0.1"} 0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="1"} 0
scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="+Inf"} 2
scheduler_pod_scheduling_sli_duration_seconds_sum{attempts="2"} 5
scheduler_pod_scheduling_sli_duration_seconds_count{attempts="2"} 2
"""
NAME = "scheduler_pod_scheduling_sli_duration_seconds"


def test_histogram_adds_up_the_matching_series() -> None:
    assert histogram(TEXT, NAME) == Histogram({0.01: 2, 0.1: 8, 1.0: 10, math.inf: 12}, 6.2, 12)
    assert histogram(TEXT, NAME, attempts="2") == Histogram({0.01: 0, 0.1: 0, 1.0: 0, math.inf: 2}, 5, 2)
    assert histogram(TEXT, "other") == Histogram({})


def test_quantile_interpolates_within_the_bucket() -> None:
    h = histogram(TEXT, NAME, attempts="1")
    assert h.quantile(0.1) == 0.005  # the 1st of 2 observations in (0, 0.01]
    assert math.isclose(h.quantile(0.5), 0.01 + 0.09 * 3 / 6)  # 5th: 3rd of 6 in (0.01, 0.1]
    assert h.quantile(1.0) == 1.0
    assert math.isclose(h.mean, 0.12)


def test_quantile_in_the_inf_bucket_is_the_highest_finite_bound_and_nothing_without_data() -> None:
    assert histogram(TEXT, NAME).quantile(0.99) == 1.0
    assert Histogram({}).quantile(0.5) is None
    nothing = histogram(TEXT, NAME) - histogram(TEXT, NAME)
    assert nothing.quantile(0.5) is None and nothing.mean is None
