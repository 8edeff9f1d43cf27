"""The plugin recorder in kind's workers, as in the local lab's nodes (clusters/plugin_calls.py):
each worker gets the recorder's binary and its own log dir of the lab bind-mounted (extraMounts),
and runs the recorder in its container beside its kubelet, so the trace lands in the lab's logs
on the host and outlives the node containers."""

from __future__ import annotations

import shlex
from pathlib import Path

from basics.progress import run_logged
from clusters import plugin_calls
from clusters.config import ClusterConfig
from clusters.local.configs import CDI_DIRS

NODE_LOG_DIR = "/var/log/dralab"
NODE_BIN_DIR = "/opt/dralab/bin"
BINARY = "plugin-recorder"
LOG = "plugin-recorder.log"


def mounts(cfg: ClusterConfig, binaries: Path, log_dir: Path) -> dict[str, dict[str, Path]]:
    """Per worker: node path -> host path, its log dir created now (before the containers)."""
    found = {}
    for name in cfg.node_names():
        (log_dir / name).mkdir(parents=True, exist_ok=True)
        found[name] = {NODE_LOG_DIR: log_dir / name, NODE_BIN_DIR: binaries}
    return found


def start(cfg: ClusterConfig, node: str, container: str, docker: str, log: Path) -> None:
    """The recorder of worker `node` (container `container`), detached in it, its errors in the
    node's log dir; before any driver registers, as on a local node."""
    command = plugin_calls.recorder_command(
        Path(NODE_BIN_DIR) / BINARY, cfg.kubelet_root_dir, node, Path(NODE_LOG_DIR) / plugin_calls.TRACE_FILE, CDI_DIRS
    )
    run_logged(
        [docker, "exec", "-d", container, "sh", "-c", f"exec {shlex.join(command)} 2>>{NODE_LOG_DIR}/{LOG}"],
        log,
        what=f"the plugin recorder of kind node {node}",
    )


def running(processes: str) -> bool:
    """Whether `docker top`'s listing of a worker's processes (`-eo pid,args`: it needs the PIDs)
    shows the recorder."""
    return f"{NODE_BIN_DIR}/{BINARY} " in processes
