"""The performance report (RP-03): figures from measurements, the history, regression flags
against the median of earlier runs, and perf.html with its plots embedded."""

from __future__ import annotations

import base64
import re

import pytest

from reports.perf import history, page
from reports.perf.figures import FIGURES, values

MEASURED = {
    "bringup": {"warm": {"up_s": [10.4, 10.9, 10.6], "down_s": [3.0, 3.1, 3.2]},
                "cold": {"provision_s": 200.0, "up_s": 12.0, "total_s": 212.0}},
    "pod_startup": {mode: {"create_to_running_s": {"p50": 2.0, "p99": 4.0, "mean": 2.2, "samples": [1.0, 2.0, 4.0]},
                           "node_prepare_resources_s": {"mean": 1.1, "p50": 1.3, "p99": 3.0, "count": 3}}
                    for mode in ("metadata on", "metadata off")},
    "da_scale": {"summary": {
        "per_mode": {m: {"throughput_pods_per_s": {"median": 67.0}, "scheduler_filter_mean_s": {"median": 0.012},
                         "scheduler_sli_p99_s": {"median": 2.3}} for m in ("literal", "derived")},
        "derived_over_literal": {"scheduler_filter_mean_s": 1.067}}},
    "certify": {"wall_seconds": 810.0},
    "allocator": {"per_variant": {v: {"ns_per_op": {"median": ns}} for v, ns in (("literal", 4.2e7), ("derived", 4.5e7))},
                  "derived_over_literal": {"cpu": {"median": 1.06}, "wall": {"median": 1.07}}},
    "kwok_scale": {"lab_up_s": 40.0, "kwok_nodes_ready_s": 12.0, "per_mode": {m: {
        "throughput_pods_per_s": 30.0, "throughput_pods_per_s_per_cpu": 15.0, "scheduling_s": {"p50": 1.0, "p99": 2.0},
        "create_to_running_s": {"p50": 1.1, "p99": 2.2}} for m in ("literal", "derived")}},
}


def test_every_figure_is_found_in_the_measurements() -> None:
    found = values(MEASURED)
    assert found["bringup_warm_s"] == 10.6 and found["bringup_cold_s"] == 212.0
    assert found["pod_startup_p99_metadata_off"] == 4.0 and found["node_prepare_mean_metadata_on"] == 1.1
    assert found["da_throughput_pods_per_s_derived"] == 67.0 and found["certify_wall_s"] == 810.0
    assert found["allocator_cycle_s_derived"] == pytest.approx(0.045) and found["allocator_cpu_derived_over_literal"] == 1.06
    assert None not in found.values(), [k for k, v in found.items() if v is None]
    assert set(values({}).values()) == {None}  # nothing measured: every figure missing, nothing raised


def _run(figures: dict[str, float]) -> dict:
    return {"finished": "t", "commit": "c", "figures": figures}


def test_regressions_are_judged_against_the_median_of_the_last_runs(tmp_path) -> None:
    for warm in (10.0, 11.0, 100.0, 10.5):
        history.append(tmp_path, _run({"bringup_warm_s": warm, "da_throughput_pods_per_s_literal": 60.0}))
    previous = history.load(tmp_path)
    assert len(previous) == 4
    by_key = {c.key: c for c in history.compare(
        {"bringup_warm_s": 14.0, "da_throughput_pods_per_s_literal": 40.0, "certify_wall_s": 800.0},
        previous, window=3, threshold=0.25)}
    warm = by_key["bringup_warm_s"]  # the last 3: 11, 100, 10.5; an outlier barely moves the median
    assert (warm.baseline, warm.runs, round(warm.change, 3), warm.regressed) == (11.0, 3, 0.273, True)
    within = history.compare({"bringup_warm_s": 13.0}, previous, window=3, threshold=0.25)[0]
    assert within.key == "bringup_warm_s" and not within.regressed  # +18%: inside the threshold
    throughput = by_key["da_throughput_pods_per_s_literal"]
    assert throughput.regressed and round(throughput.change, 3) == 0.333  # higher is better: a drop is worse
    assert by_key["certify_wall_s"].baseline is None and not by_key["certify_wall_s"].regressed  # no history yet


def test_perf_html_embeds_its_plots_and_names_the_regressed_figures() -> None:
    previous = [_run(values(MEASURED)), _run(values(MEASURED))]
    current = values(MEASURED) | {"bringup_warm_s": 30.0}
    comparisons = history.compare(current, previous, window=5, threshold=0.25)
    run = {"finished": "2026-11-21T00:00:00+00:00", "commit": "abc", "wall_seconds": 600.0, "errors": {}, "notes": []}
    text = page.render(run, MEASURED, comparisons, [*previous, _run(current)], 0.25)
    assert "1 figure(s) regressed by more than 25%" in text and "bringup_warm_s" in text
    assert len(re.findall(r"<tr class='regressed'>", text)) == 1
    images = re.findall(r"src='data:image/png;base64,([^']+)'", text)
    assert len(images) == 3  # startup and prepare, scheduler, trends
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "http" not in text.replace("http-equiv", "")  # nothing fetched
    assert len(FIGURES) == len(re.findall(r"<tr class='[^']*'><td>PF-0", text))


def test_only_selects_each_measurement_once() -> None:
    from reports.perf.command import _selected

    assert _selected("pf-03, PF-02,PF-05") == ["PF-02", "PF-05"]  # PF-03 comes with PF-02's pods
    assert _selected(None) == ["PF-01", "PF-02", "PF-04", "PF-05", "PF-07", "PF-08"]
