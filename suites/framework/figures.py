"""Summary figures of repeated measurements: nearest-rank percentiles, the distribution-free
interval of a quantile, and the spread across runs."""

from __future__ import annotations

import itertools
import math
import statistics


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50 and p99 by nearest rank (None without values)."""
    if not values:
        return {"p50": None, "p99": None}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]  # noqa: E731
    return {"p50": pick(0.50), "p99": pick(0.99)}


def quantile_interval(values: list[float], q: float = 0.5, confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the q-quantile (0 < q < 1): the order statistics x(l) and x(u),
    where how many of the n values fall below the quantile is Binomial(n, q), l is the highest rank
    and u the lowest whose tail on its side stays within (1 - confidence) / 2. For the median of 10
    values at 95%: the 2nd and 9th (covering 97.9%). None when there are too few values for either
    end (the median needs 6 at 95%, a p99 368 for its upper end)."""
    ordered, n = sorted(values), len(values)
    tail = (1 - confidence) / 2
    below = [
        math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * math.log(q) + (n - j) * math.log1p(-q))
        for j in range(n + 1)
    ]  # P(j values below)
    at_most = list(itertools.accumulate(below))  # P(at most j below)
    at_least = list(itertools.accumulate(reversed(below)))[::-1]  # P(at least j below), summed from its small end
    low = sum(1 for j in range(n) if at_most[j] <= tail)
    high = n + 1 - sum(1 for j in range(1, n + 1) if at_least[j] <= tail)
    return (ordered[low - 1], ordered[high - 1]) if low and high <= n else None


def spread(values: list[float]) -> float | None:
    """(max - min) / median across runs; None for fewer than two runs or a zero median."""
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)
