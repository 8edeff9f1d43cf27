"""Every figure the performance report carries: its requirement, what it is, its unit, which
way is better, and where in the measurements it comes from.

A figure measured with repetitions also says where its samples are and which quantile of them its
value is; its 95% interval is then the distribution-free order-statistic interval of that quantile
(suites.framework.figures.quantile_interval, the one PF-07's allocator.json uses), no bootstrap:
the median for PF-01's warm bring-ups, PF-04's runs and PF-07's benchmark runs, p50 and p99 for
PF-02's pods. Too few samples for an interval (a median of fewer than 6, a p99 of fewer than 368)
give none rather than a falsely narrow one."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

from suites.framework.figures import quantile_interval


@dataclass(frozen=True)
class Figure:
    key: str
    requirement: str
    label: str
    unit: str
    get: Callable[[dict[str, Any]], float | None]  # in the measurement's unit
    lower_is_better: bool = True
    samples: Callable[[dict[str, Any]], list[float] | None] | None = None  # what the value summarises
    quantile: float = 0.5  # which quantile of the samples the value is
    measured_per_unit: float = 1.0  # the measurement's units in one of the figure's (1e9: ns measured, s shown)

    def value(self, measured: dict[str, Any]) -> float | None:
        value = self.get(measured)
        return None if value is None else value / self.measured_per_unit

    def entry(self, measured: dict[str, Any]) -> dict[str, Any]:
        """The figure as perf.json lists it: what it is, its value, and how many samples that
        value summarises with its 95% interval (both None where it has no samples)."""
        value = self.value(measured)
        samples = self.samples(measured) if self.samples and value is not None else None
        interval = quantile_interval(samples, self.quantile) if samples else None
        return {
            "key": self.key,
            "requirement": self.requirement,
            "label": self.label,
            "unit": self.unit,
            "value": value,
            "lower_is_better": self.lower_is_better,
            "repetitions": len(samples) if samples else None,
            "ci95": [end / self.measured_per_unit for end in interval] if interval else None,
        }


def _lookup(measured: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = measured
    for k in keys:
        if not isinstance(value, dict) or k not in value:
            return None
        value = value[k]
    return value


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) else None


def _numbers(values: Any) -> list[float] | None:
    """A non-empty list of numbers, else None (a run that did not give its value spoils the lot)."""
    ok = isinstance(values, list) and values and all(_number(v) is not None for v in values)
    return values if ok else None


def _path(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda measured: _number(_lookup(measured, keys))


def _samples(*keys: str) -> Callable[[dict[str, Any]], list[float] | None]:
    return lambda measured: _numbers(_lookup(measured, keys))


def _median(samples: Callable[[dict[str, Any]], list[float] | None]) -> Callable[[dict[str, Any]], float | None]:
    return lambda measured: None if (found := samples(measured)) is None else statistics.median(found)


_QUANTILES = {"p50": 0.5, "p99": 0.99}


def _startup(mode: str, source: str, stat: str, label: str) -> Figure:
    """PF-02 from the pods' create to Running, whose samples are kept (its p50 and p99 get an
    interval), and PF-03 from kubelet's PrepareResources histogram, whose observations are not."""
    short = "on" if mode == "metadata on" else "off"
    pods = source == "pod_startup"
    where = ("pod_startup", mode, "create_to_running_s" if pods else "node_prepare_resources_s")
    return Figure(
        f"{source}_{stat}_metadata_{short}",
        "PF-02" if pods else "PF-03",
        f"{label} {stat}, metadata {short}",
        "s",
        _path(*where, stat),
        samples=_samples(*where, "samples") if pods else None,
        quantile=_QUANTILES.get(stat, 0.5),
    )


def _prepare(mode: str, keys: tuple[str, ...], label: str, unit: str = "s", sequential: bool = False) -> Figure:
    """PF-06 from prepare_split: the kubelet's gRPC call to the driver, and the phases the driver
    serves (None for a driver that serves none); in the burst of pods, or one pod at a time."""
    short = "on" if mode == "metadata on" else "off"
    name = "_".join(k for k in keys if k != "driver_phases")
    return Figure(
        f"prepare_{name}{'_sequential' if sequential else ''}_metadata_{short}",
        "PF-06",
        f"{label}, {'one pod at a time' if sequential else 'pods at once'}, metadata {short}",
        unit,
        _path("pod_startup", mode, "prepare_split_sequential" if sequential else "prepare_split", *keys),
    )


def _per_run(mode: str, keys: tuple[str, ...]) -> Callable[[dict[str, Any]], list[float] | None]:
    """One mode's value from each run of the DA scale harness."""

    def get(measured: dict[str, Any]) -> list[float] | None:
        runs = _lookup(measured, ("da_scale", "runs"))
        return _numbers([_lookup(r, keys) for r in runs if r.get("mode") == mode] if isinstance(runs, list) else None)

    return get


def _scheduler(mode: str, figure: str, per_run: tuple[str, ...], label: str, unit: str, lower_is_better: bool = True) -> Figure:
    """PF-04: the median over runs of `figure` (scale.summarise's name), found at `per_run` in each run."""
    return Figure(
        f"da_{figure}_{mode}",
        "PF-04",
        f"{label}, {mode}",
        unit,
        _path("da_scale", "summary", "per_mode", mode, figure, "median"),
        lower_is_better,
        samples=_per_run(mode, per_run),
    )


def _allocator(keys: tuple[str, ...], key: str, label: str, unit: str, measured_per_unit: float = 1.0) -> Figure:
    """PF-07: a median over the benchmark's runs, as allocator.json has it with its samples."""
    return Figure(
        key,
        "PF-07",
        label,
        unit,
        _path("allocator", *keys, "median"),
        samples=_samples("allocator", *keys, "samples"),
        measured_per_unit=measured_per_unit,
    )


def _kwok(mode: str, keys: tuple[str, ...], label: str, unit: str, lower_is_better: bool = True) -> Figure:
    return Figure(
        f"kwok_{'_'.join(keys)}_{mode}",
        "PF-08",
        f"{label} on kwok nodes, {mode}",
        unit,
        _path("kwok_scale", "per_mode", mode, *keys),
        lower_is_better,
    )


_WARM = _samples("bringup", "warm", "up_s")

FIGURES: tuple[Figure, ...] = (
    Figure("bringup_warm_s", "PF-01", "lab bring-up, warm (2 nodes, dgx-like), median", "s", _median(_WARM), samples=_WARM),
    Figure(
        "bringup_cold_s", "PF-01", "lab bring-up, cold (provision into an empty cache + first up)", "s", _path("bringup", "cold", "total_s")
    ),
    *(_startup(mode, "pod_startup", stat, "pod create to Running") for mode in ("metadata on", "metadata off") for stat in ("p50", "p99")),
    *(
        _startup(mode, "node_prepare", stat, "kubelet PrepareResources")
        for mode in ("metadata on", "metadata off")
        for stat in ("mean", "p99")
    ),
    *(
        f
        for mode in ("metadata on", "metadata off")
        for sequential in (False, True)
        for f in (
            _prepare(
                mode,
                ("kubelet_grpc_node_prepare_resources", "mean"),
                "kubelet's NodePrepareResources call to the driver, mean",
                sequential=sequential,
            ),
            *(
                _prepare(mode, ("driver_phases", "total", stat), f"NodePrepareResources in the driver {stat}", sequential=sequential)
                for stat in ("p50", "p99")
            ),
        )
    ),
    *(
        f
        for sequential in (False, True)
        for f in (
            *(
                _prepare(
                    "metadata on", ("driver_phases", "metadata_write", stat), f"metadata write (framework) {stat}", sequential=sequential
                )
                for stat in ("p50", "p99")
            ),
            _prepare(
                "metadata on",
                ("metadata_write_share",),
                "metadata write's share of the driver's prepare time",
                "ratio",
                sequential=sequential,
            ),
        )
    ),
    *(
        f
        for mode in ("literal", "derived")
        for f in (
            _scheduler(mode, "throughput_pods_per_s", ("throughput_pods_per_s",), "scheduler throughput", "pods/s", lower_is_better=False),
            _scheduler(mode, "scheduler_filter_mean_s", ("latency_s", "scheduler_filter", "mean"), "scheduler Filter mean", "s"),
            _scheduler(
                mode, "scheduler_sli_p99_s", ("latency_s", "scheduler_sli", "p99"), "pod creation to bound p99 (scheduler SLI)", "s"
            ),
        )
    ),
    Figure(
        "da_filter_mean_derived_over_literal",
        "PF-04",
        "Filter mean, derived / literal (KEP objective <= 1.05)",
        "ratio",
        _path("da_scale", "summary", "derived_over_literal", "scheduler_filter_mean_s"),
    ),
    *(
        _allocator(
            ("per_variant", v, "ns_per_op"),
            f"allocator_cycle_s_{v}",
            f"allocator, one pod on every node, {v} attributes, median",
            "s",
            measured_per_unit=1e9,
        )
        for v in ("literal", "derived")
    ),
    *(
        _allocator(
            ("derived_over_literal", unit),
            f"allocator_{unit}_derived_over_literal",
            f"allocator {label}, derived / literal, median",
            "ratio",
        )
        for unit, label in (("cpu", "CPU time"), ("wall", "wall time"))
    ),
    Figure("certify_wall_s", "PF-05", "full certification wall time", "s", _path("certify", "wall_seconds")),
    Figure("kwok_nodes_ready_s", "PF-08", "kwok nodes Ready, from their creation (LAB-09)", "s", _path("kwok_scale", "kwok_nodes_ready_s")),
    Figure("kwok_lab_up_s", "PF-08", "lab bring-up with the kwok nodes", "s", _path("kwok_scale", "lab_up_s")),
    *(
        f
        for mode in ("literal", "derived")
        for f in (
            _kwok(mode, ("throughput_pods_per_s",), "scheduler throughput", "pods/s", lower_is_better=False),
            _kwok(mode, ("throughput_pods_per_s_per_cpu",), "scheduler throughput per CPU", "pods/s", lower_is_better=False),
            _kwok(mode, ("scheduling_s", "p50"), "pod create to bound p50", "s"),
            _kwok(mode, ("scheduling_s", "p99"), "pod create to bound p99", "s"),
            _kwok(mode, ("create_to_running_s", "p99"), "pod create to Running (kwok) p99", "s"),
        )
    ),
)


def values(measured: dict[str, Any]) -> dict[str, float | None]:
    """Key -> value: what the history keeps of a run and compares."""
    return {f.key: f.value(measured) for f in FIGURES}


def entries(measured: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure as perf.json lists it (Figure.entry)."""
    return [f.entry(measured) for f in FIGURES]
