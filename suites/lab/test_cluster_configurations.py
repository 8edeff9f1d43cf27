"""LAB checks that need a lab of their own: feature gates per cluster, a non-default kubelet root dir."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from clusters.providers import Capability, Lab
from suites.derived_attributes.checks import numa_pair
from suites.framework import claims, pods
from suites.framework.pods import PodBuilder

pytestmark = pytest.mark.e2e


def served_resource_versions(api) -> set[str]:
    groups = client.ApisApi(api).get_api_versions().groups
    return {v.version for g in groups if g.name == "resource.k8s.io" for v in g.versions}


@pytest.mark.requirement("LAB-02")
def test_cluster_with_derived_attributes_gate_on_serves_the_field(lab: Lab, api, namespace: str) -> None:
    gates = lab.started_config("its feature gates").feature_gates if Capability.LAB_STARTS in lab.capabilities else {}
    if not gates.get("DRADerivedAttributes"):
        pytest.skip("needs the session lab started with DRADerivedAttributes=true")
    sent = numa_pair()
    stored = claims.read(api, namespace, claims.create(api, namespace, sent))
    assert claims.derived_attributes(stored) == claims.derived_attributes(sent.build())


@pytest.mark.requirement("LAB-02")
def test_runtime_config_is_applied_per_cluster(lab: Lab, gates_off_lab: Lab) -> None:
    assert "v1beta2" in served_resource_versions(gates_off_lab.api())
    assert served_resource_versions(lab.api()) == {"v1"}, "the session lab serves only the default version"


# On a node whose kubelet kubeadm configures (kind's, not one dralab runs itself), kubeadm's own
# files (the kubelet's config, its flags, the instance config of kubeadm >= 1.34) and the
# kubelet's certificates (--cert-dir's default, which kubeadm's kubelet.conf names) stay under the
# default root whatever --root-dir says.
KUBEADM_FILES = {"config.yaml", "kubeadm-flags.env", "instance-config.yaml", "pki"}


@pytest.mark.requirement("LAB-04")
def test_non_default_kubelet_root_dir_holds_pod_volumes(gates_off_lab: Lab) -> None:
    api = gates_off_lab.api()
    node = gates_off_lab.node(gates_off_lab.nodes[0].name)
    assert node.kubelet_root_dir == "/var/lib/kubelet-dralab"
    pod = pods.run(
        api,
        "default",
        PodBuilder(f"rootdir-{uuid.uuid4().hex[:6]}")
        .on_node(node.name)
        .with_volume({"name": "scratch", "emptyDir": {}}, "/scratch")
        .running(*pods.until_stopped("echo kept > /scratch/marker")),
    )
    volume = node.host_path(f"/var/lib/kubelet-dralab/pods/{pod.metadata.uid}/volumes/kubernetes.io~empty-dir/scratch")
    from suites.framework.waits import wait_for

    wait_for(f"{volume}/marker written by the pod", lambda: (volume / "marker").exists(), 30)
    assert (volume / "marker").read_text() == "kept\n"
    # kubelet serves the device plugin Registration socket at a path hardcoded in
    # k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 (KubeletSocket), whatever --root-dir says.
    default = node.host_path("/var/lib/kubelet")
    written = {p.name for p in default.iterdir()} if default.exists() else set()
    allowed = {"device-plugins"} | (set() if Capability.HOST_PROCESSES in gates_off_lab.capabilities else KUBEADM_FILES)
    assert written <= allowed, f"kubelet wrote {sorted(written - allowed)} under the default root dir {default}"
