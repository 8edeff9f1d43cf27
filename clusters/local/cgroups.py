"""cgroup v1 trees of a lab: each node's kubelet gets `/dralab/<lab>/<node>` as its cgroupRoot."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def hierarchies() -> list[Path]:
    """The mounted v1 hierarchies (cpu and cpuacct may be one, linked twice: count it once)."""
    seen, result = set(), []
    for d in sorted(CGROUP_ROOT.iterdir()):
        real = d.resolve()
        if d.is_dir() and real not in seen and (real / "cgroup.procs").exists():
            seen.add(real)
            result.append(real)
    return result


def create(path: str) -> None:
    """Create `path` in every hierarchy; cpuset children start empty and must inherit cpus/mems.
    Two labs starting at once (certify's shards) may make a shared parent together: whoever
    comes second finds it made, and fills its cpuset only if the first has not yet."""
    for h in hierarchies():
        current = h
        for part in Path(path).parts[1:]:
            current = current / part
            current.mkdir(exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):
                if (current / name).exists() and not (current / name).read_text().strip():
                    (current / name).write_text((current.parent / name).read_text())


def trees(path: str) -> list[Path]:
    return [h / path.lstrip("/") for h in hierarchies() if (h / path.lstrip("/")).exists()]


def pids(path: str) -> set[int]:
    found: set[int] = set()
    for tree in trees(path):
        for procs in tree.rglob("cgroup.procs"):
            try:
                found.update(int(p) for p in procs.read_text().split())
            except OSError:
                continue
    return found


def kill_all(path: str) -> None:
    for pid in pids(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _dirs(tree: Path) -> list[Path]:
    """The tree's directories, top first; those that vanish while it is walked left out."""
    found = []
    for top, dirs, _files in os.walk(tree):  # os.walk skips what vanishes; Path.rglob raises
        found += [Path(top, d) for d in dirs]
    return [tree, *found] if tree.is_dir() else found


def remove(path: str, within: float = 10.0) -> list[str]:
    """rmdir the trees bottom-up, again until `within` seconds have passed while some stay (a
    task just killed leaves its cgroup busy until it has fully exited); returns the directories
    that could not be removed."""
    deadline = time.monotonic() + within
    while (failed := _remove_once(path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return failed


def _remove_once(path: str) -> list[str]:
    failed = []
    for tree in trees(path):
        for d in sorted(_dirs(tree), key=lambda p: len(p.parts), reverse=True):
            try:
                d.rmdir()
            except FileNotFoundError:
                continue  # gone meanwhile (its runtime removed it)
            except OSError as e:
                failed.append(f"{d}: {e.strerror}")
        # The shared parent (/dralab) goes with the last lab.
        for parent in tree.parents:
            if parent in hierarchies() or not parent.exists():
                break
            try:
                parent.rmdir()
            except OSError:
                break
    return failed
