"""When a driver's ResourceSlices have settled (DEP-01): a driver may publish an empty slice first
and its devices a moment later (an SR-IOV driver does, once its VFs are up), or a pool across
several slices one after the other. Coming up means every node has the driver's slices, every pool
is complete at its newest generation, and what each node publishes has stopped changing: non-empty,
or empty for longer than a driver takes to find its devices."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable

# Each node's device count unchanged this long: the driver has published what it found.
SETTLE_SECONDS = 3.0
# A node whose slices stay empty this long has no devices of the driver (its hardware lacks them).
EMPTY_GRACE_SECONDS = 30.0


def _pool_gaps(slices: list[Any]) -> list[str]:
    """Pools whose newest generation does not have all its resourceSliceCount slices yet."""
    pools: dict[tuple[str | None, str], list[Any]] = defaultdict(list)
    for s in slices:
        pools[(s.spec.node_name, s.spec.pool.name)].append(s.spec.pool)
    gaps = []
    for (_, name), seen in sorted(pools.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        newest = max(p.generation for p in seen)
        current = [p for p in seen if p.generation == newest]
        if len(current) < current[0].resource_slice_count:
            gaps.append(f"pool {name}: {len(current)} of {current[0].resource_slice_count} slices of generation {newest}")
    return gaps


class Settling:
    """One driver's publication on `nodes`, followed across polls (`missing`, about once a second)."""

    def __init__(self, driver: str, nodes: list[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.driver, self.nodes, self.clock = driver, nodes, clock
        self._counts: dict[str, int] | None = None
        self._since = 0.0  # when the counts last changed
        self._first_slice: dict[str, float] = {}

    def missing(self, slices: list[Any]) -> list[str]:
        """What keeps the publication from being settled, given the driver's slices now; [] once it is."""
        now = self.clock()
        counts = {n: 0 for n in self.nodes}
        for s in slices:
            if s.spec.node_name in counts:
                counts[s.spec.node_name] += len(s.spec.devices or [])
                self._first_slice.setdefault(s.spec.node_name, now)
        if counts != self._counts:
            self._counts, self._since = counts, now
        found = [f"no ResourceSlice of {self.driver} for node {n}" for n in self.nodes if n not in self._first_slice]
        found += [f"{self.driver} {gap}" for gap in _pool_gaps(slices)]
        found += [
            f"{self.driver} publishes no device on node {n} yet (an empty slice since {now - self._first_slice[n]:.0f}s)"
            for n, c in counts.items()
            if c == 0 and n in self._first_slice and now - self._first_slice[n] < EMPTY_GRACE_SECONDS
        ]
        if not found and now - self._since < SETTLE_SECONDS:
            found.append(
                f"{self.driver}'s devices per node changed {now - self._since:.0f}s ago: "
                + ", ".join(f"{n} {c}" for n, c in counts.items())
            )
        return found
