"""supervisor.kill_until_gone: what a snapshot missed (a child forked meanwhile) is killed too."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusters.local import supervisor


def test_a_process_found_only_on_a_later_look_is_killed_too() -> None:
    first, forked = (subprocess.Popen(["sleep", "60"]) for _ in range(2))
    looks = iter([{first.pid}])  # the first look misses the second process, as a snapshot misses a fork

    def find() -> set[int]:
        return next(looks, {first.pid, forked.pid})

    assert supervisor.kill_until_gone(find, timeout=10) == []
    # Reaped by it too (they are this process's children), so gone from /proc.
    assert not Path(f"/proc/{first.pid}").exists()
    assert not Path(f"/proc/{forked.pid}").exists()


def test_nothing_found_is_nothing_to_do() -> None:
    assert supervisor.kill_until_gone(set, timeout=1) == []
