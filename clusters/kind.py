"""The `kind` cluster provider (LAB-06), for users with a Docker engine: the same ClusterConfig
as a local lab, rendered as a kind cluster config, created and deleted through the `kind` CLI,
with the lab's images loaded into its nodes. The suites then use it like any kubeconfig cluster.

What a kind node cannot be is refused before anything starts: slice-only nodes (they need the
lab's lease agent), a non-default kubelet root dir, emulated hardware (its trees live in the
host's mount namespace)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clusters import versions
from clusters.config import ClusterConfig, Component, flag_map
from clusters.errors import BadInput

NODE_IMAGE = f"kindest/node:{versions.KUBERNETES}"
# kubeadm's names for the control-plane components whose flags a ClusterConfiguration sets.
KUBEADM_SECTIONS: dict[Component, str] = {"kube-apiserver": "apiServer", "kube-controller-manager": "controllerManager",
                                          "kube-scheduler": "scheduler"}
# containerd 2.x: CDI devices for the DRA drivers and device plugins, NRI for the drivers' NRI plugins.
CONTAINERD_PATCHES = [
    '[plugins."io.containerd.cri.v1.runtime"]\n  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n',
    '[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n',
]


def host_has_cgroup_v1(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """cgroup v2 has cgroup.controllers at its root; v1 has none."""
    return not (root / "cgroup.controllers").exists()


def cluster_name(cfg: ClusterConfig) -> str:
    return f"dralab-{cfg.name}"


def check_supported(cfg: ClusterConfig) -> None:
    refused = []
    if cfg.slice_only_nodes:
        refused.append(f"slice_only_nodes={cfg.slice_only_nodes} (use the local provider)")
    if cfg.kubelet_root_dir != "/var/lib/kubelet":
        refused.append(f"kubelet_root_dir={cfg.kubelet_root_dir} (kind's kubelets use /var/lib/kubelet)")
    if cfg.hardware:
        refused.append("emulated hardware (its sysfs trees and netdevs live on the host, not in kind's nodes)")
    if cfg.scheduler_api_qps:
        refused.append("scheduler_api_qps (set it with a kubeadm patch of your own)")
    if refused:
        raise BadInput(f"lab {cfg.name}: the kind provider does not support " + "; ".join(refused))


def _extra_args(flags: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(flags.items())]  # kubeadm v1beta4 extraArgs


def kind_config(cfg: ClusterConfig, cgroup_v1: bool) -> dict[str, Any]:
    """The kind cluster config for `cfg`: one control-plane node and one worker per lab node."""
    check_supported(cfg)
    # Gates for every component go to kind's featureGates; a component's own overrides go to its
    # kubeadm section as the whole --feature-gates flag (kubeadm's flag replaces kind's).
    sections = {section: {"extraArgs": _extra_args({"feature-gates": flag_map(cfg.gates_for(component))})}
                for component, section in KUBEADM_SECTIONS.items() if component in cfg.component_feature_gates}
    kubelet: dict[str, Any] = {}
    if cgroup_v1:
        kubelet["failCgroupV1"] = False  # kubelet refuses cgroup v1 hosts unless told otherwise
    if "kubelet" in cfg.component_feature_gates:
        kubelet["featureGates"] = cfg.gates_for("kubelet")
    patches = [yaml.safe_dump({"apiVersion": api, "kind": kind, **fields}, sort_keys=False) for api, kind, fields in (
        ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration", sections),
        ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", kubelet)) if fields]
    config: dict[str, Any] = {
        "kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "name": cluster_name(cfg),
        "nodes": [{"role": "control-plane", "image": NODE_IMAGE}] + [{"role": "worker", "image": NODE_IMAGE}
                                                                       for _ in cfg.node_names()],
        "containerdConfigPatches": CONTAINERD_PATCHES,
    }
    if cfg.feature_gates:
        config["featureGates"] = dict(sorted(cfg.feature_gates.items()))
    if cfg.runtime_config:
        config["runtimeConfig"] = {k: str(v).lower() for k, v in sorted(cfg.runtime_config.items())}
    if patches:
        config["kubeadmConfigPatches"] = patches
    return config


def _tool(name: str, fix: str) -> str:
    path = shutil.which(name)
    if not path:
        raise BadInput(f"the kind provider needs `{name}` on PATH: {fix}")
    return path


@dataclass
class KindCluster:
    cfg: ClusterConfig
    work_dir: Path  # where the kind config and the kubeconfig are written

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "kubeconfig"

    def up(self, images: list[Path]) -> None:
        """Create the cluster and load the image archives into its nodes; on failure, delete it."""
        kind = _tool("kind", "install it (go install sigs.k8s.io/kind@latest) or use the local provider")
        _tool("docker", "kind runs its nodes as Docker containers; install a Docker engine or use the local provider")
        config = self.work_dir / "kind-config.yaml"
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump(kind_config(self.cfg, host_has_cgroup_v1()), sort_keys=False))
        try:
            subprocess.run([kind, "create", "cluster", "--config", str(config), "--kubeconfig", str(self.kubeconfig),
                            "--wait", "120s"], check=True)
            for archive in images:
                subprocess.run([kind, "load", "image-archive", str(archive), "--name", cluster_name(self.cfg)], check=True)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        kind = shutil.which("kind")
        if kind:
            subprocess.run([kind, "delete", "cluster", "--name", cluster_name(self.cfg)], check=False)

