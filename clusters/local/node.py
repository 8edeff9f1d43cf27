"""A kubelet-backed node of a local lab: its namespaces, paths and the handles to its components."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from basics.errors import LabBroken
from basics.progress import run_logged
from clusters import plugin_calls
from clusters.config import ClusterConfig
from clusters.local import cgroups, configs, network, supervisor
from clusters.local.network import NODE_PRIVATE_DIRS
from clusters.local.waits import wait_for
from clusters.pki import PKI, write_kubeconfig
from clusters.provision import Toolchain
from fake_hardware.lab import NODE_SYSFS_ROOT

Method = TypeVar("Method", bound=Callable[..., Any])


def injected(what: str) -> Callable[[Method], Method]:
    """A method that injects a fault into the node: each call is a line of the node's fault log,
    with when it started and ended, which the run's trace takes in (MUT-03)."""

    def wrap(method: Method) -> Method:
        @functools.wraps(method)
        def logged(self: "LocalNode", *args: Any) -> Any:
            start = datetime.now(timezone.utc).isoformat()
            try:
                return method(self, *args)
            finally:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                with (self.log_dir / plugin_calls.FAULT_LOG).open("a") as out:
                    out.write(
                        json.dumps(
                            {
                                "node": self.name,
                                "start": start,
                                "end": datetime.now(timezone.utc).isoformat(),
                                "kind": "Fault",
                                "fault": what,
                                "args": [str(a) for a in args],
                            }
                        )
                        + "\n"
                    )

        return logged  # type: ignore[return-value]  # functools.wraps: logged takes and answers what method does

    return wrap


@dataclass
class LocalNode:
    cfg: ClusterConfig
    tools: Toolchain
    name: str
    index: int

    # Where things are --------------------------------------------------------------

    @property
    def dir(self) -> Path:
        return self.cfg.lab_dir / "nodes" / self.name

    @property
    def ip(self) -> str:
        return self.cfg.node_ip(self.index)

    @property
    def netns(self) -> str:
        return self.cfg.netns(self.name)

    @property
    def log_dir(self) -> Path:
        return self.cfg.lab_dir / "logs" / self.name

    def host_path(self, node_path: str) -> Path:
        """The host path of a path as this node's processes see it."""
        p = Path(node_path.replace("/var/run/", "/run/", 1) if node_path.startswith("/var/run/") else node_path)
        for private, name in NODE_PRIVATE_DIRS.items():
            if p == Path(private) or Path(private) in p.parents:
                return self.dir / name / p.relative_to(private)
        return p

    @property
    def kubelet_kubeconfig(self) -> Path:
        """The kubelet's credentials (system:node:<name>): for checks that act as the kubelet."""
        return self.dir / "conf" / "kubelet.kubeconfig"

    @property
    def kubelet_root_dir(self) -> str:
        return self.cfg.kubelet_root_dir

    @property
    def host_kubelet_root_dir(self) -> Path:
        return self.host_path(self.cfg.kubelet_root_dir)

    @property
    def cdi_dirs(self) -> tuple[Path, ...]:
        return tuple(self.host_path(d) for d in configs.CDI_DIRS)

    @property
    def containerd_socket(self) -> Path:
        return self.host_path(configs.CONTAINERD_SOCKET)

    @property
    def cgroup(self) -> str:
        return f"{self.cfg.cgroup_parent}/{self.name}"

    # Running things in the node ------------------------------------------------------

    def exec_prefix(self) -> list[str]:
        return network.node_exec_prefix(self.cfg, self.name)

    def run(self, *cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command as a process of this node (its network and mount namespaces)."""
        return network.sh(*self.exec_prefix(), *cmd, check=check)

    def _start(self, component: str, cmd: Sequence[str], env: dict[str, str] | None = None) -> supervisor.Component:
        return supervisor.start(
            f"{self.name}-{component}", [*self.exec_prefix(), *cmd], lab_dir=self.cfg.lab_dir, log_dir=self.log_dir, env=env
        )

    def component(self, component: str) -> supervisor.Component:
        return supervisor.load(self.cfg.lab_dir)[f"{self.name}-{component}"]

    # Set-up ---------------------------------------------------------------------------

    def create(self, pki: PKI, server: str) -> None:
        """Namespaces, network, cgroups and config files; starts nothing."""
        network.create_node_network(self.cfg, self.index, self.name)
        network.create_node_mount_ns(self.cfg, self.name, self.dir)
        cgroups.create(self.cgroup)
        conf = self.dir / "conf"
        (conf / "cni").mkdir(parents=True, exist_ok=True)
        (conf / "cni" / "10-dralab.conflist").write_text(configs.cni_conflist(self.cfg.pod_cidr(self.index)))
        (conf / "containerd.toml").write_text(configs.containerd_toml(self.tools, conf / "cni"))
        client = pki.issue(f"{self.name}-kubelet-client", f"system:node:{self.name}", ("system:nodes",))
        serving = pki.issue(
            f"{self.name}-kubelet-serving",
            f"system:node:{self.name}",
            ("system:nodes",),
            dns=(self.name,),
            ips=(self.ip,),
            server=True,
            client=False,
        )
        write_kubeconfig(conf / "kubelet.kubeconfig", server, pki.ca.cert, client, f"system:node:{self.name}")
        (conf / "kubelet.yaml").write_text(configs.kubelet_config(self.cfg, self.name, pki.ca.cert, serving))
        proxy = pki.issue(f"{self.name}-kube-proxy", "system:kube-proxy")
        write_kubeconfig(conf / "kube-proxy.kubeconfig", server, pki.ca.cert, proxy, "system:kube-proxy")
        (conf / "kube-proxy.yaml").write_text(configs.kube_proxy_config(self.cfg, self.name, conf / "kube-proxy.kubeconfig"))
        self._make_dirs()

    def _make_dirs(self) -> None:
        """The directories the node's set-up makes, at creation and again at every boot (as
        systemd-tmpfiles does): the CDI spec dirs containerd is configured to watch."""
        for d in self.cdi_dirs:
            d.mkdir(parents=True, exist_ok=True)

    def start_containerd(self) -> supervisor.Component:
        env = {"PATH": f"{self.tools.containerd}:{self.tools.runc_dir}:/usr/sbin:/usr/bin:/sbin:/bin"}
        return self._start(
            "containerd", [str(self.tools.containerd / "containerd"), f"--config={self.dir / 'conf' / 'containerd.toml'}"], env
        )

    def ctr(self, *args: str) -> list[str]:
        return [str(self.tools.containerd / "ctr"), f"--address={self.containerd_socket}", "-n", "k8s.io", *args]

    def wait_containerd(self, timeout: float = 30) -> None:
        wait_for(
            f"containerd on {self.name} ({self.containerd_socket})",
            lambda: subprocess.run(self.ctr("version"), capture_output=True).returncode == 0,
            timeout,
            [self.component("containerd")],
        )

    def import_images(self, archives: Sequence[Path]) -> None:
        """Import image tarballs (OCI layout or docker-archive) into this node's containerd. An
        archive imported before, unchanged since (path, size, mtime), is not imported again: the
        node's containerd keeps its images (a reboot too), and suites deploy drivers many times."""
        log = self.log_dir / "image-import.log"
        record = self.dir / "imported-images"
        done = set(record.read_text().splitlines()) if record.exists() else set()
        for archive in archives:
            stat = archive.stat()
            key = f"{archive} {stat.st_size} {stat.st_mtime_ns}"
            if key in done:
                continue
            run_logged(self.ctr("images", "import", str(archive)), log, what=f"importing {archive} into containerd on {self.name}")
            with open(record, "a") as f:
                f.write(key + "\n")

    def start_kubelet(self) -> supervisor.Component:
        conf = self.dir / "conf"
        return self._start(
            "kubelet",
            configs.kubelet_command(self.tools, self.cfg, self.name, self.index, conf / "kubelet.yaml", conf / "kubelet.kubeconfig"),
        )

    @property
    def plugin_calls_file(self) -> Path:
        """The trace of the calls between this node's kubelet and its plugins (kept with the logs)."""
        return self.log_dir / plugin_calls.TRACE_FILE

    def start_plugin_recorder(self) -> supervisor.Component:
        """Between the kubelet and the plugins, before either: it is the node's plumbing, as the
        kubelet's plugins_registry is."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self._start(
            "plugin-recorder",
            plugin_calls.recorder_command(
                self.tools.drivers_under_test / "plugin-recorder",
                self.cfg.kubelet_root_dir,
                self.name,
                self.plugin_calls_file,
                configs.CDI_DIRS,
            ),
        )

    def start_kube_proxy(self) -> supervisor.Component:
        return self._start("kube-proxy", [str(self.tools.kube("kube-proxy")), f"--config={self.dir / 'conf' / 'kube-proxy.yaml'}", "--v=1"])

    def _healthy(self, port: int) -> bool:
        """A component's healthz answers OK, inside the node's network namespace."""
        probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/healthz', timeout=2)"
        # dralab's own interpreter without site: a python3 on PATH may be a shim (pyenv's took 0.6 s a probe).
        return network.in_netns(self.netns, sys.executable, "-I", "-S", "-c", probe, check=False).returncode == 0

    def wait_kube_proxy(self, timeout: float = 30) -> None:
        wait_for(f"kube-proxy on {self.name} to program Services", lambda: self._healthy(10256), timeout, [self.component("kube-proxy")])

    def wait_kubelet(self, timeout: float = 60) -> None:
        wait_for(f"kubelet on {self.name} to be healthy", lambda: self._healthy(10248), timeout, [self.component("kubelet")])

    # Restart handles for restart tests ------------------------------------------------

    @injected("kubelet stopped")
    def stop_kubelet(self) -> None:
        supervisor.stop(self.cfg.lab_dir, f"{self.name}-kubelet")

    @injected("kubelet restarted")
    def restart_kubelet(self) -> None:
        self.stop_kubelet()
        self.start_kubelet()
        self.wait_kubelet()

    @injected("containerd stopped")
    def stop_containerd(self) -> None:
        # Stopping containerd leaves its shims and containers running, as on a real node.
        supervisor.stop(self.cfg.lab_dir, f"{self.name}-containerd")

    @injected("containerd restarted")
    def restart_containerd(self) -> None:
        self.stop_containerd()
        self.start_containerd()
        self.wait_containerd()

    @injected("pod sandbox killed")
    def kill_pod_sandbox(self, pod_uid: str) -> None:
        kill_pod_sandbox(self.ctr, pod_uid, self.name, self.log_dir / "sandbox-kill.log")

    # Reboot -------------------------------------------------------------------------------

    @injected("node rebooted")
    def reboot(self) -> None:
        """What a reboot does to the node, then the node up again with containerd, the kubelet
        and kube-proxy healthy.

        Lost, as on a real node: every process of the node (its services stopped, then every
        container and shim killed); its cgroups, which live in memory (the node's own is made
        again, empty: left behind, the kubelet spends half a minute at start-up looking for
        their containers); every mount its processes made (containers' root file systems and
        /dev/shm, pod network namespaces, the kubelet's tmpfs volumes); the contents of its
        /run, a tmpfs on a real node: containerd's state and sockets, the NRI socket, the CDI
        specs in /var/run/cdi. Kept, as a node's disk keeps them: /var/lib (images, the
        kubelet's and the drivers' checkpoints, metadata files), /etc/cdi, /var/log.
        Kept as the lab's own plumbing, which stands for the machine rather than the node's
        software: the node's network namespace (eth0, routes, the pod bridge and the rules in
        it, which kube-proxy resyncs), its mount namespace with the private dirs bound in it,
        the emulated hardware and its agent (which returns the netdevs of destroyed pod
        namespaces to the node, as the kernel does for a real NIC's)."""
        for component in ("kubelet", "kube-proxy", "containerd"):  # on purpose: not a lab fault while down
            supervisor.stop(self.cfg.lab_dir, f"{self.name}-{component}")
        # Shims and containers: nothing stops them gracefully.
        if alive := supervisor.kill_until_gone(self._processes):
            raise LabBroken(f"rebooting {self.name}: processes survived SIGKILL: {'; '.join(alive)}")
        if left := cgroups.remove(self.cgroup):
            raise LabBroken(f"rebooting {self.name}: cgroups not removed: {'; '.join(left)}")
        cgroups.create(self.cgroup)
        self._lose_volatile_state()
        self.start_containerd()
        self.wait_containerd()
        self.start_plugin_recorder()
        self.start_kubelet()
        self.start_kube_proxy()
        self.wait_kubelet()
        self.wait_kube_proxy()

    def _processes(self) -> set[int]:
        """The node's processes: those in its mount namespace (its services, containerd's shims)
        and those in its cgroup tree (containers, which have namespaces of their own)."""
        ns = f"mnt:[{network.mount_ns_file(self.cfg, self.name).stat().st_ino}]"
        found = cgroups.pids(self.cgroup)
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and os.readlink(proc / "ns" / "mnt") == ns:
                    found.add(int(proc.name))
            except OSError:  # gone meanwhile
                continue
        return found

    def _lose_volatile_state(self) -> None:
        # Unmounted inside the node, so the bind mounts that make it a node stay; in rounds, as a
        # point can be mounted more than once (one mount over another).
        for _ in range(5):
            if not (mounts := volatile_mounts(self.run("cat", "/proc/self/mountinfo").stdout)):
                break
            self.run("umount", "-l", *mounts, check=False)
        else:
            if left := volatile_mounts(self.run("cat", "/proc/self/mountinfo").stdout):
                raise LabBroken(f"rebooting {self.name}: still mounted after unmounting: {', '.join(left)}")
        for entry in self.host_path("/run").iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        self._make_dirs()


def volatile_mounts(mountinfo: str) -> list[str]:
    """The mount points below a node's private dirs, deepest first: every one but the emulated
    sysfs (the machine's, served by the lab's hardware agent) is its processes' (the lab mounts
    only the dirs themselves, and detached the host's copies below them), and a reboot loses them."""
    points = {
        re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4]) for line in mountinfo.splitlines() if line.strip()
    }
    below = [p for p in points if any(p.startswith(f"{d}/") for d in NODE_PRIVATE_DIRS) and p != NODE_SYSFS_ROOT]
    return sorted(below, key=lambda p: (-p.count("/"), p))


def kill_pod_sandbox(ctr: Callable[..., list[str]], pod_uid: str, node: str, log: Path) -> None:
    """Kill a pod's sandbox as a crash would, with the node's `ctr` (its command line for given
    arguments, namespace k8s.io): the kubelet then creates a new one, preparing the pod's claims
    again if it has not prepared them since it started."""
    # One filter, its conditions joined by commas: ctr ORs separate filters.
    only = f'labels."io.kubernetes.pod.uid"=={pod_uid},labels."io.cri-containerd.kind"==sandbox'
    sandboxes = set(subprocess.run(ctr("containers", "list", "-q", only), capture_output=True, text=True, check=True).stdout.split())
    tasks = subprocess.run(ctr("tasks", "list"), capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in tasks.splitlines()[1:]]  # TASK PID STATUS
    running = [row[0] for row in rows if row[0] in sandboxes and row[-1] == "RUNNING"]
    if not running:
        raise LabBroken(f"pod {pod_uid} has no running sandbox in containerd on {node}:\n{tasks}")
    for sandbox in running:
        run_logged(ctr("tasks", "kill", "--signal", "SIGKILL", sandbox), log, what=f"killing sandbox {sandbox} of pod {pod_uid} on {node}")
