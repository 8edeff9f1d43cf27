"""Readiness waits: poll a condition with a timeout, and fail fast when a component dies."""

from __future__ import annotations

import ssl
import time
import urllib.request
from pathlib import Path
from typing import Callable, Sequence

from basics.errors import LabBroken, log_tail
from clusters.local.supervisor import Component, check_alive

POLL = 0.2


def wait_for(what: str, ready: Callable[[], bool], timeout: float, watch: Sequence[Component] = ()) -> float:
    """Wait until `ready()`; return the seconds it took. On timeout, show the watched logs."""
    start = time.monotonic()
    while True:
        check_alive(watch)
        try:
            if ready():
                return time.monotonic() - start
        except Exception:  # not up yet: connection refused, 503, no such socket, ...
            pass
        if time.monotonic() - start > timeout:
            tails = "\n".join(f"--- {c.name} ({c.log}):\n{log_tail(c.log, 10)}" for c in watch)
            raise LabBroken(f"timed out after {timeout:.0f}s waiting for {what}\n{tails}")
        time.sleep(POLL)


def https_ok(url: str, ca: Path, cert: Path | None = None, key: Path | None = None) -> bool:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert:
        ctx.load_cert_chain(str(cert), str(key))
    with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
        return resp.status == 200


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as resp:
        return resp.status == 200
