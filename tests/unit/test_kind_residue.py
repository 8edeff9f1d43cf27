"""LAB-05 for the kind provider: a kind lab that was not taken down, and a dockerd dralab started
and left running, are residue (`dralab residue`, certify's check after a run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from clusters import residue
from clusters.local import supervisor


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    kind, docker = tmp_path / "kind", tmp_path / "docker"
    monkeypatch.setattr(residue, "kind_dir", lambda: kind)
    monkeypatch.setattr(residue, "engine_dir", lambda: docker)
    return kind, docker


def _record(engine: Path, pid: int) -> None:
    """The pid file supervisor.start writes for a component."""
    (engine / "pids").mkdir(parents=True, exist_ok=True)
    ticks = supervisor._stat(pid)[1]
    (engine / "pids" / "dockerd.json").write_text(json.dumps({"pid": pid, "start_ticks": ticks, "log": "/x/dockerd.log"}))


def test_a_kind_lab_not_taken_down_is_residue_of_it_and_of_all_labs(dirs) -> None:
    kind, _ = dirs
    (kind / "k1").mkdir(parents=True)
    (kind / "k1" / "cluster.json").write_text("{}")
    (mine,) = residue._kind("k1")
    assert mine.kind == "kind" and "k1" in mine.what and "dralab down --name k1" in mine.what
    assert [r.what for r in residue._kind(None)] == [mine.what]
    assert residue._kind("other") == []


def test_a_running_dockerd_dralab_started_is_residue_once_it_has_ended_it_is_not(dirs) -> None:
    _, docker = dirs
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        _record(docker, sleeper.pid)
        (found,) = residue._kind(None)
        assert found.kind == "process" and f"{sleeper.pid} dockerd started by dralab" in found.what
        assert residue._kind("k1") == []  # one lab's residue does not include the shared engine
    finally:
        sleeper.kill()
        sleeper.wait()
    assert residue._kind(None) == []


def test_nothing_of_kind_on_a_host_that_never_ran_it(dirs) -> None:
    assert residue._kind(None) == []
