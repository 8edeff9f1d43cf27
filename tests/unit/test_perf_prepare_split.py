"""PF-06: the split of NodePrepareResources between two scrapes, from the kubelet's histograms and
the phases a driver serves in dralab_driver_prepare_seconds."""

from __future__ import annotations

import pytest

from clusters.local import metrics
from reports.perf import prepare_split


def _driver_text(observed: dict[str, list[float]]) -> str:
    """A driver's /metrics with these observations per phase, in Prometheus' text format."""
    bounds = [0.0005 * 2**i for i in range(16)]
    lines = [f"# TYPE {prepare_split.DRIVER_PHASES} histogram"]
    for phase, values in observed.items():
        for le in bounds:
            lines.append(f'{prepare_split.DRIVER_PHASES}_bucket{{phase="{phase}",le="{le}"}} {sum(v <= le for v in values)}')
        lines.append(f'{prepare_split.DRIVER_PHASES}_bucket{{phase="{phase}",le="+Inf"}} {len(values)}')
        lines.append(f'{prepare_split.DRIVER_PHASES}_sum{{phase="{phase}"}} {sum(values)}')
        lines.append(f'{prepare_split.DRIVER_PHASES}_count{{phase="{phase}"}} {len(values)}')
    return "\n".join(lines) + "\n"


def _snapshot(text: str, kubelet: metrics.Histogram, pod: str = "driver-a") -> prepare_split.Snapshot:
    snap = {"kubelet_prepare_resources": kubelet, "kubelet_grpc_node_prepare_resources": kubelet}
    for phase in ("total", *prepare_split.PHASES):
        snap[f"driver_{phase}@{pod}"] = metrics.histogram(text, prepare_split.DRIVER_PHASES, phase=phase)
    return snap


def test_the_split_is_what_was_observed_between_the_scrapes() -> None:
    empty = metrics.Histogram({})
    before = _snapshot(_driver_text({"total": [0.5], "metadata_write": [0.4]}), empty)  # an earlier call
    after = _snapshot(
        _driver_text({"total": [0.5, 0.030, 0.040], "metadata_write": [0.4, 0.010, 0.010], "api_write": [0.012, 0.020]}),
        metrics.Histogram({0.1: 2.0, float("inf"): 2.0}, 0.09, 2.0),
    )
    split = prepare_split.split(prepare_split.between(before, after))
    phases = split["driver_phases"]
    assert phases["total"]["count"] == 2 and phases["total"]["mean"] == pytest.approx(0.035)
    assert phases["metadata_write"]["mean"] == pytest.approx(0.010)
    assert split["metadata_write_share"] == pytest.approx(0.020 / 0.070)
    assert 0.016 < phases["total"]["p99"] <= 0.064  # within the bucket the observations fell in
    assert split["kubelet_grpc_node_prepare_resources"]["mean"] == pytest.approx(0.045)
    assert phases["checkpoint"]["count"] == 0  # a phase the driver did not report


def test_a_driver_without_phases_gets_the_kubelets_figures_only() -> None:
    kubelet = metrics.Histogram({0.1: 3.0, float("inf"): 3.0}, 0.12, 3.0)
    empty = metrics.Histogram({})
    split = prepare_split.split(prepare_split.between(_snapshot("", empty), _snapshot("", kubelet)))
    assert split["driver_phases"] is None and "metadata_write_share" not in split
    assert split["kubelet_prepare_resources"]["mean"] == pytest.approx(0.04)
    assert split["kubelet_prepare_resources"]["p99"] <= prepare_split.KUBELET_SMALLEST_BUCKET_S


def test_rounds_on_separate_deployments_add_up_and_a_replaced_pod_loses_nothing() -> None:
    empty = metrics.Histogram({})
    old_pod = _snapshot(_driver_text({"total": [0.5, 0.5]}), empty, pod="driver-old")
    first = _snapshot(_driver_text({"total": [0.010]}), empty, pod="driver-new")  # the old one went meanwhile
    second = _snapshot(_driver_text({"total": [0.010, 0.020]}), empty, pod="driver-new")
    observed = prepare_split.together(prepare_split.between(old_pod, first), prepare_split.between(first, second))
    total = prepare_split.split(observed)["driver_phases"]["total"]
    assert total["count"] == 2 and total["mean"] == pytest.approx(0.015)
