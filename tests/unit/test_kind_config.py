"""The kind provider's generated cluster config (LAB-06)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from basics.errors import BadInput
from clusters.config import ClusterConfig
from clusters.kind import hardware, recorder
from clusters.kind.config import CONTAINERD_PATCHES, RESTRICT_OOM_SCORE_ADJ, host_has_cgroup_v1, kind_config

IMAGE = "dralab.dev/kind-node:v1.37.1-0123456789ab"
ETCD = {"etcd": {"local": {"imageTag": "v3.7.3"}}}

SKEW = ClusterConfig(
    name="skew",
    nodes=2,
    feature_gates={"DRADerivedAttributes": True},
    component_feature_gates={"kube-scheduler": {"DRADerivedAttributes": False}},
    runtime_config={"resource.k8s.io/v1beta2": True},
)


def test_nodes_gates_runtime_config_and_containerd_patches() -> None:
    config = kind_config(SKEW, False, IMAGE, ETCD)
    assert config["name"] == "dralab-skew" and config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker", "worker"]
    joins = [yaml.safe_load(n["kubeadmConfigPatches"][0]) for n in config["nodes"][1:]]
    assert [(j["kind"], j["nodeRegistration"]["name"]) for j in joins] == [("JoinConfiguration", "node-1"), ("JoinConfiguration", "node-2")]
    assert {n["image"] for n in config["nodes"]} == {IMAGE}
    assert config["networking"] == {"disableDefaultCNI": True}  # dralab sets up the pod network
    assert config["featureGates"] == {"DRADerivedAttributes": True}
    assert config["runtimeConfig"] == {"resource.k8s.io/v1beta2": "true"}
    assert config["containerdConfigPatches"] == CONTAINERD_PATCHES
    assert any("enable_cdi = true" in p for p in CONTAINERD_PATCHES) and any("nri" in p for p in CONTAINERD_PATCHES)
    restricted = kind_config(SKEW, False, IMAGE, ETCD, restrict_oom_score_adj=True)["containerdConfigPatches"]
    assert restricted == CONTAINERD_PATCHES + [RESTRICT_OOM_SCORE_ADJ]  # where root may not lower OOM scores


def test_a_components_own_gates_go_to_its_kubeadm_section_and_cgroup_v1_to_the_kubelet() -> None:
    cluster, _ = [yaml.safe_load(p) for p in kind_config(SKEW, False, IMAGE, ETCD)["kubeadmConfigPatches"]]
    assert cluster["kind"] == "ClusterConfiguration"
    assert cluster["scheduler"]["extraArgs"] == [{"name": "feature-gates", "value": "DRADerivedAttributes=false"}]
    assert cluster["etcd"] == ETCD["etcd"]  # kubeadm names the node image's etcd
    assert "apiServer" not in cluster  # kind's featureGates serve the others
    patches = [yaml.safe_load(p) for p in kind_config(SKEW, True, IMAGE, ETCD)["kubeadmConfigPatches"]]
    kubelet = next(p for p in patches if p["kind"] == "KubeletConfiguration")
    assert kubelet["failCgroupV1"] is False and kubelet["imageGCHighThresholdPercent"] == 100
    plain = [yaml.safe_load(p) for p in kind_config(ClusterConfig(name="plain"), False, IMAGE, {})["kubeadmConfigPatches"]]
    assert [p["kind"] for p in plain] == ["KubeletConfiguration"] and "failCgroupV1" not in plain[0]


@pytest.mark.parametrize("change,named", [({"control_plane_api_qps": 200}, "control_plane_api_qps")])
def test_what_kind_nodes_cannot_be_is_refused_with_the_reason(change: dict, named: str) -> None:
    with pytest.raises(BadInput, match=named):
        kind_config(ClusterConfig(name="x").model_copy(update=change), False, IMAGE, {})


def test_a_workers_emulated_hardware_is_mounted_where_the_local_labs_node_sees_it(tmp_path) -> None:
    mounts = {"node-2": {"/var/lib/dralab-hardware": tmp_path / "hw", "/dev/vfio": tmp_path / "vfio"}}
    node_1, node_2 = kind_config(SKEW, False, IMAGE, ETCD, mounts=mounts)["nodes"][1:]
    assert "extraMounts" not in node_1
    assert node_2["extraMounts"] == [
        {"hostPath": str(tmp_path / "vfio"), "containerPath": "/dev/vfio"},
        {"hostPath": str(tmp_path / "hw"), "containerPath": "/var/lib/dralab-hardware"},
    ]


def test_a_workers_hardware_mounts_are_its_trees_and_device_node_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    cfg = ClusterConfig(name="k", nodes=2, hardware={"node-2": "misaligned"})
    node_dir = cfg.lab_dir / "nodes" / "node-2"
    assert hardware.mounts(cfg) == {
        "node-2": {
            "/var/lib/dralab-hardware": node_dir / "var-lib" / "dralab-hardware",
            "/dev/vfio": node_dir / "dev" / "vfio",
            "/dev/infiniband": node_dir / "dev" / "infiniband",
        }
    }
    assert (node_dir / "dev" / "infiniband").is_dir()  # kind mounts only what exists


def test_every_worker_gets_the_recorder_and_its_own_log_dir_of_the_lab(tmp_path: Path) -> None:
    mounts = recorder.mounts(SKEW, tmp_path / "bin", tmp_path / "logs")
    assert mounts == {n: {"/var/log/dralab": tmp_path / "logs" / n, "/opt/dralab/bin": tmp_path / "bin"} for n in ("node-1", "node-2")}
    assert (tmp_path / "logs" / "node-2").is_dir()  # before the containers: the recorder's trace lands on the host
    assert recorder.running("PID COMMAND\n7 /kind/bin/kubelet\n9 /opt/dralab/bin/plugin-recorder --driver-registry=/x\n")
    assert not recorder.running("PID COMMAND\n9 sh -c exec /opt/dralab/bin/plugin-recorderx\n")


def test_a_moved_kubelet_root_dir_is_every_kubelets_root_dir_flag() -> None:
    config = kind_config(SKEW.model_copy(update={"kubelet_root_dir": "/var/lib/kubelet-dralab"}), False, IMAGE, ETCD)
    patches = [yaml.safe_load(n["kubeadmConfigPatches"][0]) for n in config["nodes"]]
    assert [p["kind"] for p in patches] == ["InitConfiguration", "JoinConfiguration", "JoinConfiguration"]
    assert all(p["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "root-dir", "value": "/var/lib/kubelet-dralab"}] for p in patches)
    assert "kubeadmConfigPatches" not in kind_config(SKEW, False, IMAGE, ETCD)["nodes"][0]


def test_cgroup_version_from_the_hierarchy_root(tmp_path) -> None:
    assert host_has_cgroup_v1(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    assert not host_has_cgroup_v1(tmp_path)
