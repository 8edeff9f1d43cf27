"""flock-based locks that two dralab commands on one machine (or one cache) take: held for a
block, with the holder's pid written in the file so that the other can say who it waits for."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from basics.errors import BadInput
from basics.progress import console


def _mine(lock: IO[str]) -> None:
    lock.seek(0)
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()


def _holder(lock: IO[str]) -> str:
    lock.seek(0)
    return lock.read().strip() or "unknown"


@contextmanager
def exclusive(path: Path, busy: Callable[[str], str]) -> Iterator[None]:
    """The lock for the block; BadInput (`busy` of the holder's pid) when another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(busy(_holder(lock))) from None
        _mine(lock)
        yield


@contextmanager
def waited_for(path: Path, doing: str) -> Iterator[None]:
    """The lock for the block, waiting (and saying so) while another dralab `doing` holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            console.print(f"waiting for another dralab {doing} (pid {_holder(lock)})", markup=False)
            fcntl.flock(lock, fcntl.LOCK_EX)
        _mine(lock)
        yield


def held(path: Path) -> bool:
    """Whether some process holds the lock at `path` now."""
    if not path.exists():
        return False
    with path.open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False
