"""A kind cluster from a lab config (LAB-06): the Docker engine (engine.py), dralab's offline
node image (nodeimage.py), `kind create cluster` with the generated config, then what kind's
default CNI (kindnetd, whose Go module is not reachable here) would do: each node gets the local
lab's CNI conflist for its pod CIDR and a route to every other node's pod CIDR. The reference
drivers' image is loaded last. State (kind config, kubeconfig, logs) is under kind_dir()."""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml

from clusters import versions
from clusters.config import ClusterConfig, labs_root, state_file
from basics.errors import BadInput, LabBroken
from clusters.kind import engine, hardware, nodeimage, recorder
from clusters.kind.config import cluster_name, host_has_cgroup_v1, kind_config, kind_dir
from clusters.kind.node import KindNode
from clusters.local import kwok, supervisor
from clusters.local.cluster import teardown
from clusters.local.preflight import allocate_slot
from clusters.local.configs import cni_conflist
from basics.progress import console, run_logged, step
from clusters.provision import Image, Toolchain

CNI_CONFLIST = "/etc/cni/net.d/10-dralab.conflist"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # systemd colours the node containers' logs
KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster"  # on each node container, naming its cluster
KIND_NETWORK = "kind"  # the Docker network kind creates for all its clusters and leaves behind
READY_TIMEOUT = 300.0


def node_containers(nodes: list[dict]) -> dict[str, str]:
    """Node name -> its container, from kind's provider IDs (kind://docker/<cluster>/<container>);
    kwok's nodes have none."""
    return {n["metadata"]["name"]: n["spec"]["providerID"].rsplit("/", 1)[-1] for n in nodes if "providerID" in n["spec"]}


@dataclass
class KindCLI:
    """`kind create/delete cluster`, logged."""

    name: str
    kubeconfig: Path
    image: str
    kind: Path
    log: Path

    def create(self, config_file: Path) -> None:
        with step(f"kind create cluster {self.name} (log: {self.log})"):
            run_logged(
                [
                    self.kind,
                    "create",
                    "cluster",
                    "--name",
                    self.name,
                    "--image",
                    self.image,
                    "--config",
                    config_file,
                    "--kubeconfig",
                    self.kubeconfig,
                ],
                self.log,
                what=f"kind create cluster {self.name}",
            )

    def delete(self) -> None:
        run_logged([self.kind, "delete", "cluster", "--name", self.name], self.log, what=f"kind delete cluster {self.name}")


@dataclass
class KindCluster:
    cfg: ClusterConfig
    tools: Toolchain
    offline: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_kind_version(self.cfg.kubernetes_version)

    @property
    def name(self) -> str:
        return cluster_name(self.cfg)

    @property
    def dir(self) -> Path:
        return kind_dir() / self.cfg.name

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def log_dir(self) -> Path:
        """Every log of the lab: kind's, kwok's, the hardware agents', the nodes' service restarts."""
        return self.dir / "logs"

    @property
    def log(self) -> Path:
        return self.log_dir / "kind.log"

    @property
    def state_file(self) -> Path:
        return self.dir / "cluster.json"

    def _timed(self, what: str, start: float) -> None:
        self.timings[what] = round(time.monotonic() - start, 1)

    def up(self, images: tuple[Image, ...] = ()) -> None:
        """Engine, node image, cluster, pod network, images; on failure the cluster is deleted."""
        if self.cfg.hardware and self.cfg.lab_dir.exists():  # never tear down another lab of that name
            raise BadInput(
                f"a lab named {self.cfg.name!r} exists ({self.cfg.lab_dir}); `dralab down --name "
                f"{self.cfg.name}` removes it, or choose another name"
            )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(self.cfg.model_dump_json(indent=2))  # first: `dralab down` finds it
        start = time.monotonic()
        started = False
        try:
            if self.cfg.hardware:  # a local lab's hardware: its slot (fabric, netdev names) and lab dir
                self.cfg = allocate_slot(self.cfg)
                self.state_file.write_text(self.cfg.model_dump_json(indent=2))
                self.cfg.lab_dir.mkdir(parents=True)
                state_file(self.cfg.name).write_text(self.cfg.model_dump_json(indent=2))
            image = nodeimage.build(self.tools, self.offline)
            kind = nodeimage.kind_binary(self.offline)
            self._timed("node image", start)
            started = engine.start(self.offline)
            docker = engine.docker()
            nodeimage.docker_import(image, docker, self.log)
            self._timed("engine and image", start)
            config = self.dir / "kind-config.yaml"
            restrict_oom = "CAP_SYS_RESOURCE" in engine.refused_capabilities()
            mounts = recorder.mounts(self.cfg, self.tools.drivers_under_test, self.log_dir)
            for node, hardware_mounts in (hardware.mounts(self.cfg) if self.cfg.hardware else {}).items():
                mounts[node] |= hardware_mounts
            config.write_text(
                yaml.safe_dump(
                    kind_config(self.cfg, host_has_cgroup_v1(), image.ref, image.kubeadm_config, restrict_oom, mounts), sort_keys=False
                )
            )
            KindCLI(self.name, self.kubeconfig, image.ref, kind, self.log).create(config)
            self._timed("kind create", start)
            nodes = self._registered_nodes()
            containers = node_containers(nodes)
            self._pod_network(docker, nodes, containers)
            for node in self.cfg.node_names():
                recorder.start(self.cfg, node, containers[node], docker, self.log)
            if self.cfg.hardware:
                hardware.bring_up(self.cfg, self.tools, containers, docker, self.log_dir)
            self.import_images([img.archive for img in images])
            self._wait_ready()
            if self.cfg.slice_only_nodes:
                self._slice_only_nodes()
            self._timed("up", start)
        except BaseException:
            self.down(stop_engine=started)
            raise

    def import_images(self, archives: Sequence[Path]) -> None:
        """Into every node's containerd, as `kind load image-archive` does."""
        kind = nodeimage.kind_binary(offline=True)
        for archive in archives:
            run_logged(
                [kind, "load", "image-archive", archive, "--name", self.name],
                self.log,
                what=f"loading {archive.name} into kind cluster {self.name}",
            )

    def nodes(self) -> list[KindNode]:
        """The lab's nodes (kind's workers, named as the local lab's) as node handles; kind's
        provider ID names each one's container."""
        containers = node_containers(json.loads(self._kubectl("get", "nodes", "-o", "json"))["items"])
        docker = engine.docker()
        server = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        return [
            KindNode(name, containers[name], docker, self.log_dir / name, self.dir, server, self.cfg.kubelet_root_dir)
            for name in self.cfg.node_names()
        ]

    def dead_parts(self) -> list[str]:
        """The lab's diagnosis: the engine, the node containers (with their logs' tail), kwok and
        the hardware agents."""
        if not engine.engine_running():
            return [
                f"the Docker engine does not answer (`docker info` fails); dralab's dockerd log: "
                f"{engine.engine_dir() / 'logs' / 'dockerd.log'}"
            ]
        containers = self.containers()
        dead = [
            f"kind node container {name} is {status}; last lines of `docker logs {name}`:\n{self.container_log(name)}"
            for name, (state, status) in sorted(containers.items())
            if state != "running"
        ]
        dead += [
            f"the plugin recorder in kind node container {name} is not running (its log: {self.log_dir}/<node>/{recorder.LOG})"
            for name, (state, _) in sorted(containers.items())
            if state == "running" and not name.endswith("-control-plane") and self._recorder_down(name)
        ]
        dirs = [self.dir] + ([self.cfg.lab_dir] if self.cfg.hardware else [])
        return dead + [problem for d in dirs for problem in supervisor.describe_down(d)]

    def container_log(self, container: str, lines: int = 8) -> str:
        logs = subprocess.run([engine.docker(), "logs", "--tail", str(lines), container], capture_output=True, text=True)
        return ANSI.sub("", logs.stdout + logs.stderr).strip()

    def _recorder_down(self, container: str) -> bool:
        """Whether a running worker's processes lack the recorder (unknown if `docker top` fails:
        the container's own state is reported then)."""
        top = subprocess.run([engine.docker(), "top", container, "-eo", "pid,args"], capture_output=True, text=True)
        return top.returncode == 0 and not recorder.running(top.stdout)

    def containers(self) -> dict[str, tuple[str, str]]:
        """kind's node containers of this cluster: name -> (state, Docker's status line), e.g.
        ("exited", "Exited (130) 5 seconds ago"); empty when no engine runs."""
        if not engine.engine_running():
            return {}
        out = subprocess.run(
            [
                engine.docker(),
                "ps",
                "-a",
                "--filter",
                f"label={KIND_CLUSTER_LABEL}={self.name}",
                "--format",
                "{{.Names}}\t{{.State}}\t{{.Status}}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return {name: (state, status) for name, state, status in (line.split("\t") for line in out.splitlines())}

    def api(self):  # -> kubernetes.client.ApiClient
        from clusters.api_client import client_for

        return client_for(self.kubeconfig)

    def _kubectl(self, *args: str) -> str:
        return subprocess.run(
            [str(self.tools.kubectl), "--kubeconfig", str(self.kubeconfig), *args], capture_output=True, text=True, check=True
        ).stdout

    def _registered_nodes(self) -> list[dict]:
        """Every node, once each has a pod CIDR. Workers are named as the lab's nodes; kind's
        provider ID names their containers."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            nodes = json.loads(self._kubectl("get", "nodes", "-o", "json"))["items"]
            cidrs = {n["metadata"]["name"]: n["spec"].get("podCIDR") for n in nodes}
            if len(nodes) == self.cfg.nodes + 1 and all(cidrs.values()):
                return nodes
            if time.monotonic() > deadline:
                raise LabBroken(f"kind nodes without a pod CIDR after {READY_TIMEOUT:.0f}s: {cidrs}")
            time.sleep(1)

    def _pod_network(self, docker: str, nodes: list[dict], containers: dict[str, str]) -> None:
        """The local lab's bridge conflist per node and routes between the nodes' pod CIDRs."""
        cidrs = {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in nodes}
        ips = {n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP") for n in nodes}
        for node, cidr in cidrs.items():
            script = [f"cat > {CNI_CONFLIST} <<'EOF'\n{cni_conflist(str(ipaddress.ip_network(cidr)))}\nEOF"]
            script += [f"ip route replace {other_cidr} via {ips[other]}" for other, other_cidr in cidrs.items() if other != node]
            run_logged(
                [docker, "exec", containers[node], "sh", "-euc", "\n".join(script)], self.log, what=f"pod network of kind node {node}"
            )

    def _wait_ready(self) -> None:
        with step(f"waiting for the nodes of {self.name} to be Ready"):
            self._kubectl("wait", "--for=condition=Ready", "nodes", "--all", f"--timeout={READY_TIMEOUT:.0f}s")
            self._kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns", f"--timeout={READY_TIMEOUT:.0f}s")

    def _slice_only_nodes(self) -> None:
        """kwok on this host against the kind API server, as a local lab runs it (LAB-09): it keeps
        the slice-only Node objects Ready; supervised in the kind lab's dir."""
        stages = kwok.write_stages(self.tools, self.dir)
        component = supervisor.start(
            "kwok",
            kwok.command(self.tools, self.cfg, self.kubeconfig, stages),
            lab_dir=self.dir,
            log_dir=self.log_dir,
            env=kwok.environment(self.dir),
        )
        with step(f"{self.cfg.slice_only_nodes} slice-only nodes (kwok)"):
            kwok.bring_up(self.api(), self.cfg.slice_only_node_names(), [component])

    def components(self) -> dict[str, supervisor.Component]:
        """The host processes of this kind lab (kwok); the hardware agents are its local lab dir's."""
        return supervisor.load(self.dir)

    def down(self, stop_engine: bool = True) -> None:
        """Delete the cluster; with no kind cluster left, kind's network too, and the engine if
        dralab started it."""
        kind = nodeimage.kind_binary(offline=True)
        components = self.components()
        supervisor.terminate(list(components.values()), timeout=10.0)
        for name in components:
            supervisor.forget(self.dir, name)
        if engine.engine_running():
            KindCLI(self.name, self.kubeconfig, "", kind, self.log).delete()
            if not subprocess.run([str(kind), "get", "clusters"], capture_output=True, text=True).stdout.split():
                subprocess.run([engine.docker(), "network", "rm", KIND_NETWORK], capture_output=True)
                if stop_engine:
                    engine.stop()
        if self.cfg.hardware:  # after the nodes: the hardware's netns handles name their namespaces
            for problem in teardown(self.cfg):
                console.print(f"[red]left behind:[/red] {problem}")
        if self.log_dir.exists():  # kept as a local lab's logs are (LAB-07)
            kept = labs_root() / "logs" / self.cfg.name / f"kind-{time.strftime('%Y%m%d-%H%M%S')}"
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(self.log_dir), str(kept))
        shutil.rmtree(self.dir, ignore_errors=True)


def require_kind_version(kubernetes_version: str) -> None:
    if kubernetes_version != versions.KUBERNETES:
        raise BadInput(
            f"kind labs run Kubernetes {versions.KUBERNETES} only (their offline node image pins "
            f"kubeadm and CoreDNS to it), not {kubernetes_version}: use --cluster local for other versions"
        )


def kind_labs() -> list[str]:
    """The kind labs up (or not taken down): each keeps its state dir until `down`."""
    root = kind_dir()
    return sorted(p.parent.name for p in root.glob("*/cluster.json"))


def load(name: str) -> KindCluster | None:
    """The kind lab `name` from its state, None when there is no such kind lab."""
    from clusters.provision import provision

    state = kind_dir() / name / "cluster.json"
    if not state.exists():
        return None
    return KindCluster(ClusterConfig.model_validate_json(state.read_text()), provision(offline=True))


def down_kind(name: str) -> bool:
    """`dralab down` of a kind lab (and its hardware); False when `name` is not a kind lab."""
    cluster = load(name)
    if cluster is None:
        return False
    cluster.down()
    return True
