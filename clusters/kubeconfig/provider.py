"""The kubeconfig provider: a cluster dralab did not start (for example one with real hardware),
known through its kubeconfig. Its labs can do nothing beyond the Kubernetes API: the checks that
need more SKIP, naming what they needed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from basics.errors import NotSupported
from clusters.config import ClusterConfig
from clusters.local.kwok import SLICE_ONLY_LABEL
from clusters.providers import Capability, Lab, Provider
from clusters.provision import Image


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


def kubeconfig_lab(provider: Provider, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
    """The cluster of `kubeconfig` as `provider`'s lab: its kubelet nodes and its slice-only ones,
    as their labels tell them apart."""
    from kubernetes import client

    from clusters.api_client import client_for

    api = client_for(kubeconfig)
    nodes: list[Any] = client.CoreV1Api(api).list_node().items  # the client's Optional metadata.name: a listed node's is set
    kubelet_nodes = [n.metadata.name for n in nodes if SLICE_ONLY_LABEL not in (n.metadata.labels or {})]
    slice_only = [n.metadata.name for n in nodes if SLICE_ONLY_LABEL in (n.metadata.labels or {})]
    return Lab(
        provider=provider,
        kubeconfig=kubeconfig,
        kubectl=kubectl,
        log_dir=log_dir,
        nodes=[RemoteNode(n, kubelet_root_dir) for n in kubelet_nodes],
        slice_only_nodes=slice_only,
    )


class KubeconfigProvider:
    name = "kubeconfig"
    description = "use an existing cluster"
    capabilities: frozenset[Capability] = frozenset()
    lab_noun = "cluster"

    def require_version(self, kubernetes_version: str) -> None:
        """Whatever the cluster runs: its version is the API server's."""

    def for_run(self, cfg: ClusterConfig) -> ClusterConfig:
        return cfg

    def up(self, cfg: ClusterConfig, *, offline: bool = False, images: Sequence[Image] = ()) -> Lab:
        raise NotSupported(f"the kubeconfig provider starts no lab ({cfg.name}): it uses the cluster of --kubeconfig")

    def running(self, cfg: ClusterConfig) -> Lab | None:
        return None

    def attach(self, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
        return kubeconfig_lab(self, kubeconfig, kubectl, log_dir, kubelet_root_dir)


KUBECONFIG = KubeconfigProvider()
