"""Summary figures of repeated measurements: nearest-rank percentiles, and the spread across runs."""

from __future__ import annotations

import statistics


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50 and p99 by nearest rank (None without values)."""
    if not values:
        return {"p50": None, "p99": None}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]  # noqa: E731
    return {"p50": pick(0.50), "p99": pick(0.99)}


def spread(values: list[float]) -> float | None:
    """(max - min) / median across runs; None for fewer than two runs or a zero median."""
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)
