"""The `local` provider: a multi-node cluster of host processes under one lab directory."""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Sequence

from basics.children import interrupts_kept
from basics.errors import BadInput, LabBroken
from basics.progress import console, step
from clusters import audit
from clusters.config import ClusterConfig, labs_root, saved_config, state_file
from clusters.local import cgroups, configs, hardware, kwok, network, preflight, supervisor
from clusters.local.node import LocalNode
from clusters.local.readiness import wait_cluster_ready
from clusters.local.waits import https_ok, wait_for
from clusters.pki import PKI, CertKey, write_kubeconfig
from clusters.provision import Toolchain, provision
from fake_hardware.nvml import Userspace


class LocalCluster:
    def __init__(self, cfg: ClusterConfig, tools: Toolchain) -> None:
        self.cfg = cfg
        self.tools = tools
        self.nodes = [LocalNode(cfg, tools, name, i) for i, name in enumerate(cfg.node_names(), start=1)]
        # LAB-09: how long kwok took to make the slice-only nodes Ready, from their creation (this bring-up's).
        self.kwok_nodes_ready_s: float | None = None

    # Where things are -------------------------------------------------------------------

    @property
    def lab_dir(self) -> Path:
        return self.cfg.lab_dir

    @property
    def log_dir(self) -> Path:
        return self.lab_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.lab_dir / "pki" / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self.cfg.host_ip}:{configs.APISERVER_PORT}"

    @property
    def ca(self) -> Path:
        return self.lab_dir / "pki" / "ca.crt"

    def node(self, name: str) -> LocalNode:
        return next(n for n in self.nodes if n.name == name)

    def components(self) -> dict[str, supervisor.Component]:
        return supervisor.load(self.lab_dir)

    # Loading an existing lab --------------------------------------------------------------

    state_file = staticmethod(state_file)

    @classmethod
    def load(cls, name: str) -> "LocalCluster":
        cfg = saved_config(name)
        if cfg is None:
            raise BadInput(f"no lab named {name!r} ({state_file(name)} does not exist); start one with `dralab up`")
        return cls(cfg, provision(offline=True, kubernetes_version=cfg.kubernetes_version))

    @classmethod
    def running(cls, cfg: ClusterConfig) -> "LocalCluster | None":
        """The live lab started with exactly `cfg`, its components all up and its nodes Ready; None
        when there is no such lab (a lab of that name with another configuration is not it)."""
        saved = saved_config(cfg.name)
        if saved is None or saved != (cfg if cfg.slot else cfg.model_copy(update={"slot": saved.slot})):
            return None  # (slot 0 asks for any free slot: the one it got is as good)
        cluster = cls(saved, provision(offline=True, kubernetes_version=saved.kubernetes_version))
        try:
            cluster.wait_ready(timeout=20)  # ends at once, LabBroken, on a dead component
        except LabBroken:
            return None
        return cluster

    @staticmethod
    def names() -> list[str]:
        return sorted(p.parent.name for p in (labs_root() / "labs").glob("*/cluster.json"))

    # Bring-up -----------------------------------------------------------------------------

    @classmethod
    def up(cls, cfg: ClusterConfig, *, offline: bool = False) -> "LocalCluster":
        """Start a lab; on any failure or interrupt tear down what was started, then re-raise. The
        lab's name is locked until then: another command neither takes it nor removes it half-built."""
        preflight.require_root("up")
        with preflight.lab_name_lock(cfg.name):
            return cls._up(cfg, offline)

    @classmethod
    def _up(cls, cfg: ClusterConfig, offline: bool) -> "LocalCluster":
        require_no_live_lab(cfg)
        tools = provision(offline=offline, kubernetes_version=cfg.kubernetes_version)
        preflight.require_known_gates(cfg, tools)
        if cfg.hardware:
            from fake_hardware.lab import HardwareLab

            HardwareLab(cfg.hardware_site())  # profiles and node names are checked before anything starts
        for change in preflight.raise_inotify_limits():
            console.print(f"raised {change}, for kubelets and containerds of several labs")
        with preflight.slot_lock():
            cfg = preflight.allocate_slot(cfg)
            preflight.require_free_ports(cfg)
            cluster = cls(cfg, tools)
            cluster.lab_dir.mkdir(parents=True)
            # Written first (it takes the slot): a crashed bring-up can always be found and torn down.
            cluster.state_file(cfg.name).write_text(cfg.model_dump_json(indent=2))
        try:
            with interrupts_kept():
                cluster._bring_up()
        except BaseException:
            console.print(
                f"[red]bring-up of lab {cfg.name!r} failed: tearing down; logs kept under {labs_root() / 'logs' / cfg.name}[/red]"
            )
            cluster.down()
            raise
        return cluster

    def _bring_up(self) -> None:
        cfg = self.cfg
        with step(f"Starting lab {cfg.name!r}: {cfg.nodes} nodes, {cfg.slice_only_nodes} slice-only (kwok), network {cfg.subnet}"):
            pki = self._write_pki()
            network.create_bridge(cfg)
            network.create_mount_ns_dir(cfg)
            cgroups.create(cfg.cgroup_parent)  # the nodes' shared parent, before they are set up in parallel
            etcd = self._start("etcd", configs.etcd_command(self.tools, cfg, self.lab_dir / "etcd"))
            apiserver = self._start(
                "kube-apiserver",
                configs.apiserver_command(self.tools, cfg, pki, pki["ca"].cert, audit.apiserver_flags(self.lab_dir, self.log_dir)),
            )
            _parallel(lambda n: n.create(self._pki, self.server), self.nodes)
            if cfg.hardware:  # before the kubelets, so drivers find their devices from the start
                hardware.bring_up(
                    cfg,
                    self.log_dir,
                    Userspace(self.tools.nvml_library, self.tools.nvidia_smi),
                    self.tools.drivers_under_test,
                    {n: network.mount_ns_file(cfg, n) for n in cfg.hardware},
                )
            for node in self.nodes:
                node.start_containerd()

            def containerd_up(n: LocalNode) -> None:
                n.wait_containerd()
                n.import_images([i.archive for i in self.tools.node_images])

            _parallel(containerd_up, self.nodes)
            for node in self.nodes:
                node.start_plugin_recorder()
                node.start_kubelet()
                node.start_kube_proxy()
            wait_for(
                "kube-apiserver /readyz",
                lambda: https_ok(f"{self.server}/readyz", self.ca, pki["admin"].cert, pki["admin"].key),
                60,
                [etcd, apiserver],
            )
            # Started once the API server has bootstrapped RBAC: they read configmaps at start-up.
            self._start(
                "kube-controller-manager",
                configs.controller_manager_command(
                    self.tools, cfg, self._component_kubeconfig("controller-manager", "system:kube-controller-manager"), pki
                ),
            )
            self._start(
                "kube-scheduler",
                configs.scheduler_command(self.tools, cfg, self._component_kubeconfig("scheduler", "system:kube-scheduler")),
            )
            if cfg.slice_only_nodes:
                self._start(
                    "kwok",
                    kwok.command(self.tools, cfg, self.kubeconfig, kwok.write_stages(self.tools, self.lab_dir)),
                    env=kwok.environment(self.lab_dir),
                )
                self.kwok_nodes_ready_s = kwok.bring_up(self.api(), cfg.slice_only_node_names(), list(self.components().values()))
            self.wait_ready()

    def wait_ready(self, timeout: float = 90) -> None:
        wait_cluster_ready(self.api(), self.nodes, list(self.components().values()), timeout)

    def _write_pki(self) -> dict[str, CertKey]:
        cfg = self.cfg
        self._pki = pki = PKI(self.lab_dir / "pki")
        certs = {
            "ca": pki.ca,
            "apiserver": pki.issue(
                "apiserver",
                "kube-apiserver",
                server=True,
                client=False,
                dns=("kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"),
                ips=(cfg.host_ip, "10.96.0.1", "127.0.0.1"),
            ),
            "apiserver-kubelet-client": pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",)),
            "admin": pki.issue("admin", "dralab-admin", ("system:masters",)),
            "sa": pki.service_account_keys(),
        }
        write_kubeconfig(self.kubeconfig, self.server, pki.ca.cert, certs["admin"], "dralab-admin")
        return certs

    def _component_kubeconfig(self, name: str, user: str) -> Path:
        creds = self._pki.issue(name, user)
        return write_kubeconfig(self.lab_dir / "pki" / f"{name}.kubeconfig", self.server, self._pki.ca.cert, creds, user)

    def _start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> supervisor.Component:
        return supervisor.start(name, cmd, lab_dir=self.lab_dir, log_dir=self.log_dir, env=env)

    def api(self):  # -> kubernetes.client.ApiClient
        from clusters.api_client import client_for

        return client_for(self.kubeconfig)

    # Health -------------------------------------------------------------------------------

    def import_images(self, archives: Sequence[Path]) -> None:
        _parallel(lambda n: n.import_images(archives), self.nodes)

    def check_components(self) -> None:
        supervisor.check_alive(list(self.components().values()))

    # Teardown -----------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Remove everything the lab created; return what could not be removed."""
        return teardown(self.cfg)


def teardown(cfg: ClusterConfig) -> list[str]:
    """Kill, unmount and delete every trace of a lab; works from the state file alone."""
    lab_dir = cfg.lab_dir
    problems: list[str] = []
    # Processes first: every lab process (marker in its environment), every process in the
    # lab's cgroups (containers) and in its nodes' namespaces (shims), all at once.
    problems += [
        f"process survived SIGKILL: {p}"
        for p in supervisor.kill_until_gone(
            lambda: set(supervisor.lab_processes(lab_dir)) | cgroups.pids(cfg.cgroup_parent) | set(_namespace_members(cfg))
        )
    ]
    network.unmount_all(lab_dir)
    network.delete_netns(network.lab_netns(cfg.name))
    if cfg.slot:
        network.delete_links(cfg.slot_links(network.links_named("dralab")))
    problems += cgroups.remove(cfg.cgroup_parent)
    if lab_dir.exists():
        _keep_logs(cfg)
        shutil.rmtree(lab_dir, ignore_errors=True)
        if lab_dir.exists():
            problems.append(f"{lab_dir} could not be removed")
    network.release_host_mount_points()
    return problems


def require_no_live_lab(cfg: ClusterConfig) -> None:
    """Refuse a name whose lab is running; remove one that no process is alive in, left by a run
    killed with its machine (a VM stopped or restored mid-run), which nobody can be using."""
    if not cfg.lab_dir.exists():
        return
    saved = saved_config(cfg.name) or cfg
    alive = preflight.live_processes(saved)
    if not alive:
        console.print(
            f"[yellow]lab {cfg.name!r} was left by a run none of whose processes is alive: removing it "
            f"first; its logs kept under {labs_root() / 'logs' / cfg.name}[/yellow]"
        )
        teardown(saved)
    preflight.require_no_lab(cfg, alive)


def remove(cfg: ClusterConfig) -> list[str]:
    """Tear a lab down, then scan for its residue: what could not be removed, for the user to see."""
    from clusters import residue

    with preflight.lab_name_lock(cfg.name):
        return teardown(cfg) + [str(r) for r in residue.find(cfg.name)]


def _namespace_members(cfg: ClusterConfig) -> Iterator[int]:
    inodes = set()
    for ns_file in (cfg.lab_dir / "ns").glob("*.mnt"):
        try:
            inodes.add(f"mnt:[{ns_file.stat().st_ino}]")
        except OSError:
            continue
    for name in network.lab_netns(cfg.name):
        inodes.add(f"net:[{Path('/run/netns', name).stat().st_ino}]")
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "ns" / "mnt") in inodes or os.readlink(proc / "ns" / "net") in inodes:
                    yield int(proc.name)
            except OSError:
                continue


def _keep_logs(cfg: ClusterConfig) -> None:
    """LAB-07: a run's component logs outlive the lab, under DRALAB_LABS/logs/<lab>/<time>."""
    logs = cfg.lab_dir / "logs"
    if logs.is_dir():
        dest = labs_root() / "logs" / cfg.name / time.strftime("%Y%m%d-%H%M%S")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(logs), str(dest))


def _parallel(fn: Callable[[LocalNode], object], nodes: list[LocalNode]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        for future in [pool.submit(fn, n) for n in nodes]:
            future.result()
