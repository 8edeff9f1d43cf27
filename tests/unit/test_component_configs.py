import tomllib
from pathlib import Path

import yaml

from clusters import versions
from clusters.config import ClusterConfig
from clusters.local import configs
from clusters.pki import CertKey
from clusters.provision import Image, Toolchain

TOOLS = Toolchain(
    kubernetes=Path("/k"),
    etcd_dir=Path("/e"),
    containerd=Path("/c"),
    runc_dir=Path("/r"),
    drivers_under_test=Path("/t"),
    drivers_with_cgo=Path("/g"),
    images=(Image("x", Path("/x.tar"), "sha256:0"),),
    allure=Path("/a"),
    kwok_dir=Path("/w"),
)


def test_containerd_config_enables_cdi_and_nri_at_standard_node_paths() -> None:
    cfg = tomllib.loads(configs.containerd_toml(TOOLS, Path("/lab/cni")))
    assert cfg["version"] == 3
    runtime = cfg["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["enable_cdi"] is True and runtime["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert runtime["disable_hugetlb_controller"] is True and runtime["restrict_oom_score_adj"] is True
    assert runtime["containerd"]["runtimes"]["runc"]["options"] == {"SystemdCgroup": False, "BinaryName": "/r/runc"}
    assert runtime["cni"] == {"bin_dirs": ["/usr/lib/cni"], "conf_dir": "/lab/cni"}
    assert cfg["plugins"]["io.containerd.nri.v1.nri"] == {"disable": False, "socket_path": "/var/run/nri/nri.sock"}
    assert cfg["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == versions.PAUSE_IMAGE


def test_kubelet_config_allows_cgroup_v1_and_separates_nodes() -> None:
    cfg = ClusterConfig(name="lab", feature_gates={"DRADerivedAttributes": True})
    kubelet = yaml.safe_load(configs.kubelet_config(cfg, "node-2", Path("/ca"), CertKey(Path("/c"), Path("/k"))))
    assert kubelet["failCgroupV1"] is False and kubelet["cgroupDriver"] == "cgroupfs"
    assert kubelet["cgroupRoot"] == "/dralab/lab/node-2"
    assert kubelet["featureGates"] == {"DRADerivedAttributes": True}


def test_gates_and_runtime_config_reach_the_components_that_read_them() -> None:
    cfg = ClusterConfig(
        slot=2,
        feature_gates={"DRADerivedAttributes": True},
        component_feature_gates={"kube-scheduler": {"DRADerivedAttributes": False}},
        runtime_config={"resource.k8s.io/v1beta2": True},
    )
    pki = {name: CertKey(Path(f"/{name}.crt"), Path(f"/{name}.key")) for name in ("ca", "apiserver", "apiserver-kubelet-client", "sa")}
    apiserver = configs.apiserver_command(TOOLS, cfg, pki, Path("/ca.crt"))
    assert "--feature-gates=DRADerivedAttributes=true" in apiserver
    assert "--runtime-config=resource.k8s.io/v1beta2=true" in apiserver
    assert "--authorization-mode=Node,RBAC" in apiserver and "--enable-admission-plugins=NodeRestriction" in apiserver
    scheduler = configs.scheduler_command(TOOLS, cfg, Path("/pki/scheduler.kubeconfig"))
    assert "--feature-gates=DRADerivedAttributes=false" in scheduler
    assert "--client-ca-file=/pki/ca.crt" in scheduler  # so /metrics takes the lab's client certificates
    assert not [a for a in scheduler if a.startswith("--kube-api-qps")]
    faster = configs.scheduler_command(TOOLS, cfg.model_copy(update={"control_plane_api_qps": 200}), Path("/k"))
    assert "--kube-api-qps=200" in faster and "--kube-api-burst=400" in faster
    managers = configs.controller_manager_command(TOOLS, cfg.model_copy(update={"control_plane_api_qps": 200}), Path("/k"), pki)
    assert "--kube-api-qps=200" in managers
    assert "--feature-gates=DRADerivedAttributes=true" in configs.controller_manager_command(TOOLS, cfg, Path("/k"), pki)
