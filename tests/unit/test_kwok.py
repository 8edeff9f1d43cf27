"""The lab's kwok nodes (LAB-09): what dralab creates, how it starts kwok, when a node counts as Ready."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from clusters.config import ClusterConfig
from clusters.local import kwok
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


def test_kwok_manages_exactly_the_nodes_dralab_creates_and_renews_their_leases() -> None:
    cfg = ClusterConfig(name="k", slot=3, slice_only_nodes=2)
    node = kwok.node("slice-node-1")
    assert node["metadata"]["labels"][kwok.SLICE_ONLY_LABEL] == "true"
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    cmd = kwok.command(TOOLS, cfg, Path("/lab/admin.kubeconfig"), Path("/lab/kwok/stages.yaml"))
    assert cmd[0] == "/w/kwok"
    assert f"--manage-nodes-with-label-selector={kwok.SLICE_ONLY_LABEL}" in cmd
    assert f"--node-lease-duration-seconds={kwok.LEASE_SECONDS}" in cmd and "--config=/lab/kwok/stages.yaml" in cmd


def test_kwok_pod_ips_are_the_labs_own() -> None:
    labs = [ClusterConfig(name=f"k{slot}", slot=slot) for slot in (1, 2, 50)]
    nets = [ipaddress.ip_network(kwok.pod_cidr(cfg)) for cfg in labs]
    assert all(n.num_addresses >= 10000 for n in nets)  # room for a scale run's pods
    kubelet_pods = [ipaddress.ip_network(cfg.cluster_cidr) for cfg in labs]
    assert not [(a, b) for a in nets for b in nets + kubelet_pods if a is not b and a.overlaps(b)]


def test_a_node_is_ready_once_its_not_ready_taint_is_lifted() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {}}
    assert kwok._ready(ready)
    assert not kwok._ready({**ready, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}})
    assert not kwok._ready({"status": {}, "spec": {}})
