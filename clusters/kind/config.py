"""The kind cluster config of a lab config (LAB-06): the same nodes, feature gates and
runtime-config as a local lab, containerd's CDI and NRI on, dralab's offline node image.

What a kind cluster cannot be is refused before anything starts (control-plane client QPS).
Slice-only nodes are kwok's, run on the host against the kind API server (cluster.py). Emulated hardware is mounted into the workers
(extraMounts) where the local lab's nodes see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from basics.errors import BadInput
from clusters.config import ClusterConfig, Component, flag_map, labs_root
from clusters.local.configs import NODE_STATUS_UPDATE_FREQUENCY, SYNC_FREQUENCY

DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"

# kubeadm's names for the control-plane components whose flags a ClusterConfiguration sets.
KUBEADM_SECTIONS: dict[Component, str] = {
    "kube-apiserver": "apiServer",
    "kube-controller-manager": "controllerManager",
    "kube-scheduler": "scheduler",
}
# containerd 2.x: CDI devices for the DRA drivers and device plugins, NRI for the drivers' NRI plugins.
# Named as in kind's config.toml (version 2), which containerd 2 migrates as a whole.
CONTAINERD_PATCHES = [
    '[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n',
    '[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n',
]


def kind_dir() -> Path:
    """Where each kind lab keeps its state (cluster.json, kubeconfig, kind log) while it is up."""
    return labs_root() / "kind"


def host_has_cgroup_v1(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """cgroup v2 has cgroup.controllers at its root; v1 has none."""
    return not (root / "cgroup.controllers").exists()


def cluster_name(cfg: ClusterConfig) -> str:
    return f"dralab-{cfg.name}"


def check_supported(cfg: ClusterConfig) -> None:
    refused = []
    if cfg.control_plane_api_qps:
        refused.append("control_plane_api_qps (set it with a kubeadm patch of your own)")
    if refused:
        raise BadInput(f"lab {cfg.name}: the kind provider does not support " + "; ".join(refused))


def _extra_args(flags: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(flags.items())]  # kubeadm v1beta4 extraArgs


def _registration(cfg: ClusterConfig) -> dict[str, Any]:
    """A node's kubeadm nodeRegistration: the kubelet's --root-dir where the lab moves it (kubeadm
    keeps its own files in /var/lib/kubelet; the kubelet's pods, plugins and checkpoints go there)."""
    if cfg.kubelet_root_dir == DEFAULT_KUBELET_ROOT:
        return {}
    return {"kubeletExtraArgs": [{"name": "root-dir", "value": cfg.kubelet_root_dir}]}


def worker(cfg: ClusterConfig, name: str, image: str, mounts: dict[str, Path]) -> dict[str, Any]:
    """A worker registered under the local lab's node name (node-1, ...), not its container's, so
    the suites and hardware profiles name the same nodes on both providers; `mounts`: node path ->
    host path (its emulated hardware)."""
    join = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "JoinConfiguration", "nodeRegistration": {"name": name, **_registration(cfg)}}
    node: dict[str, Any] = {"role": "worker", "image": image, "kubeadmConfigPatches": [yaml.safe_dump(join, sort_keys=False)]}
    if mounts:
        node["extraMounts"] = [{"hostPath": str(host), "containerPath": path} for path, host in sorted(mounts.items())]
    return node


def control_plane(cfg: ClusterConfig, image: str) -> dict[str, Any]:
    node: dict[str, Any] = {"role": "control-plane", "image": image}
    if registration := _registration(cfg):
        init = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration", "nodeRegistration": registration}
        node["kubeadmConfigPatches"] = [yaml.safe_dump(init, sort_keys=False)]
    return node


# Where root may not lower OOM scores (no CAP_SYS_RESOURCE, as on this VM), containerd must not try
# for its pods (kind's entrypoint does the same for rootless nodes); the local lab sets it too.
RESTRICT_OOM_SCORE_ADJ = '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true\n'


def kind_config(
    cfg: ClusterConfig,
    cgroup_v1: bool,
    image: str,
    cluster_fields: dict[str, Any],
    restrict_oom_score_adj: bool = False,
    mounts: dict[str, dict[str, Path]] | None = None,
) -> dict[str, Any]:
    """The kind cluster config for `cfg`: one control-plane node and one worker per lab node, all
    from `image`, whose images kubeadm finds by `cluster_fields` of its ClusterConfiguration;
    `mounts`: lab node -> its extra mounts."""
    check_supported(cfg)
    # Gates for every component go to kind's featureGates; a component's own overrides go to its
    # kubeadm section as the whole --feature-gates flag (kubeadm's flag replaces kind's).
    sections = {
        section: {"extraArgs": _extra_args({"feature-gates": flag_map(cfg.gates_for(component))})}
        for component, section in KUBEADM_SECTIONS.items()
        if component in cfg.component_feature_gates
    }
    sections.update(cluster_fields)
    # The images are imported from files and can never be pulled again: never collect them.
    kubelet: dict[str, Any] = {
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "syncFrequency": SYNC_FREQUENCY,
        "nodeStatusUpdateFrequency": NODE_STATUS_UPDATE_FREQUENCY,
    }
    if cgroup_v1:
        kubelet["failCgroupV1"] = False  # kubelet refuses cgroup v1 hosts unless told otherwise
    if "kubelet" in cfg.component_feature_gates:
        kubelet["featureGates"] = cfg.gates_for("kubelet")
    patches = [
        yaml.safe_dump({"apiVersion": api, "kind": kind, **fields}, sort_keys=False)
        for api, kind, fields in (
            ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration", sections),
            ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", kubelet),
        )
        if fields
    ]
    config: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": cluster_name(cfg),
        "nodes": [control_plane(cfg, image)] + [worker(cfg, name, image, (mounts or {}).get(name, {})) for name in cfg.node_names()],
        # kindnetd's image cannot be built here: cluster.py sets up the pod network instead.
        "networking": {"disableDefaultCNI": True},
        "containerdConfigPatches": CONTAINERD_PATCHES + [RESTRICT_OOM_SCORE_ADJ] * restrict_oom_score_adj,
    }
    if cfg.feature_gates:
        config["featureGates"] = dict(sorted(cfg.feature_gates.items()))
    if cfg.runtime_config:
        config["runtimeConfig"] = {k: str(v).lower() for k, v in sorted(cfg.runtime_config.items())}
    if patches:
        config["kubeadmConfigPatches"] = patches
    return config
