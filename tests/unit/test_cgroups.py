"""Removing a lab's cgroup trees (clusters/local/cgroups.py) right after killing their tasks: a
directory stays busy until its last task has fully exited, so removal tries again for a while."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from clusters.local import cgroups


def test_a_tree_busy_for_a_moment_is_removed_and_one_busy_for_good_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "dralab" / "lab" / "node-1"
    (tree / "kubepods" / "pod1").mkdir(parents=True)
    monkeypatch.setattr(cgroups, "trees", lambda path: [tree])
    monkeypatch.setattr(cgroups, "hierarchies", lambda: [tmp_path])
    busy = tree / "kubepods" / "pod1" / "task"  # a file keeps the rmdir failing, as a task does
    busy.write_text("")
    threading.Timer(0.5, busy.unlink).start()
    assert cgroups.remove("dralab/lab/node-1", within=5) == []
    assert not (tmp_path / "dralab").exists(), "the shared parent goes with the last lab"

    (tree / "kubepods").mkdir(parents=True)
    (tree / "kubepods" / "task").write_text("")
    left = cgroups.remove("dralab/lab/node-1", within=0.5)
    assert [entry.split(":")[0] for entry in left] == [str(tree / "kubepods"), str(tree)]
