"""Terminal progress for long steps: a spinner with elapsed time, and a final line with the duration."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from basics.errors import LabBroken, log_tail

console = Console(stderr=True, highlight=False, soft_wrap=True)
HEARTBEAT_SECONDS = 60


@contextlib.contextmanager
def _live(title: str, status: Callable[[], str] | None = None) -> Iterator[None]:
    done = threading.Event()
    start = time.monotonic()
    if console.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True) as progress:
            task = progress.add_task(title, total=None)

            def refresh() -> None:
                while status is not None and not done.wait(2):
                    progress.update(task, description=f"{title}: {status()}")

            threading.Thread(target=refresh, daemon=True).start()
            try:
                yield
            finally:
                done.set()
        return
    # Not a terminal (CI logs): a line now and then so a 30-minute build shows it is alive.
    console.print(f"… {title}")

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            said = f"{status()}, " if status is not None else ""
            console.print(f"  … {title}: {said}still running after {time.monotonic() - start:.0f}s")

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        yield
    finally:
        done.set()


@contextlib.contextmanager
def step(title: str, status: Callable[[], str] | None = None) -> Iterator[None]:
    """Show `title` with elapsed time (and what `status` says) while it runs; print ok/failed with
    its seconds at the end."""
    start = time.monotonic()
    try:
        with _live(title, status):
            yield
    except BaseException:
        console.print(f"[red]✗[/red] {title} [dim]({time.monotonic() - start:.1f}s)[/dim]")
        raise
    console.print(f"[green]✓[/green] {title} [dim]({time.monotonic() - start:.1f}s)[/dim]")


def run_logged(
    cmd: Sequence[str | Path],
    log: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str,
) -> None:
    """Run `cmd` with its output appended to `log`; on failure raise with the log's tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(map(str, cmd))}\n".encode())
        out.flush()
        rc = subprocess.call(
            [str(c) for c in cmd], cwd=cwd, env=dict(env) if env else None, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    if rc != 0:
        raise LabBroken(f"{what} failed (exit {rc}); full log: {log}\n{log_tail(log)}")
