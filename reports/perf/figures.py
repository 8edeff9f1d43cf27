"""Every figure the performance report carries: its requirement, what it is, its unit, which
way is better, and where in the measurements it comes from."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Figure:
    key: str
    requirement: str
    label: str
    unit: str
    get: Callable[[dict[str, Any]], float | None]
    lower_is_better: bool = True


def _lookup(measured: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = measured
    for k in keys:
        if not isinstance(value, dict) or k not in value:
            return None
        value = value[k]
    return value


def _path(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    def get(measured: dict[str, Any]) -> float | None:
        value = _lookup(measured, keys)
        return value if isinstance(value, (int, float)) else None
    return get


def _median(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    def get(measured: dict[str, Any]) -> float | None:
        value = _lookup(measured, keys)
        return statistics.median(value) if isinstance(value, list) and value else None
    return get


def _seconds_of_ns(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    get = _path(*keys)
    return lambda measured: None if (ns := get(measured)) is None else ns / 1e9


def _startup(mode: str, source: str, stat: str, label: str) -> Figure:
    short = "on" if mode == "metadata on" else "off"
    return Figure(f"{source}_{stat}_metadata_{short}", "PF-02" if source == "pod_startup" else "PF-03",
                  f"{label} {stat}, metadata {short}", "s",
                  _path("pod_startup", mode, "create_to_running_s" if source == "pod_startup" else
                        "node_prepare_resources_s", stat))


def _scheduler(mode: str, figure: str, label: str, unit: str, lower_is_better: bool = True) -> Figure:
    return Figure(f"da_{figure}_{mode}", "PF-04", f"{label}, {mode}", unit,
                  _path("da_scale", "summary", "per_mode", mode, figure, "median"), lower_is_better)


def _kwok(mode: str, keys: tuple[str, ...], label: str, unit: str, lower_is_better: bool = True) -> Figure:
    return Figure(f"kwok_{'_'.join(keys)}_{mode}", "PF-08", f"{label} on kwok nodes, {mode}", unit,
                  _path("kwok_scale", "per_mode", mode, *keys), lower_is_better)


FIGURES: tuple[Figure, ...] = (
    Figure("bringup_warm_s", "PF-01", "lab bring-up, warm (2 nodes, dgx-like), median", "s", _median("bringup", "warm", "up_s")),
    Figure("bringup_cold_s", "PF-01", "lab bring-up, cold (provision into an empty cache + first up)", "s",
           _path("bringup", "cold", "total_s")),
    *(_startup(mode, "pod_startup", stat, "pod create to Running")
      for mode in ("metadata on", "metadata off") for stat in ("p50", "p99")),
    *(_startup(mode, "node_prepare", stat, "kubelet PrepareResources")
      for mode in ("metadata on", "metadata off") for stat in ("mean", "p99")),
    *(f for mode in ("literal", "derived") for f in (
        _scheduler(mode, "throughput_pods_per_s", "scheduler throughput", "pods/s", lower_is_better=False),
        _scheduler(mode, "scheduler_filter_mean_s", "scheduler Filter mean", "s"),
        _scheduler(mode, "scheduler_sli_p99_s", "pod creation to bound p99 (scheduler SLI)", "s"))),
    Figure("da_filter_mean_derived_over_literal", "PF-04", "Filter mean, derived / literal (KEP objective <= 1.05)",
           "ratio", _path("da_scale", "summary", "derived_over_literal", "scheduler_filter_mean_s")),
    *(Figure(f"allocator_cycle_s_{v}", "PF-07", f"allocator, one pod on every node, {v} attributes, median",
             "s", _seconds_of_ns("allocator", "per_variant", v, "ns_per_op", "median")) for v in ("literal", "derived")),
    *(Figure(f"allocator_{unit}_derived_over_literal", "PF-07", f"allocator {label}, derived / literal, median",
             "ratio", _path("allocator", "derived_over_literal", unit, "median"))
      for unit, label in (("cpu", "CPU time"), ("wall", "wall time"))),
    Figure("certify_wall_s", "PF-05", "full certification wall time", "s", _path("certify", "wall_seconds")),
    Figure("kwok_nodes_ready_s", "PF-08", "kwok nodes Ready, from their creation (LAB-09)", "s",
           _path("kwok_scale", "kwok_nodes_ready_s")),
    Figure("kwok_lab_up_s", "PF-08", "lab bring-up with the kwok nodes", "s", _path("kwok_scale", "lab_up_s")),
    *(f for mode in ("literal", "derived") for f in (
        _kwok(mode, ("throughput_pods_per_s",), "scheduler throughput", "pods/s", lower_is_better=False),
        _kwok(mode, ("throughput_pods_per_s_per_cpu",), "scheduler throughput per CPU", "pods/s", lower_is_better=False),
        _kwok(mode, ("scheduling_s", "p50"), "pod create to bound p50", "s"),
        _kwok(mode, ("scheduling_s", "p99"), "pod create to bound p99", "s"),
        _kwok(mode, ("create_to_running_s", "p99"), "pod create to Running (kwok) p99", "s"))),
)


def values(measured: dict[str, Any]) -> dict[str, float | None]:
    return {f.key: f.get(measured) for f in FIGURES}
