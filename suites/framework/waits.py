"""Waiting with a timeout that reports what was awaited and what was last seen, watched by what the
lab says of itself: a wait on a dead lab ends at once (no verdict can come of it), and a timeout
stretches by how much slower than an idle lab the lab goes (clusters/pace.py), so that a busy
machine is not the driver's FAIL; past the slowest pace judged, running out is the lab's.

Two waits, by whose the awaited thing is (docs/verdicts.md): `driver_must` for what the driver
under test must bring about within a bound (its timeout is the driver's FAIL), `wait_for` for
everything else, the lab's and the harness's own steps (its timeout is an ERROR)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

from basics.errors import DralabError, LabBroken
from clusters.pace import SLOWEST_JUDGED, Pace
from suites.framework.verdicts import DriverFailure

T = TypeVar("T")

# What of the lab is down, asked at most this often while waiting.
LAB_CHECK_INTERVAL = 2.0


class WaitTimeout(Exception):
    """A wait ran out. Of itself no verdict on the driver (ERROR): the lab or the harness did not
    get there. A check waiting for something not to happen catches it: the timeout is its answer."""


class DriverTimedOut(WaitTimeout, DriverFailure):
    """The driver did not bring about within the bound what it must (`driver_must`): its FAIL. A
    check that judges what is left once the driver's time is up catches this one only, so that a
    lab too slow to judge by stays an ERROR."""


class TooSlowToJudge(WaitTimeout):
    """A wait, the driver's too, ran out on a lab slower than SLOWEST_JUDGED times an idle one: the
    lab's, not the driver's (ERROR). Its first line says how slow the lab was."""


@dataclass(frozen=True)
class LabWatch:
    down: Callable[[], list[str]] = list  # the lab's parts that are down, with their evidence
    pace: Callable[[bool], Pace | None] = field(default=lambda fresh: None)  # fresh=False: a recent one will do


_watch = LabWatch()


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 60, interval: float = 0.5) -> T:
    """Return the first truthy result of `check()`, else WaitTimeout: for the lab's and the
    harness's steps (an object the harness created, a namespace gone, a component ready) and for
    something that must not happen. Exceptions count as "not yet", except an AssertionError (a
    DriverFailure, say), which is a verdict already, a timeout of a wait within, and a LabBroken or
    other DralabError (no verdict can come of waiting on)."""
    return _wait(what, check, timeout, interval, WaitTimeout, "")


def driver_must(what: str, check: Callable[[], T | None], within: float = 60, interval: float = 0.5) -> T:
    """As wait_for, for what the driver under test must bring about `within` seconds (stretched by
    the lab's pace): publish its devices, prepare a claim so that the pod runs, clean up. Running out
    is DriverTimedOut, the driver's FAIL, unless the lab was too slow to judge by (TooSlowToJudge)."""
    return _wait(what, check, within, interval, DriverTimedOut, " (the driver's obligation)")


def _wait(what: str, check: Callable[[], T | None], timeout: float, interval: float, timed_out: type[WaitTimeout], whose: str) -> T:
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
        except (AssertionError, WaitTimeout, DralabError):
            raise
        except Exception as e:  # not there yet (404, connection refused, ...)
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= next_lab_check:
            next_lab_check = time.monotonic() + LAB_CHECK_INTERVAL
            down = _watch.down()
            if down:
                raise LabBroken(f"stopped waiting for {what}: " + "\n".join(down))
        if time.monotonic() - start > timeout * stretch:
            raise _ran_out(f"{what}{whose}", timeout * stretch, stretch, str(last)[:2000], timed_out)
        time.sleep(interval)


def _ran_out(what: str, waited: float, stretch: float, last: str, timed_out: type[WaitTimeout]) -> WaitTimeout:
    message = f"timed out after {waited:.0f}s waiting for {what}; last seen: {last}"
    pace = _watch.pace(True)
    if pace is not None and pace.too_slow():
        return TooSlowToJudge(f"the lab was too slow to judge the driver by: {pace}\n{message}")
    if stretch > 1:
        message += f"\n(the timeout was stretched {stretch:.1f}x for the lab's pace; now: {pace or 'no answer from the lab'})"
    return timed_out(message)


@contextmanager
def watching(watch: LabWatch) -> Iterator[None]:
    """Within: every wait is watched by `watch`."""
    global _watch
    previous, _watch = _watch, watch
    try:
        yield
    finally:
        _watch = previous
