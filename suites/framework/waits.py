"""Waiting with a timeout that reports what was awaited and what was last seen."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


def wait_for(what: str, check: Callable[[], T], timeout: float = 60, interval: float = 0.5) -> T:
    """Return the first truthy result of `check()`; exceptions count as "not yet", except an
    AssertionError (a DriverFailure, say), which is a verdict already."""
    start = time.monotonic()
    last: object = None
    while True:
        try:
            result = check()
            if result:
                return result
            last = result
        except AssertionError:
            raise
        except Exception as e:  # not there yet (404, connection refused, ...)
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() - start > timeout:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {str(last)[:2000]}")
        time.sleep(interval)
