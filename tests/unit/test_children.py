"""A Ctrl-C during a child that manages labs waits for the child's own teardown (LAB-05)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from basics.children import Interrupted, interrupt_on_sigterm, interrupts_kept, run_to_completion

# Interrupts its parent as a terminal's Ctrl-C would, then "tears down" for a moment and exits 5.
CHILD = """
import os, signal, sys, time
os.kill(os.getppid(), signal.SIGINT)
time.sleep(0.5)
open(sys.argv[1], "w").write("torn down")
sys.exit(5)
"""


def test_an_interrupt_waits_for_the_child_to_finish_then_raises(tmp_path) -> None:
    marker = tmp_path / "teardown"
    # As a terminal leaves it: a shell's background job (`make test &`) ignores SIGINT.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(Interrupted) as raised:
            run_to_completion([sys.executable, "-c", CHILD, str(marker)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert raised.value.returncode == 5 and marker.read_text() == "torn down"


def test_without_an_interrupt_the_exit_code_is_returned() -> None:
    assert run_to_completion([sys.executable, "-c", "raise SystemExit(3)"]) == 3


# Terminates its parent as a CI cancel would (SIGTERM to the parent alone), then waits for the
# SIGTERM passed on to it, "tears down" and exits 7.
CHILD_TERMINATED = """
import os, signal, sys, time
def torn_down(*_):
    open(sys.argv[1], "w").write("torn down")
    sys.exit(7)
signal.signal(signal.SIGTERM, torn_down)
os.kill(os.getppid(), signal.SIGTERM)
time.sleep(10)
sys.exit(1)
"""


def test_sigterm_is_passed_on_to_the_child_and_its_teardown_awaited(tmp_path) -> None:
    marker = tmp_path / "teardown"
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        interrupt_on_sigterm()
        with pytest.raises(Interrupted) as raised:
            run_to_completion([sys.executable, "-c", CHILD_TERMINATED, str(marker)])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert raised.value.returncode == 7 and marker.read_text() == "torn down"


class _Finalized:
    """Ctrl-C arrives while a finalizer runs, as it did in a collected Popen's __del__ during a bring-up."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # the handler runs between bytecodes, so here, where its raise is dropped
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop itself
def test_an_interrupt_dropped_by_a_finalizer_is_raised_when_the_block_ends() -> None:
    before, after = signal.getsignal(signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_kept():
            _Finalized()  # collected at once: its __del__ runs and swallows the KeyboardInterrupt
            after.append("the block went on")
    assert after == ["the block went on"]
    assert signal.getsignal(signal.SIGINT) == before
