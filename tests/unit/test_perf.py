"""The performance report (RP-03): figures from measurements (perf.json's objects, with their samples'
95% intervals), the history, regression flags against the median and range of earlier runs, perf.html
with its plots embedded, and --only by PF ID."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from reports.perf import allocator, history, page
from reports.perf.command import STAGE_OF, _line, _selected
from reports.perf.figures import FIGURES, entries, values
from suites.framework.figures import quantile_interval

STARTUPS = [i / 10 for i in range(1, 21)]  # 20 pods: p50 1.0, p99 2.0 by nearest rank
# Six DA scale runs per mode, whose medians are the summary's.
DA_RUNS = [
    {"mode": m, "throughput_pods_per_s": t, "latency_s": {"scheduler_filter": {"mean": f}, "scheduler_sli": {"p99": p}}}
    for m in ("literal", "derived")
    for t, f, p in zip((64.0, 65.0, 66.0, 68.0, 69.0, 70.0), (0.010, 0.011, 0.012, 0.012, 0.013, 0.014), (2.0, 2.1, 2.2, 2.4, 2.5, 2.6))
]
# Ten allocator benchmark runs, summarised as allocator.json has them (medians 4.2e7 and 4.5e7 ns, 1.06).
CYCLES = (4.0e7, 4.1e7, 4.1e7, 4.2e7, 4.2e7, 4.2e7, 4.2e7, 4.3e7, 4.4e7, 4.5e7)
RATIOS = (1.04, 1.05, 1.05, 1.06, 1.06, 1.06, 1.06, 1.07, 1.08, 1.09)
ALLOCATOR = allocator.summarise(
    {
        "literal": [{"ns_per_op": ns} for ns in CYCLES],
        "derived": [{"ns_per_op": ns + 3e6} for ns in CYCLES],
        "ratio": [{"cpu": r, "wall": r + 0.01} for r in RATIOS],
    }
)

MEASURED = {
    "bringup": {
        "warm": {"up_s": [10.4, 10.9, 10.6], "down_s": [3.0, 3.1, 3.2]},
        "cold": {"provision_s": 200.0, "up_s": 12.0, "total_s": 212.0},
    },
    "pod_startup": {
        mode: {
            "create_to_running_s": {"p50": 1.0, "p99": 2.0, "mean": 1.05, "samples": STARTUPS},
            "node_prepare_resources_s": {"mean": 1.1, "p50": 1.3, "p99": 3.0, "count": 3},
            **{
                split: {
                    "kubelet_grpc_node_prepare_resources": {"mean": 0.05},
                    "driver_phases": {"total": {"p50": 0.03, "p99": 0.08}, "metadata_write": {"p50": 0.01, "p99": 0.02}},
                    "metadata_write_share": 0.3,
                }
                for split in ("prepare_split", "prepare_split_sequential")
            },
        }
        for mode in ("metadata on", "metadata off")
    },
    "da_scale": {
        "runs": DA_RUNS,
        "summary": {
            "per_mode": {
                m: {
                    "throughput_pods_per_s": {"median": 67.0},
                    "scheduler_filter_mean_s": {"median": 0.012},
                    "scheduler_sli_p99_s": {"median": 2.3},
                }
                for m in ("literal", "derived")
            },
            "derived_over_literal": {"scheduler_filter_mean_s": 1.067},
        },
    },
    "certify": {"wall_seconds": 810.0},
    "allocator": ALLOCATOR,
    "kwok_scale": {
        "lab_up_s": 40.0,
        "kwok_nodes_ready_s": 12.0,
        "per_mode": {
            m: {
                "throughput_pods_per_s": 30.0,
                "throughput_pods_per_s_per_cpu": 15.0,
                "scheduling_s": {"p50": 1.0, "p99": 2.0},
                "create_to_running_s": {"p50": 1.1, "p99": 2.2},
            }
            for m in ("literal", "derived")
        },
    },
}


def test_every_figure_is_found_in_the_measurements() -> None:
    found = values(MEASURED)
    assert found["bringup_warm_s"] == 10.6 and found["bringup_cold_s"] == 212.0
    assert found["pod_startup_p99_metadata_off"] == 2.0 and found["node_prepare_mean_metadata_on"] == 1.1
    assert found["prepare_total_p99_metadata_on"] == 0.08 and found["prepare_metadata_write_share_metadata_on"] == 0.3
    assert found["da_throughput_pods_per_s_derived"] == 67.0 and found["certify_wall_s"] == 810.0
    assert found["allocator_cycle_s_derived"] == pytest.approx(0.045) and found["allocator_cpu_derived_over_literal"] == 1.06
    assert None not in found.values(), [k for k, v in found.items() if v is None]
    assert set(values({}).values()) == {None}  # nothing measured: every figure missing, nothing raised


FIELDS = ["key", "requirement", "label", "unit", "value", "lower_is_better", "repetitions", "ci95"]


def test_perf_json_lists_every_figure_as_an_object_with_its_repetitions_and_interval() -> None:
    listed = entries(MEASURED)
    assert [e["key"] for e in listed] == [f.key for f in FIGURES] and all(list(e) == FIELDS for e in listed)
    assert json.loads(json.dumps(listed)) == listed
    by_key = {e["key"]: e for e in listed}
    warm = by_key["bringup_warm_s"]  # 3 bring-ups: too few for a median's 95% interval (6 needed)
    assert (warm["requirement"], warm["unit"], warm["value"], warm["repetitions"], warm["ci95"]) == ("PF-01", "s", 10.6, 3, None)
    p50 = by_key["pod_startup_p50_metadata_on"]  # the 6th and 15th of 20 pods
    assert (p50["requirement"], p50["value"], p50["repetitions"], p50["ci95"]) == ("PF-02", 1.0, 20, [0.6, 1.5])
    p99 = by_key["pod_startup_p99_metadata_off"]  # a p99's upper end needs 368 pods
    assert (p99["value"], p99["repetitions"], p99["ci95"]) == (2.0, 20, None)
    throughput = by_key["da_throughput_pods_per_s_derived"]  # the median of 6 runs: their extremes
    assert (throughput["value"], throughput["lower_is_better"], throughput["repetitions"], throughput["ci95"]) == (
        67.0,
        False,
        6,
        [64.0, 70.0],
    )
    assert by_key["da_scheduler_filter_mean_s_literal"]["ci95"] == [0.010, 0.014]
    cycle = by_key["allocator_cycle_s_literal"]  # allocator.json's own interval, in seconds
    assert cycle["value"] == pytest.approx(0.042) and cycle["repetitions"] == 10
    assert cycle["ci95"] == pytest.approx([ns / 1e9 for ns in ALLOCATOR["per_variant"]["literal"]["ns_per_op"]["ci95"]])
    assert by_key["allocator_cpu_derived_over_literal"]["ci95"] == ALLOCATOR["derived_over_literal"]["cpu"]["ci95"] == [1.05, 1.08]
    single = (
        "bringup_cold_s",
        "node_prepare_p99_metadata_on",
        "da_filter_mean_derived_over_literal",
        "certify_wall_s",
        "kwok_scheduling_s_p99_literal",
    )  # no samples kept: neither count nor interval
    assert all(by_key[k]["value"] is not None and by_key[k]["repetitions"] is by_key[k]["ci95"] is None for k in single)
    assert all(e["value"] is e["repetitions"] is e["ci95"] is None for e in entries({}))


def test_a_run_without_its_value_leaves_the_figure_without_samples() -> None:
    runs = [r if (r["mode"], r["throughput_pods_per_s"]) != ("literal", 64.0) else {**r, "throughput_pods_per_s": None} for r in DA_RUNS]
    by_key = {e["key"]: e for e in entries({**MEASURED, "da_scale": {**MEASURED["da_scale"], "runs": runs}})}
    assert by_key["da_throughput_pods_per_s_literal"]["repetitions"] is None
    assert by_key["da_throughput_pods_per_s_derived"]["repetitions"] == 6


def test_a_quantile_interval_takes_order_statistics_wide_enough_for_95_percent() -> None:
    assert quantile_interval([float(v) for v in range(10, 0, -1)]) == (2.0, 9.0)  # the median: 97.9% for n=10
    assert quantile_interval([float(v) for v in range(1, 21)]) == (6.0, 15.0)  # 95.9% for n=20
    assert quantile_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # even the extremes cover only 93.8%
    assert quantile_interval([float(v) for v in range(1, 7)]) == (1.0, 6.0)
    assert quantile_interval([]) is None
    assert quantile_interval([float(v) for v in range(1, 401)], 0.99) == (392.0, 400.0)  # 96.1%
    assert quantile_interval([float(v) for v in range(1, 369)], 0.99) == (360.0, 368.0)
    assert quantile_interval([float(v) for v in range(1, 368)], 0.99) is None  # even the largest misses 2.5%


def _run(figures: dict[str, float]) -> dict:
    return {"finished": "t", "commit": "c", "figures": figures}


def test_regressions_are_judged_against_the_median_of_the_last_runs(tmp_path) -> None:
    for warm in (10.0, 11.0, 100.0, 10.5):
        history.append(tmp_path, _run({"bringup_warm_s": warm, "da_throughput_pods_per_s_literal": 60.0}))
    previous = history.load(tmp_path)
    assert len(previous) == 4
    by_key = {
        c.key: c
        for c in history.compare(
            {"bringup_warm_s": 14.0, "da_throughput_pods_per_s_literal": 40.0, "certify_wall_s": 800.0}, previous, window=3, threshold=0.25
        )
    }
    warm = by_key["bringup_warm_s"]  # the last 3: 11, 100, 10.5; an outlier barely moves the median
    assert (warm.baseline, warm.baseline_range, warm.runs, round(warm.change, 3), warm.regressed) == (11.0, (10.5, 100.0), 3, 0.273, True)
    within = history.compare({"bringup_warm_s": 13.0}, previous, window=3, threshold=0.25)[0]
    assert within.key == "bringup_warm_s" and not within.regressed  # +18%: inside the threshold
    throughput = by_key["da_throughput_pods_per_s_literal"]
    assert throughput.regressed and round(throughput.change, 3) == 0.333  # higher is better: a drop is worse
    certify = by_key["certify_wall_s"]  # no history yet
    assert certify.baseline is certify.baseline_range is None and not certify.regressed


def test_a_history_written_before_figure_objects_still_loads_and_compares(tmp_path) -> None:
    (tmp_path / history.HISTORY).write_text(  # as dralab perf wrote it, with a figure since gone
        '{"finished": "2026-11-20T00:00:00+00:00", "commit": "2fc3fbc", "figures": '
        '{"bringup_warm_s": 10.0, "allocator_cycle_s_literal": 0.04, "gone_figure_s": 3.0, "certify_wall_s": null}}\n'
    )
    history.append(tmp_path, _run(values(MEASURED)))
    previous = history.load(tmp_path)
    assert previous[0]["figures"]["bringup_warm_s"] == 10.0 and previous[1]["figures"] == values(MEASURED)
    by_key = {c.key: c for c in history.compare(values(MEASURED), previous, window=5, threshold=0.25)}
    assert (by_key["bringup_warm_s"].baseline, by_key["bringup_warm_s"].baseline_range) == (10.3, (10.0, 10.6))
    assert by_key["certify_wall_s"].runs == 1 and "gone_figure_s" not in by_key


def test_the_console_line_gives_the_baseline_with_the_range_it_comes_from() -> None:
    c = history.Comparison("bringup_warm_s", 14.0, 11.0, (10.5, 100.0), 3, 0.2727, True)
    assert _line(c) == "  bringup_warm_s = 14 (baseline 11, range 10.5 to 100 over 3 runs, +27.3%) REGRESSED"
    assert _line(history.Comparison("certify_wall_s", 800.0, None, None, 0, None, False)) == "  certify_wall_s = 800"


def test_perf_html_embeds_its_plots_and_names_the_regressed_figures() -> None:
    previous = [_run(values(MEASURED)), _run(values(MEASURED) | {"bringup_warm_s": 11.0})]
    measured = MEASURED | {"bringup": {"warm": {"up_s": [30.0, 29.0, 31.0]}}}
    current = values(measured)
    comparisons = history.compare(current, previous, window=5, threshold=0.25)
    run = {"finished": "2026-11-21T00:00:00+00:00", "commit": "abc", "wall_seconds": 600.0, "errors": {}, "notes": []}
    text = page.render(run, measured, comparisons, [*previous, _run(current)], 0.25)
    assert "1 figure(s) regressed by more than 25%" in text and "bringup_warm_s" in text
    assert len(re.findall(r"<tr class='regressed'>", text)) == 1
    regressed = re.search(r"<tr class='regressed'>(.*?)</tr>", text)
    assert regressed and "<td>30 s</td><td>10.8 s (range 10.6 s to 11 s, 2 runs)</td>" in regressed.group(1)
    assert "<td>1.060 (95% CI 1.050 to 1.080, n=10)</td>" in text  # this run's interval beside its value
    images = re.findall(r"src='data:image/png;base64,([^']+)'", text)
    assert len(images) == 3  # startup and prepare, scheduler, trends
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "http" not in text.replace("http-equiv", "")  # nothing fetched
    assert len(FIGURES) == len(re.findall(r"<tr class='[^']*'><td>PF-0", text))


def test_only_selects_each_measurement_once() -> None:
    assert _selected("pf-03, PF-02,PF-05") == ["PF-02", "PF-05"]  # PF-03 comes with PF-02's pods
    assert _selected("PF-06,PF-07,PF-03") == ["PF-02", "PF-07"]  # so does PF-06, the prepare path
    assert _selected(None) == ["PF-01", "PF-02", "PF-04", "PF-05", "PF-07", "PF-08"]
    assert _selected(",".join(f"PF-0{i}" for i in range(1, 9))) == _selected(None)


@pytest.mark.parametrize("only", ["PF-09", "PF-01,DA-11", " , "])
def test_only_names_what_it_takes_when_given_something_else(only: str) -> None:
    from basics.errors import BadInput

    with pytest.raises(
        BadInput,
        match=r"choose from PF-01, PF-02, PF-03, PF-04, PF-05, PF-06, PF-07, PF-08 "
        r"\(PF-03 and PF-06 are measured by PF-02's pod startups\)",
    ):
        _selected(only)


def test_only_takes_every_pf_id_of_the_requirements() -> None:
    spec = Path(__file__).resolve().parents[3] / "shared" / "spec" / "requirements.md"
    if not spec.exists():
        pytest.skip(f"no {spec} beside the repository")
    assert sorted(STAGE_OF) == sorted(set(re.findall(r"^- (PF-\d+) ", spec.read_text(), re.M)))
