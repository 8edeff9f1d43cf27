"""Cluster providers as the suites see them: a `Lab` with API access, nodes and logs.

`local` starts the embedded lab and `kind` a kind cluster (clusters/kind): dralab owns their
nodes, their configuration (`Lab.cfg`) and their emulated hardware. `kubeconfig` uses an existing
cluster (for example one with real hardware), where what only an owned lab can do (restarting a
node's kubelet, reading its files) is reported as unsupported and the tests that need it skip;
what only a local lab can do (reaching its NRI socket, its kubelets' credentials) too on kind.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from clusters import audit, nri_log, plugin_calls, watch_log
from clusters.config import ClusterConfig
from basics.errors import NotSupported
from clusters.kind.cluster import KindCluster
from clusters.local import supervisor
from clusters.local.cluster import LocalCluster
from clusters.local.node import LocalNode
from clusters.local.kwok import SLICE_ONLY_LABEL


class Capability(StrEnum):
    """What a lab can do beyond the Kubernetes API, by provider (Lab.capabilities). A check asks for
    what it needs (Lab.require); on a lab without it the check SKIPs, naming what it needed."""

    HOST_ACCESS = "host access to the nodes' files and services"
    EMULATED_HARDWARE = "emulated hardware"
    IMAGE_LOADING = "image archives loaded into the nodes"
    COMPONENT_RESTARTS = "kubelet and containerd restarts under running pods"
    HOST_PROCESSES = "the nodes' processes on this host"
    NODE_REBOOTS = "node reboots"
    OTHER_LABS = "labs of other cluster configurations started beside the run's"


# What each provider's labs can do. kind: no node reboot (its container would come back without
# the emulated NICs and routes), no host processes (they run in the node containers).
CAPABILITIES = {
    "local": frozenset(Capability),
    "kind": frozenset(Capability) - {Capability.HOST_PROCESSES, Capability.NODE_REBOOTS},
    "kubeconfig": frozenset(),
}


class NodeHandle(Protocol):
    name: str

    @property
    def kubelet_root_dir(self) -> str: ...
    def host_path(self, node_path: str) -> Path: ...
    def restart_kubelet(self) -> None: ...
    def restart_containerd(self) -> None: ...
    def stop_kubelet(self) -> None: ...
    def start_kubelet(self) -> object: ...
    def wait_kubelet(self) -> None: ...
    @property
    def kubelet_kubeconfig(self) -> Path: ...
    def kill_pod_sandbox(self, pod_uid: str) -> None: ...
    def reboot(self) -> None: ...
    @property
    def plugin_calls_file(self) -> Path: ...


@dataclass
class RemoteNode:
    """A node of a cluster dralab does not own: known by name and its kubelet root dir only."""

    name: str
    kubelet_root_dir: str = "/var/lib/kubelet"

    def host_path(self, node_path: str) -> Path:
        raise NotSupported(f"node {self.name} is not a local lab node: its files are not on this host")

    def _unsupported(self, *_: object) -> None:
        raise NotSupported(f"node {self.name} belongs to a kubeconfig cluster: dralab cannot restart it or its components")

    restart_kubelet = restart_containerd = stop_kubelet = start_kubelet = wait_kubelet = kill_pod_sandbox = reboot = _unsupported

    @property
    def kubelet_kubeconfig(self) -> Path:
        raise NotSupported(f"node {self.name} belongs to a kubeconfig cluster: dralab has no kubelet credentials of it")

    @property
    def plugin_calls_file(self) -> Path:
        raise NotSupported(f"node {self.name} belongs to a kubeconfig cluster: it runs no plugin recorder of dralab's")


@dataclass
class Lab:
    provider: str
    kubeconfig: Path
    kubectl: Path
    log_dir: Path
    nodes: list[NodeHandle]
    slice_only_nodes: list[str] = field(default_factory=list)
    local: LocalCluster | None = None
    # A lab dralab started (local or kind): its configuration, hardware included, and how image
    # archives get into its nodes.
    cfg: ClusterConfig | None = None
    import_images: Callable[[Sequence[Path]], None] | None = None
    # The lab's parts that died, each with its evidence: none known of a cluster dralab did not start.
    dead_parts: Callable[[], list[str]] = list
    # When this run took the lab on: what its nodes recorded before is an earlier run's (a lab reused
    # across runs, as selfcheck's variants share one), not this run's to judge.
    taken: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    # The API server's audit log of claim status writes (clusters/audit.py): a local lab's only.
    audit_log: Path | None = None

    def api(self):  # -> kubernetes.client.ApiClient
        from clusters.api_client import client_for

        return client_for(self.kubeconfig)

    def node(self, name: str) -> NodeHandle:
        return next(n for n in self.nodes if n.name == name)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return CAPABILITIES.get(self.provider, frozenset())

    def require(self, capability: Capability, needed_for: str) -> None:
        """NotSupported (the check does not apply here: a SKIP naming what it needed, not a harness
        error) unless this lab has `capability`."""
        if capability not in self.capabilities:
            raise NotSupported(f"{needed_for} needs {capability.value}, which the {self.provider} provider does not give")

    def local_node(self, name: str) -> LocalNode:
        return self.local_cluster(f"reaching node {name}'s processes").node(name)

    def local_cluster(self, needed_for: str) -> LocalCluster:
        """The embedded local lab."""
        self.require(Capability.HOST_PROCESSES, needed_for)
        assert self.local is not None  # the local provider's labs have it
        return self.local

    def started_config(self, needed_for: str) -> ClusterConfig:
        """The configuration, emulated hardware included, of a lab dralab started."""
        self.require(Capability.EMULATED_HARDWARE, needed_for)
        assert self.cfg is not None  # every lab dralab started has it
        return self.cfg

    @property
    def restartable(self) -> tuple[str, ...]:
        """What dralab can restart under a running pod on this lab's nodes."""
        return (("kubelet", "containerd") if Capability.COMPONENT_RESTARTS in self.capabilities else ()) + (
            ("node",) if Capability.NODE_REBOOTS in self.capabilities else ()
        )

    @property
    def plugin_registries(self) -> tuple[str, str] | None:
        """The kubelet's plugins_registry and the driver registry the plugins' sockets go to
        instead, in a lab whose nodes run the plugin recorder (clusters/plugin_calls.py): every lab
        dralab started, local or kind."""
        if self.cfg is None:
            return None
        root = self.cfg.kubelet_root_dir
        return plugin_calls.kubelet_registry(root), plugin_calls.driver_registry(root)

    def registration_dir(self, node: NodeHandle) -> str:
        """Where the drivers' registration sockets are on `node`: the driver registry under the
        plugin recorder, else the kubelet's plugins_registry."""
        return self.plugin_registries[1] if self.plugin_registries else plugin_calls.kubelet_registry(node.kubelet_root_dir)

    def plugin_calls(self) -> list[plugin_calls.PluginCall]:
        """Every call between the kubelets and their plugins recorded since this run took the lab,
        node by node."""
        if self.plugin_registries is None:
            raise NotSupported(f"the {self.provider} provider's nodes run no plugin recorder: no kubelet-plugin calls are recorded")
        return [call for node in self.nodes for call in plugin_calls.read(node.plugin_calls_file) if call.start >= self.taken]

    def record_container_files(self, records: list[dict[str, Any]]) -> None:
        """Keep what the suites saw in containers (one record each: when, where, what the container
        uses, its files) for the run's trace and the checks over it."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / plugin_calls.CONTAINER_FILES_LOG).open("a") as out:
            out.writelines(json.dumps({"kind": "ContainerFiles", **r}) + "\n" for r in records)

    def container_files(self) -> list[dict[str, Any]]:
        """Every record of files seen in a container since this run took the lab."""
        log = self.log_dir / plugin_calls.CONTAINER_FILES_LOG
        if not log.exists():
            return []
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        return [r for r in records if datetime.fromisoformat(r["start"]) >= self.taken]

    def claims_allocated(self) -> dict[str, dict[str, Any]]:
        """Each claim the run saw allocated in this lab, by UID: its last version in the claim log
        (clusters/watch_log.py), which a lab dralab started keeps; none for a kubeconfig cluster."""
        return watch_log.allocations(self.log_dir / watch_log.CLAIM_LOG)

    def claim_versions(self) -> list[dict[str, Any]]:
        """Every version of every claim created since this run took the lab, as the claim log saw them."""
        return watch_log.versions(self.log_dir / watch_log.CLAIM_LOG, self.taken)

    def pod_versions(self) -> list[dict[str, Any]]:
        """Every version of every pod created since this run took the lab, as the pod log saw them."""
        return watch_log.versions(self.log_dir / watch_log.POD_LOG, self.taken)

    def nri_errors(self) -> list[str]:
        """containerd's lines against NRI plugins since this run took the lab (clusters/nri_log.py);
        none where the nodes' containerd logs are not at hand (a cluster dralab did not start)."""
        return nri_log.errors(self.log_dir, self.taken)

    def check_components(self) -> None:
        if self.local is not None:
            self.local.check_components()


def local_lab(cluster: LocalCluster) -> Lab:
    return Lab(
        provider="local",
        kubeconfig=cluster.kubeconfig,
        kubectl=cluster.tools.kubectl,
        log_dir=cluster.log_dir,
        nodes=list(cluster.nodes),
        slice_only_nodes=cluster.cfg.slice_only_node_names(),
        local=cluster,
        cfg=cluster.cfg,
        import_images=cluster.import_images,
        dead_parts=lambda: supervisor.describe_down(cluster.lab_dir),
        audit_log=cluster.log_dir / audit.LOG_NAME,
    )


def kind_lab(cluster: KindCluster) -> Lab:
    """A kind lab: its workers (named as the local lab's nodes; the control plane runs no pods) as
    node handles, its slice-only nodes, its configuration and image loading."""
    lab = kubeconfig_lab(cluster.kubeconfig, cluster.tools.kubectl, cluster.log_dir, cluster.cfg.kubelet_root_dir)
    return dataclasses.replace(
        lab, provider="kind", nodes=[*cluster.nodes()], cfg=cluster.cfg, import_images=cluster.import_images, dead_parts=cluster.dead_parts
    )


def kubeconfig_lab(kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
    from kubernetes import client

    from clusters.api_client import client_for

    api = client_for(kubeconfig)
    nodes: list[Any] = client.CoreV1Api(api).list_node().items  # the client's Optional metadata.name: a listed node's is set
    kubelet_nodes = [n.metadata.name for n in nodes if SLICE_ONLY_LABEL not in (n.metadata.labels or {})]
    slice_only = [n.metadata.name for n in nodes if SLICE_ONLY_LABEL in (n.metadata.labels or {})]
    return Lab(
        provider="kubeconfig",
        kubeconfig=kubeconfig,
        kubectl=kubectl,
        log_dir=log_dir,
        nodes=[RemoteNode(n, kubelet_root_dir) for n in kubelet_nodes],
        slice_only_nodes=slice_only,
    )
