"""Waiting with a timeout that reports what was awaited and what was last seen, watched by what the
lab says of itself: a wait on a dead lab ends at once (no verdict can come of it), and a timeout
stretches by how much slower than an idle lab the lab goes (clusters/pace.py), so that a busy
machine is not the driver's FAIL; past the slowest pace judged, running out is the lab's."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

from basics.errors import LabBroken
from clusters.pace import SLOWEST_JUDGED, Pace

T = TypeVar("T")

# What of the lab is down, asked at most this often while waiting.
LAB_CHECK_INTERVAL = 2.0


class WaitTimeout(AssertionError):
    pass


class TooSlowToJudge(WaitTimeout):
    """A wait ran out on a lab slower than SLOWEST_JUDGED times an idle one: the lab's, not the driver's.
    Still a WaitTimeout: a check waiting for something not to happen takes the timeout as its answer."""


@dataclass(frozen=True)
class LabWatch:
    down: Callable[[], list[str]] = list  # the lab's parts that are down, with their evidence
    pace: Callable[[bool], Pace | None] = field(default=lambda fresh: None)  # fresh=False: a recent one will do


_watch = LabWatch()


def wait_for(what: str, check: Callable[[], T], timeout: float = 60, interval: float = 0.5) -> T:
    """Return the first truthy result of `check()`; exceptions count as "not yet", except an
    AssertionError (a DriverFailure, say), which is a verdict already, and a LabBroken (no verdict
    can come of waiting on)."""
    start = time.monotonic()
    pace = _watch.pace(False)
    stretch = min(pace.factor(), SLOWEST_JUDGED) if pace else 1.0
    last: object = None
    next_lab_check = start + LAB_CHECK_INTERVAL
    while True:
        try:
            result = check()
            if result:
                return result
            last = result
        except (AssertionError, LabBroken):
            raise
        except Exception as e:  # not there yet (404, connection refused, ...)
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= next_lab_check:
            next_lab_check = time.monotonic() + LAB_CHECK_INTERVAL
            down = _watch.down()
            if down:
                raise LabBroken(f"stopped waiting for {what}: " + "\n".join(down))
        if time.monotonic() - start > timeout * stretch:
            _ran_out(what, timeout * stretch, stretch, str(last)[:2000])
        time.sleep(interval)


def _ran_out(what: str, waited: float, stretch: float, last: str) -> None:
    message = f"timed out after {waited:.0f}s waiting for {what}; last seen: {last}"
    pace = _watch.pace(True)
    if pace is not None and pace.too_slow():
        raise TooSlowToJudge(f"{message}\nthe lab was too slow to judge the driver by: {pace}")
    if stretch > 1:
        message += f"\n(the timeout was stretched {stretch:.1f}x for the lab's pace; now: {pace or 'no answer from the lab'})"
    raise WaitTimeout(message)


@contextmanager
def watching(watch: LabWatch) -> Iterator[None]:
    """Within: every wait is watched by `watch`."""
    global _watch
    previous, _watch = _watch, watch
    try:
        yield
    finally:
        _watch = previous
