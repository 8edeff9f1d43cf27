"""Waiting with a timeout that reports what was awaited and what was last seen."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from clusters.errors import LabBroken

T = TypeVar("T")

# What of the lab is down, asked at most this often while waiting: waiting on a dead lab can end
# in no verdict, so the wait ends at once (ERROR, with the diagnosis), not after its timeout.
LAB_CHECK_INTERVAL = 2.0
_lab_down: Callable[[], list[str]] = list


class WaitTimeout(AssertionError):
    pass


def wait_for(what: str, check: Callable[[], T], timeout: float = 60, interval: float = 0.5) -> T:
    """Return the first truthy result of `check()`; exceptions count as "not yet", except an
    AssertionError (a DriverFailure, say), which is a verdict already, and a LabBroken (no verdict
    can come of waiting on)."""
    start = time.monotonic()
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
            down = _lab_down()
            if down:
                raise LabBroken(f"stopped waiting for {what}: " + "\n".join(down))
        if time.monotonic() - start > timeout:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {str(last)[:2000]}")
        time.sleep(interval)


@contextmanager
def ending_when_the_lab_is_down(probe: Callable[[], list[str]]) -> Iterator[None]:
    """Within: every wait ends as soon as `probe` names something of the lab that is down."""
    global _lab_down
    previous, _lab_down = _lab_down, probe
    try:
        yield
    finally:
        _lab_down = previous
