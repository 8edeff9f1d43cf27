"""The local provider: the embedded lab (clusters/local/cluster.py), every capability."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from basics.errors import NotSupported
from clusters.config import ClusterConfig
from clusters.local import supervisor
from clusters.local.cluster import LocalCluster
from clusters.providers import Capability, Lab
from clusters.provision import Image


class LocalProvider:
    name = "local"
    description = "start the embedded lab"
    capabilities = frozenset(Capability)
    lab_noun = "lab"

    def require_version(self, kubernetes_version: str) -> None:
        """Every version dralab builds (versions.KUBERNETES_VERSIONS, the option's choices)."""

    def for_run(self, cfg: ClusterConfig) -> ClusterConfig:
        return cfg

    def up(self, cfg: ClusterConfig, *, offline: bool = False, images: Sequence[Image] = ()) -> Lab:
        cluster = LocalCluster.up(cfg, offline=offline)
        try:
            if images:
                cluster.import_images([image.archive for image in images])
        except BaseException:
            cluster.down()
            raise
        return local_lab(cluster)

    def running(self, cfg: ClusterConfig) -> Lab | None:
        cluster = LocalCluster.running(cfg)
        return local_lab(cluster) if cluster is not None else None

    def attach(self, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
        raise NotSupported("the local provider starts its labs: it uses no existing cluster")


LOCAL = LocalProvider()


def local_lab(cluster: LocalCluster) -> Lab:
    """The embedded lab `cluster` as a Lab (perf's harnesses, which run on local labs only, make
    their own LocalCluster)."""
    return Lab(
        provider=LOCAL,
        kubeconfig=cluster.kubeconfig,
        kubectl=cluster.tools.kubectl,
        log_dir=cluster.log_dir,
        nodes=list(cluster.nodes),
        slice_only_nodes=cluster.cfg.slice_only_node_names(),
        local=cluster,
        cfg=cluster.cfg,
        image_loader=cluster.import_images,
        dead_parts=lambda: supervisor.describe_down(cluster.lab_dir),
        down=cluster.down,
    )
