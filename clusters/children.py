"""Child processes that start and tear down labs (pytest under `certify`, `dralab up` under
`perf`). A Ctrl-C reaches them too (same process group) and they tear their labs down: wait for
that rather than kill them, which `subprocess.call` would do, leaving the labs behind (LAB-05)."""

from __future__ import annotations

import subprocess
from typing import Any

from clusters.progress import console


class Interrupted(KeyboardInterrupt):
    """The child was interrupted and has finished tearing down; its exit code is kept."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"interrupted; the child exited {returncode} after tearing down")
        self.returncode = returncode


def run_to_completion(cmd: list[str], **popen: Any) -> int:
    """Run `cmd` and wait for it, also through Ctrl-C; after one, raise Interrupted."""
    child = subprocess.Popen(cmd, **popen)
    interrupted = False
    while True:
        try:
            returncode = child.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
            console.print("[yellow]interrupted: waiting for the labs to be torn down[/yellow]")
    if interrupted:
        raise Interrupted(returncode)
    return returncode
