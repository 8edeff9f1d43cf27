"""PF-01: how long `dralab up` takes for a 2-node lab with emulated hardware, with the pinned
components cached (warm) and from an empty dralab cache (cold: provision builds everything)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from basics.children import run_to_completion
from basics.errors import LabBroken
from clusters.config import labs_root
from clusters.lab_configurations import PERF as LAB
from clusters.local.cluster import LocalCluster


def warm(rounds: int, progress: Callable[[str], None]) -> dict[str, list[float]]:
    """Up and down `rounds` times with everything cached."""
    up, down = [], []
    for i in range(rounds):
        start = time.monotonic()
        cluster = LocalCluster.up(LAB, offline=True)
        up.append(time.monotonic() - start)
        start = time.monotonic()
        left = cluster.down()
        down.append(time.monotonic() - start)
        if left:
            raise LabBroken(f"teardown of {LAB.name} left {left}")
        progress(f"warm bring-up {i + 1}/{rounds}: up {up[-1]:.1f}s, down {down[-1]:.1f}s")
    return {"up_s": up, "down_s": down}


def _dralab(cache: Path, *args: str, log: Path) -> float:
    start = time.monotonic()
    with open(log, "ab") as out:
        rc = run_to_completion(
            [sys.executable, "-m", "dralab.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "DRALAB_CACHE": str(cache)},
            stdin=subprocess.DEVNULL,
        )
    if rc != 0:
        raise LabBroken(f"dralab {' '.join(args)} with an empty cache exited {rc}; log: {log}")
    return time.monotonic() - start


def cold(log: Path, progress: Callable[[str], None]) -> dict[str, float]:
    """Provision into an empty dralab cache, then the first bring-up from it. Go's own build and
    module caches stay as they are (warm after the first provision on this machine): what a CI
    runner with a cached Go toolchain but no dralab cache pays."""
    cache = Path(tempfile.mkdtemp(prefix="dralab-cold-cache-", dir="/var/tmp"))
    try:
        provision = _dralab(cache, "provision", log=log)
        progress(f"cold provision (empty dralab cache): {provision:.0f}s")
        up = _dralab(cache, "up", "--name", f"{LAB.name}-cold", "--nodes", str(LAB.nodes), "--hardware", LAB.hardware["node-1"], log=log)
        progress(f"first bring-up from it: {up:.1f}s")
    finally:
        if (labs_root() / "labs" / f"{LAB.name}-cold").exists():  # up, or half up and interrupted
            _dralab(cache, "down", "--name", f"{LAB.name}-cold", "--force", log=log)
        shutil.rmtree(cache, ignore_errors=True)
    return {"provision_s": provision, "up_s": up, "total_s": provision + up}
