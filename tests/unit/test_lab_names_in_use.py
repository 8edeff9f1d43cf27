"""Two commands on one machine never take one lab name: a lab being brought up or torn down is
locked by its owner (another `up` or `down` of it is refused, naming the owner), and each
certification reserves a lab name prefix for its run (the next free one when another run holds it,
or labs named under it exist)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from basics.errors import BadInput
from basics import file_locks
from clusters.local import preflight
from reports import certify


@pytest.fixture
def labs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    return tmp_path


def _hold(path: str, ready, release) -> None:  # another process holding a lock
    with file_locks.exclusive(Path(path), lambda pid: pid):
        ready.set()
        release.wait(10)


@pytest.fixture
def held_elsewhere(labs: Path):
    """Hold a lock file in a second process for the test."""
    context = multiprocessing.get_context("fork")
    started: list = []

    def hold(path: Path) -> int:
        ready, release = context.Event(), context.Event()
        process = context.Process(target=_hold, args=(str(path), ready, release))
        process.start()
        assert ready.wait(10)
        started.append((process, release))
        return process.pid

    yield hold
    for process, release in started:
        release.set()
        process.join(10)


def test_a_lab_name_locked_by_another_process_is_refused_naming_it(held_elsewhere, labs: Path) -> None:
    pid = held_elsewhere(preflight.locks_dir() / "lab-cert.lock")
    with pytest.raises(BadInput, match=rf"lab 'cert' is being brought up or torn down by another dralab \(pid {pid}\)"):
        with preflight.lab_name_lock("cert"):
            pass
    with preflight.lab_name_lock("other"):  # another name is free, and says who holds it
        assert (preflight.locks_dir() / "lab-other.lock").read_text() == f"{os.getpid()}\n"


def test_a_certification_takes_the_next_prefix_when_another_run_holds_its_own(held_elsewhere, labs: Path) -> None:
    with certify.reserved_prefix("cert", 2, reuse=False) as prefix:
        assert prefix == "cert"
    held_elsewhere(preflight.locks_dir() / "prefix-cert.lock")
    with certify.reserved_prefix("cert", 2, reuse=False) as prefix:
        assert prefix == "certb"
        with certify.reserved_prefix("cert", 2, reuse=False) as third:  # a third run beside both
            assert third == "certc"


def test_labs_left_under_a_prefix_send_a_run_to_the_next_one_unless_it_reuses_them(labs: Path) -> None:
    (labs / "labs" / "cert2-gates-off").mkdir(parents=True)  # shard 2's lab of a run still going, or left
    with certify.reserved_prefix("cert", 2, reuse=False) as prefix:
        assert prefix == "certb"
    with certify.reserved_prefix("cert", 2, reuse=True) as prefix:  # selfcheck's variants on its own labs
        assert prefix == "cert"


def test_an_out_dir_that_cannot_be_written_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"--out /proc/nope/out: cannot write there \(No such file or directory\)"):
        certify.writable(Path("/proc/nope/out"))
    assert certify.writable(tmp_path / "a" / "b").is_dir()


def test_a_second_build_of_one_component_waits_for_the_first_and_takes_its_result(monkeypatch, tmp_path: Path, capsys) -> None:
    """Two provisions of a component missing from one cache: the second waits (and says for whom),
    then finds the build done and builds nothing."""
    import threading

    from clusters import provision
    from clusters.provision.gobuild import GoRecipe

    monkeypatch.setattr(provision, "cache_root", lambda: tmp_path)
    recipe = GoRecipe(name="thing", version="v1")
    built: list[int] = []
    first_inside, release = threading.Event(), threading.Event()

    def build(recipe, out: Path) -> None:
        built.append(threading.get_ident())
        first_inside.set()
        release.wait(10)
        out.mkdir(parents=True)

    monkeypatch.setattr(provision, "_build", build)
    results: list[Path] = []
    first = threading.Thread(target=lambda: results.append(provision.ensure_go(recipe, offline=False)))
    first.start()
    assert first_inside.wait(10)
    second = threading.Thread(target=lambda: results.append(provision.ensure_go(recipe, offline=False)))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting on the first's lock
    release.set()
    first.join(10), second.join(10)
    assert len(built) == 1 and len(results) == 2 and results[0] == results[1] and results[0].is_dir()
    assert f"waiting for another dralab building thing v1 (pid {os.getpid()})" in capsys.readouterr().err  # progress goes to stderr
