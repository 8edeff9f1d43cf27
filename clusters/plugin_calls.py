"""Plugin calls: what a node's kubelet and its kubelet plugins said to each other, recorded by
plugin-recorder (clusters/cmd/plugin-recorder), which stands between them on each node
of a lab dralab runs (MUT-03's trace).

Plugins put their registration sockets in the driver registry, a directory beside the kubelet's
plugins_registry (a driver's deployment has its plugins_registry mount moved there); the recorder
serves a stand-in of the same name in plugins_registry for each and forwards every call."""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from clusters.watch_log import WATCHED

# Beside plugins_registry, not in it: the kubelet's plugin watcher walks its subdirectories.
DRIVER_REGISTRY = "dralab-driver-registry"
TRACE_FILE = "plugin-calls.jsonl"
# Each node's faults the run injected (LocalNode's restarts, stops, reboot, sandbox kills), beside its calls.
FAULT_LOG = "faults.jsonl"
# The files the suites saw in containers (the generated workloads' metadata files), beside the watch logs.
CONTAINER_FILES_LOG = "container-files.jsonl"


def driver_registry(kubelet_root_dir: str) -> str:
    return f"{kubelet_root_dir.rstrip('/')}/{DRIVER_REGISTRY}"


def kubelet_registry(kubelet_root_dir: str) -> str:
    return f"{kubelet_root_dir.rstrip('/')}/plugins_registry"


def recorder_command(binary: Path, kubelet_root_dir: str, node: str, trace: Path, cdi_dirs: tuple[str, ...]) -> list[str]:
    """`cdi_dirs`: the container runtime's CDI spec directories, read after each prepare and
    unprepare as its answer goes back."""
    root = kubelet_root_dir.rstrip("/")
    return [
        str(binary),
        f"--driver-registry={driver_registry(root)}",
        f"--kubelet-registry={kubelet_registry(root)}",
        f"--service-dir={root}/plugins/dralab-recorder",
        f"--node={node}",
        f"--trace={trace}",
        *(f"--cdi-dir={d}" for d in cdi_dirs),
    ]


@dataclass(frozen=True)
class CDISpec:
    """What one CDI spec file defined when a call returned: its kind, its devices' names, the
    UIDs of the call's claims it names (in its path or content), or why it could not be read."""

    kind: str = ""
    devices: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    error: str = ""

    def defines(self, cdi_id: str) -> bool:
        """A fully qualified CDI device ID, vendor/class=name, is one of this spec's devices."""
        kind, _, name = cdi_id.partition("=")
        return not self.error and kind == self.kind and name in self.devices


@dataclass(frozen=True)
class PluginCall:
    """One record: a call (method with its request and answer or error), one message of a stream
    (`stream` says which way), or the recorder's own step ("socket created", "socket removed")."""

    node: str
    socket: str
    method: str
    start: datetime
    end: datetime
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    error: str | None = None
    stream: str | None = None
    cdi: dict[str, CDISpec] | None = None  # prepare and unprepare: the node's CDI specs by path as the answer went back

    @property
    def name(self) -> str:
        """The method's own name: "NodePrepareResources" of "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"."""
        return self.method.rsplit("/", 1)[-1]

    @classmethod
    def from_line(cls, line: str) -> PluginCall:
        raw = json.loads(line)
        return cls(
            node=raw["node"],
            socket=raw.get("socket", ""),
            method=raw["method"],
            start=datetime.fromisoformat(raw["start"]),
            end=datetime.fromisoformat(raw["end"]),
            request=raw.get("request"),
            response=raw.get("response"),
            error=raw.get("error") or None,
            stream=raw.get("stream"),
            cdi=_specs(raw.get("cdi")),
        )


def _specs(snapshot: dict[str, Any] | None) -> dict[str, CDISpec] | None:
    if snapshot is None:
        return None
    return {
        path: CDISpec(
            kind=s.get("kind", ""), devices=tuple(s.get("devices") or ()), claims=tuple(s.get("claims") or ()), error=s.get("error", "")
        )
        for path, s in (snapshot.get("specs") or {}).items()
    }


def read(trace: Path) -> list[PluginCall]:
    """The records of one node's trace, in the order they were written; none before the recorder started."""
    if not trace.exists():
        return []
    return [PluginCall.from_line(line) for line in trace.read_text().splitlines() if line.strip()]


def append_to_run_trace(lab_log_dir: Path, lab: str, trace: Path, since: datetime | None = None) -> int:
    """Add the calls and injected faults of every node of a lab, its watch logs and the files seen in
    containers (its kept logs) to a run's trace,
    one JSON line each with the lab's name, in the order they started, those before `since` (an
    earlier run's on a reused lab) left out; returns how many."""
    lines = []
    lab_logs = [lab_log_dir / name for name in (*(w.file for w in WATCHED), CONTAINER_FILES_LOG)]
    for node_trace in sorted(
        [*lab_log_dir.glob(f"*/{TRACE_FILE}"), *lab_log_dir.glob(f"*/{FAULT_LOG}"), *(log for log in lab_logs if log.exists())]
    ):
        for line in node_trace.read_text().splitlines():
            if line.strip():
                raw = json.loads(line)
                # By time, not text: Go's RFC 3339 times drop trailing zeros of the fraction.
                start = datetime.fromisoformat(raw["start"])
                if since is None or start >= since:
                    lines.append((start, json.dumps({"lab": lab, **raw})))
    if lines:
        trace.parent.mkdir(parents=True, exist_ok=True)
        with trace.open("a") as out:
            fcntl.flock(out, fcntl.LOCK_EX)  # runs side by side (certify --shards) append to one trace
            out.writelines(f"{line}\n" for _, line in sorted(lines, key=lambda pair: pair[0]))
    return len(lines)
