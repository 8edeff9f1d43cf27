"""A kind worker as the suites' node handle (clusters.providers.NodeHandle), so the checks that
need host access to a node run on kind too: its files are its container's, reached from the host
through /proc/<pid>/root; its kubelet and containerd are systemd units in the container; a pod's
sandbox is killed with the node's own ctr.

A reboot is not offered: a restarted node container gets a new network namespace, without the
emulated NICs and pod routes dralab put in the old one."""

from __future__ import annotations

import base64
import errno
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from basics.errors import LabBroken, NotSupported
from basics.progress import run_logged
from clusters import plugin_calls
from clusters.local.node import injected, kill_pod_sandbox
from clusters.local.waits import wait_for

KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
KUBELET_HEALTHZ = "exec 3<>/dev/tcp/127.0.0.1/10248 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
MAX_LINKS = 40  # as the kernel's limit on symlinks followed in one lookup


def resolve_in_root(root: Path, path: str) -> Path:
    """`path` of the file system rooted at `root`, its symlinks followed inside it: an absolute
    link target (/var/run -> /run) starts again at `root`, not at the host's /."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    resolved, links = root, 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            resolved = resolved.parent if resolved != root else root
            continue
        candidate = resolved / part
        if not candidate.is_symlink():
            resolved = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, f"too many symlinks resolving {path} under {root}")
        target = os.readlink(candidate)
        parts = [p for p in target.split("/") if p not in ("", ".")] + parts
        if target.startswith("/"):
            resolved = root
    return resolved


@dataclass
class KindNode:
    name: str
    container: str
    docker: str
    log_dir: Path  # the node's own under the lab's, mounted in its container: the recorder's trace goes there
    state_dir: Path  # the kind lab's, not copied with its logs: credentials go there
    server: str  # the API server as the host reaches it
    kubelet_root_dir: str = "/var/lib/kubelet"

    @property
    def kubelet_kubeconfig(self) -> Path:
        """The kubelet's credentials (system:node:<name>) for checks that act as the kubelet: the
        node's kubelet.conf with its client certificate inlined (its path is the node's) and the
        API server as the host reaches it."""
        conf = yaml.safe_load(self.host_path(KUBELET_CONF).read_text())
        user = conf["users"][0]["user"]
        for field in ("client-certificate", "client-key"):  # the kubelet's rotated pem: both in one file
            if field in user:
                user[f"{field}-data"] = base64.b64encode(self.host_path(user.pop(field)).read_bytes()).decode()
        conf["clusters"][0]["cluster"]["server"] = self.server
        path = self.state_dir / f"{self.name}-kubelet.kubeconfig"
        path.write_text(yaml.safe_dump(conf))
        path.chmod(0o600)
        return path

    @property
    def plugin_calls_file(self) -> Path:
        """The trace of the calls between this node's kubelet and its plugins (clusters/kind/recorder.py)."""
        return self.log_dir / plugin_calls.TRACE_FILE

    def in_node(self, *cmd: str) -> list[str]:
        """`cmd` run in the node's container."""
        return [self.docker, "exec", self.container, *cmd]

    def exec(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.in_node(*cmd), capture_output=True, text=True, check=check)

    def _systemctl(self, action: str, unit: str) -> None:
        run_logged(
            self.in_node("systemctl", action, unit),
            self.log_dir / "node-services.log",
            what=f"systemctl {action} {unit} on kind node {self.name}",
        )

    def host_path(self, node_path: str) -> Path:
        pid = subprocess.run(
            [self.docker, "inspect", "-f", "{{.State.Pid}}", self.container], capture_output=True, text=True, check=True
        ).stdout.strip()
        if pid in ("", "0"):
            raise LabBroken(f"kind node {self.name} (container {self.container}) is not running")
        return resolve_in_root(Path(f"/proc/{pid}/root"), node_path)

    def ctr(self, *args: str) -> list[str]:
        return self.in_node("ctr", "-n", "k8s.io", *args)

    @injected("kubelet stopped")
    def stop_kubelet(self) -> None:
        self._systemctl("stop", "kubelet")

    def start_kubelet(self) -> None:
        self._systemctl("start", "kubelet")

    def wait_kubelet(self, timeout: float = 60) -> None:
        wait_for(
            f"kubelet on kind node {self.name} to be healthy",
            lambda: self.exec("bash", "-c", KUBELET_HEALTHZ, check=False).stdout.rstrip().endswith("ok"),
            timeout,
        )

    @injected("kubelet restarted")
    def restart_kubelet(self) -> None:
        self._systemctl("restart", "kubelet")
        self.wait_kubelet()

    @injected("containerd restarted")
    def restart_containerd(self) -> None:
        # As on a real node, the containers and their shims keep running.
        self._systemctl("restart", "containerd")
        wait_for(f"containerd on kind node {self.name}", lambda: self.exec("ctr", "version", check=False).returncode == 0, 30)

    @injected("pod sandbox killed")
    def kill_pod_sandbox(self, pod_uid: str) -> None:
        kill_pod_sandbox(self.ctr, pod_uid, self.name, self.log_dir / "sandbox-kill.log")

    def reboot(self) -> None:
        raise NotSupported(
            f"kind node {self.name}: a restarted node container gets a new network namespace, "
            "without the emulated NICs and pod routes dralab put in the old one"
        )
