"""Child processes that start and tear down labs (pytest under `certify`, `dralab up` under
`perf`). A Ctrl-C reaches them too (same process group) and they tear their labs down: wait for
that rather than kill them, which `subprocess.call` would do, leaving the labs behind (LAB-05).
SIGTERM (a CI job cancelled, a `timeout`) is handled as Ctrl-C is, and passed on to the child,
which it reaches alone when sent to this process only."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from basics.progress import console


class Interrupted(KeyboardInterrupt):
    """The child was interrupted and has finished tearing down; its exit code is kept."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"interrupted; the child exited {returncode} after tearing down")
        self.returncode = returncode


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt, so that every teardown runs."""


def raise_terminated(signum: int, _frame: object) -> None:
    # Once: a second SIGTERM (the process group's, after ours was passed on) must not cut the
    # teardown the first one started short. SIGKILL still ends a teardown that hangs.
    signal.signal(signal.SIGTERM, _ignored)
    raise Terminated(f"signal {signal.Signals(signum).name}")


def _ignored(signum: int, _frame: object) -> None:
    console.print(f"[yellow]{signal.Signals(signum).name} again: still tearing down[/yellow]")


@contextmanager
def interrupts_kept() -> Iterator[None]:
    """Ctrl-C and SIGTERM interrupt the block as usual, and one that Python dropped is raised when
    the block ends: raised inside a finalizer (a collected Popen's __del__, say), an exception is
    only printed, and a bring-up interrupted there would run to the end and leave its lab up."""
    caught: list[KeyboardInterrupt] = []

    def kept(handler: Any) -> Any:
        def on(signum: int, frame: object) -> None:
            try:
                handler(signum, frame)
            except KeyboardInterrupt as e:
                caught.append(e)
                raise

        return on

    previous = {
        s: signal.signal(s, kept(handler))
        for s, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, raise_terminated))
    }
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if caught:
        raise caught[0]


def interrupt_on_sigterm() -> None:
    """From now on, SIGTERM interrupts as Ctrl-C does (Terminated), unless someone handles it already."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, raise_terminated)


def run_to_completion(cmd: list[str], **popen: Any) -> int:
    """Run `cmd` and wait for it, also through Ctrl-C or SIGTERM (passed on to it); after one,
    raise Interrupted."""
    return run_all_to_completion([cmd], **popen)[0]


def run_all_to_completion(cmds: list[list[str]], **popen: Any) -> list[int]:
    """Run `cmds` side by side and wait for all of them, as run_to_completion does for one; their
    exit codes in order (Interrupted carries the highest)."""
    children = [subprocess.Popen(cmd, **popen) for cmd in cmds]
    interrupted = False
    codes: list[int] = []
    while len(codes) < len(children):
        try:
            codes.append(children[len(codes)].wait())
        except KeyboardInterrupt as e:
            interrupted = True
            if isinstance(e, Terminated):
                for child in children[len(codes) :]:
                    child.send_signal(signal.SIGTERM)
            console.print("[yellow]interrupted: waiting for the labs to be torn down[/yellow]")
    if interrupted:
        raise Interrupted(max(codes))
    return codes
