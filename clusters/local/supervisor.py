"""Component processes: started detached with a log file and a pid file, checked, stopped.

`dralab up` returns while the components keep running, so supervision is a check anyone can
make (status, the pytest plugin, readiness waits): a dead component is reported by name with
the tail of its log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from basics.errors import LabBroken, log_tail

LAB_ENV = "DRALAB_LAB"  # every lab process carries it: how teardown and `residue` find them


@dataclass(frozen=True)
class Component:
    name: str
    pid: int
    start_ticks: int
    log: Path

    def alive(self) -> bool:
        stat = _stat(self.pid)
        return stat is not None and stat[1] == self.start_ticks and stat[0] not in ("Z", "X")

    def stop(self, timeout: float = 5.0) -> None:
        terminate([self], timeout)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks) of a process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def start(
    name: str, cmd: Sequence[str | Path], *, lab_dir: Path, log_dir: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Component:
    log = log_dir / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        **(env or {}),
        LAB_ENV: str(lab_dir),
        "DRALAB_COMPONENT": name,
    }
    with open(log, "ab") as out:
        out.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(map(str, cmd))}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    stat = _stat(proc.pid)
    comp = Component(name, proc.pid, stat[1] if stat else 0, log)
    _stopped_mark(lab_dir, name).unlink(missing_ok=True)
    _pidfile(lab_dir, name).write_text(json.dumps({"pid": comp.pid, "start_ticks": comp.start_ticks, "log": str(log)}))
    return comp


def _pidfile(lab_dir: Path, name: str) -> Path:
    d = lab_dir / "pids"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.json"


def _stopped_mark(lab_dir: Path, name: str) -> Path:
    return _pidfile(lab_dir, name).with_suffix(".stopped")


def stop(lab_dir: Path, name: str) -> None:
    """Stop a component on purpose (a restart test): until it is started again it is not down."""
    load(lab_dir)[name].stop()
    _stopped_mark(lab_dir, name).touch()


def down(lab_dir: Path) -> list[Component]:
    """The components that died, those stopped on purpose aside."""
    return [c for c in load(lab_dir).values() if not c.alive() and not _stopped_mark(lab_dir, c.name).exists()]


def describe_down(lab_dir: Path) -> list[str]:
    """Each component that died, with its log's tail: the lab's diagnosis."""
    return [
        f"lab component {comp.name} (pid {comp.pid}) is down; last lines of its log {comp.log}:\n{log_tail(comp.log, 15)}"
        for comp in down(lab_dir)
    ]


def load(lab_dir: Path) -> dict[str, Component]:
    comps = {}
    for f in sorted((lab_dir / "pids").glob("*.json")):
        data = json.loads(f.read_text())
        comps[f.stem] = Component(f.stem, data["pid"], data["start_ticks"], Path(data["log"]))
    return comps


def forget(lab_dir: Path, name: str) -> None:
    _pidfile(lab_dir, name).unlink(missing_ok=True)


def check_alive(components: Sequence[Component]) -> None:
    """Raise, naming the first dead component and showing its log, if any has died."""
    for c in components:
        if not c.alive():
            raise LabBroken(f"lab component {c.name} (pid {c.pid}) has died; last lines of {c.log}:\n{log_tail(c.log)}")


def terminate(components: Sequence[Component], timeout: float = 5.0) -> None:
    live = [c for c in components if c.alive()]
    for c in live:
        _signal(c.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = [c for c in live if c.alive()]
    for c in live:
        _signal(c.pid, signal.SIGKILL)
    kill_and_wait([c.pid for c in live])


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_and_wait(pids: Sequence[int], timeout: float = 5.0) -> None:
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [_stat(p) for p in pids]
        if all(s is None or s[0] in ("Z", "X") for s in states):
            return
        time.sleep(0.05)


def kill_until_gone(find: Callable[[], set[int]], timeout: float = 30.0) -> list[str]:
    """SIGKILL what `find` returns, again and again until it finds nothing alive: a process killed
    from a snapshot may have forked meanwhile (a container's shell loop), and its child is not in
    the snapshot. Returns the survivors, described (pid, state, command)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = sorted(p for p in find() if (_stat(p) or ("X",))[0] not in ("Z", "X"))
        if not alive:
            return []
        if time.monotonic() > deadline:
            return [f"{p} ({(_stat(p) or ('gone',))[0]}) {command(p) or ''}" for p in alive]
        kill_and_wait(alive)
        reap_children()


def command(pid: int) -> str | None:
    """A process's command line, None once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def reap_children() -> None:
    """Collect exited children of this process (components started by a pytest session)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def lab_processes(lab_dir: Path | None = None) -> list[int]:
    """Pids of live processes carrying the lab marker (of one lab, or of any)."""
    wanted = f"{LAB_ENV}={lab_dir}".encode() if lab_dir else None
    prefix = f"{LAB_ENV}=".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (wanted in variables) if wanted else any(v.startswith(prefix) for v in variables):
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found
