"""DA-11 / PF-04: the scale harness (scale.py) at the size `--scale` gives, on a lab of its own.
It prints its figures and writes them as JSON for the performance report; it asserts only that
every pod was scheduled with aligned devices, never a timing."""

from __future__ import annotations

import json

import pytest

from clusters.lab_configurations import scale as scale_lab
from clusters.providers import Capability, Lab
from suites.derived_attributes import scale

pytestmark = [pytest.mark.e2e, pytest.mark.benchmark]


@pytest.mark.requirement("DA-11")
@pytest.mark.requirement("PF-04")
def test_derived_versus_literal_scheduling(lab: Lab, extra_lab, request: pytest.FixtureRequest, capsys) -> None:
    option = request.config.getoption
    try:
        size = scale.Size.parse(option("--scale"))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    lab.require(Capability.HOST_PROCESSES, "the scale harness (it reads the scheduler's metrics on a lab of its own)")
    with capsys.disabled():
        print(f"\nDA scale harness {size} (nodes x devices per driver x pods), {option('--scale-runs')} run(s):")
        figures = scale.run(extra_lab(scale_lab(size.nodes)), size, option("--scale-runs"), progress=lambda line: print(f"  {line}"))
        out = option("--results-dir") / "da-scale.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(figures, indent=2))
        summary = figures["summary"]
        ratio = summary["derived_over_literal"]
        print(
            f"BENCHMARK DA-11 {size}: literal {summary['per_mode']['literal']['throughput_pods_per_s']['median']:.1f} "
            f"pods/s, derived {summary['per_mode']['derived']['throughput_pods_per_s']['median']:.1f} pods/s; "
            f"derived/literal: scheduling attempt mean {ratio.get('scheduler_attempt_mean_s', float('nan')):.3f}, "
            f"p99 {ratio.get('scheduler_attempt_p99_s', float('nan')):.3f}, Filter mean "
            f"{ratio.get('scheduler_filter_mean_s', float('nan')):.3f}, creation-to-bound p50 "
            f"{ratio.get('scheduler_sli_p50_s', float('nan')):.3f} (objective <= {summary['objective_latency_ratio']}); "
            f"written to {out}"
        )
