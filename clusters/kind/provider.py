"""The kind provider (LAB-06): the lab's nodes as a kind cluster. No node reboots (a node's
container would come back without the emulated NICs and routes), no host processes (they run in
the node containers)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from basics.errors import NotSupported
from clusters.config import ClusterConfig
from clusters.kind.cluster import KindCluster, require_kind_version
from clusters.kubeconfig.provider import kubeconfig_lab
from clusters.lab_configurations import on_kind
from clusters.providers import Capability, Lab
from clusters.provision import Image


class KindProvider:
    name = "kind"
    description = (
        "start a kind cluster (clusters/kind: a running Docker engine or Debian's dockerd, kind and its "
        "node image built offline; emulated hardware, slice-only nodes by kwok)"
    )
    capabilities = frozenset(Capability) - {
        Capability.HOST_PROCESSES,
        Capability.NODE_REBOOTS,
        Capability.AUDIT_LOG,
        Capability.REUSED_LABS,
        Capability.SHARDED_RUNS,
    }
    lab_noun = "kind lab"

    def require_version(self, kubernetes_version: str) -> None:
        require_kind_version(kubernetes_version)

    def for_run(self, cfg: ClusterConfig) -> ClusterConfig:
        return on_kind(cfg)

    def up(self, cfg: ClusterConfig, *, offline: bool = False, images: Sequence[Image] = ()) -> Lab:
        """The lab with the reference drivers' image loaded besides `images`."""
        from clusters.provision import provision

        tools = provision(offline=offline)
        cluster = KindCluster(cfg, tools, offline)
        cluster.up(images=(tools.drivers_image, *images))
        return kind_lab(cluster)

    def running(self, cfg: ClusterConfig) -> Lab | None:
        return None

    def attach(self, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
        raise NotSupported("the kind provider starts its labs: it uses no existing cluster")


KIND = KindProvider()


def kind_lab(cluster: KindCluster) -> Lab:
    """A kind lab: its workers (named as the local lab's nodes; the control plane runs no pods) as
    node handles, its slice-only nodes, its configuration and image loading."""
    lab = kubeconfig_lab(KIND, cluster.kubeconfig, cluster.tools.kubectl, cluster.log_dir, cluster.cfg.kubelet_root_dir)
    return dataclasses.replace(
        lab, nodes=[*cluster.nodes()], cfg=cluster.cfg, image_loader=cluster.import_images, dead_parts=cluster.dead_parts, down=cluster.down
    )
