"""How fast a lab goes now, from what it shows of itself (issue 55): the API server's round trip
and the kubelet's own pod start times (a pod's scheduling to its last container's start). Waits on
what the driver must do stretch by the lab's slowness, so a busy machine does not turn into the
driver's FAIL; past a bound, a wait that ran out says the lab was too slow to judge."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

# What a wait's timeout was written for, with room above an idle lab on 2 cores (measured there: API
# round trip 1-2 ms, pod start median 1 s; docs/performance.md, "On a busy machine").
REFERENCE_API_MS = 25.0
REFERENCE_POD_START_S = 2.0
# Slower than this many times the reference, a wait that ran out judges the lab, not the driver.
SLOWEST_JUDGED = 4.0
# Pod starts older than this say how the lab went then, not now.
RECENT = timedelta(minutes=5)


@dataclass(frozen=True)
class Pace:
    api_ms: float
    pod_start_s: float | None  # the median over recent pod starts; None: no pod started recently
    pods: int

    def factor(self) -> float:
        """How many times slower than the reference the lab goes (1: as fast or faster)."""
        ratios = [self.api_ms / REFERENCE_API_MS]
        if self.pod_start_s is not None:
            ratios.append(self.pod_start_s / REFERENCE_POD_START_S)
        return max(1.0, *ratios)

    def too_slow(self) -> bool:
        return self.factor() > SLOWEST_JUDGED

    def __str__(self) -> str:
        starts = (
            f"pod start median {self.pod_start_s:.1f}s over {self.pods} recent pod(s)"
            if self.pod_start_s is not None
            else "no pod started in the last 5 minutes"
        )
        return (
            f"API round trip {self.api_ms:.0f}ms, {starts} (an idle lab: {REFERENCE_API_MS:.0f}ms, "
            f"{REFERENCE_POD_START_S:.0f}s; {self.factor():.1f}x slower, judged up to {SLOWEST_JUDGED:.0f}x)"
        )


def pod_start_seconds(pod: Any) -> float | None:
    """The kubelet's time from the pod's scheduling to its last container's start, if all started."""
    scheduled = next((c.last_transition_time for c in pod.status.conditions or [] if c.type == "PodScheduled" and c.status == "True"), None)
    statuses = pod.status.container_statuses or []
    started = [s.state.running.started_at for s in statuses if s.state and s.state.running]
    # A container started again tells of its restart, not of how long the pod took to start.
    if scheduled is None or not statuses or len(started) != len(statuses) or any(s.restart_count for s in statuses):
        return None
    return max(0.0, (max(started) - scheduled).total_seconds())


def measure(api: Any, nodes: list[str], now: datetime | None = None) -> Pace:
    """The pace of the cluster `api` reaches: the quickest of a few cheap requests (the first may pay
    for a connection), and the start times of the recent pods of its kubelet-backed `nodes` (listed
    node by node: a benchmark's thousands of pods on kwok nodes are neither listed nor counted)."""
    from kubernetes import client

    def round_trip_ms() -> float:
        began = time.monotonic()
        client.VersionApi(api).get_code(_request_timeout=5)
        return (time.monotonic() - began) * 1000

    api_ms = min(round_trip_ms() for _ in range(3))
    core = client.CoreV1Api(api)
    pods = [
        p for node in nodes for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}", _request_timeout=10).items
    ]
    since = (now or datetime.now(timezone.utc)) - RECENT
    starts = [s for p in pods if p.status.start_time and p.status.start_time >= since for s in [pod_start_seconds(p)] if s is not None]
    return Pace(round(api_ms, 1), statistics.median(starts) if starts else None, len(starts))


class Gauge:
    """A lab's pace, measured again once the last measure is older than `max_age` seconds (waits ask
    often) or when asked for a fresh one; None while the lab does not answer (whether it is down is
    for the lab's own probes to say)."""

    def __init__(self, api: Callable[[], Any], nodes: list[str], max_age: float = 15.0) -> None:
        self._api, self._nodes, self._max_age = api, nodes, max_age
        self._client: Any = None  # one connection for all measures: a new one's handshake is no pace
        self._pace: Pace | None = None
        self._at: float | None = None

    def __call__(self, fresh: bool = False) -> Pace | None:
        if fresh or self._at is None or time.monotonic() - self._at > self._max_age:
            try:
                self._client = self._client or self._api()
                self._pace = measure(self._client, self._nodes)
            except Exception:  # no answer: no pace to stretch by
                self._client, self._pace = None, None
            self._at = time.monotonic()
        return self._pace


def slowest(paces: list[Pace | None]) -> Pace | None:
    known = [p for p in paces if p is not None]
    return max(known, key=Pace.factor) if known else None
