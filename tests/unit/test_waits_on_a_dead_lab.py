"""A wait ends at once when a component of the lab dies (ERROR with the diagnosis), not after its
timeout; a component a test stopped on purpose (a restart test) is not down."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from basics.errors import LabBroken
from clusters.local import supervisor
from suites.framework import waits
from suites.framework.waits import WaitTimeout, wait_for


def test_a_wait_ends_once_the_lab_says_something_is_down(monkeypatch) -> None:
    monkeypatch.setattr(waits, "LAB_CHECK_INTERVAL", 0.05)
    with waits.watching(waits.LabWatch(down=lambda: ["lab component n1-containerd (pid 7) is down"])):
        started = time.monotonic()
        with pytest.raises(LabBroken, match="stopped waiting for the pod: lab component n1-containerd"):
            wait_for("the pod", lambda: False, timeout=30, interval=0.01)
    assert time.monotonic() - started < 5
    with pytest.raises(WaitTimeout):  # outside, the probe is gone again
        wait_for("the pod", lambda: False, timeout=0.2, interval=0.01)


def test_a_dead_component_is_down_and_one_stopped_on_purpose_is_not_until_it_runs_again(tmp_path: Path) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    killed = supervisor.start("killed", sleep, lab_dir=tmp_path, log_dir=tmp_path)
    supervisor.start("stopped", sleep, lab_dir=tmp_path, log_dir=tmp_path)
    try:
        assert supervisor.down(tmp_path) == []
        supervisor.stop(tmp_path, "stopped")
        killed.stop()  # as if it died: nobody marked it stopped
        assert [c.name for c in supervisor.down(tmp_path)] == ["killed"]
        supervisor.start("stopped", ["true"], lab_dir=tmp_path, log_dir=tmp_path)  # started again, then exits
        time.sleep(0.5)
        supervisor.reap_children()
        assert sorted(c.name for c in supervisor.down(tmp_path)) == ["killed", "stopped"]
    finally:
        supervisor.terminate(list(supervisor.load(tmp_path).values()))
        supervisor.reap_children()
