import pytest
from pydantic import ValidationError

from clusters.config import ClusterConfig


def test_defaults_give_two_nodes_and_addresses_derived_from_the_slot() -> None:
    cfg = ClusterConfig(slot=3)
    assert cfg.node_names() == ["node-1", "node-2"]
    assert (cfg.host_ip, cfg.node_ip(1), cfg.node_ip(2)) == ("10.99.3.1", "10.99.3.11", "10.99.3.12")
    assert (cfg.pod_cidr(2), cfg.cluster_cidr) == ("10.103.2.0/24", "10.103.0.0/16")
    assert (cfg.bridge, cfg.veth(2), cfg.netns("node-2")) == ("dralab3", "dralab3n2", "dralab-default-node-2")
    assert cfg.cgroup_parent == "/dralab/default"


def test_the_hardware_site_names_its_links_as_the_slots_so_the_lab_removes_them() -> None:
    cfg = ClusterConfig(slot=3, hardware={"node-2": "gpu-small"}, hardware_seed=7)
    site = cfg.hardware_site()
    assert (site.lab_dir, site.node_names(), site.netns["node-2"]) == (cfg.lab_dir, cfg.node_names(), cfg.netns("node-2"))
    assert (site.hardware, site.seed) == ({"node-2": "gpu-small"}, 7)
    fabric = [site.fabric_bridge, site.fabric_peer(2, 0)]
    assert fabric == ["dralab3fab", "dralab3f2x0"] and cfg.slot_links(fabric) == fabric
    assert ClusterConfig(slot=30).slot_links(fabric) == []


def test_component_gates_override_cluster_gates_for_that_component_only() -> None:
    cfg = ClusterConfig(
        feature_gates={"DRADerivedAttributes": True}, component_feature_gates={"kube-scheduler": {"DRADerivedAttributes": False}}
    )
    assert cfg.gates_for("kube-apiserver") == {"DRADerivedAttributes": True}
    assert cfg.gates_for("kube-scheduler") == {"DRADerivedAttributes": False}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("name", "Bad_Name", "must be a DNS label"),
        ("kubelet_root_dir", "relative/kubelet", "must be an absolute path under /var/lib/"),
        ("kubelet_root_dir", "/opt/kubelet", "must be an absolute path under /var/lib/"),
        ("feature_gates", {"not-a-gate": True}, "is not a gate name"),
        ("nodes", 0, "greater than or equal to 1"),
        ("unknown_field", 1, "Extra inputs are not permitted"),
    ],
)
def test_invalid_settings_are_rejected_naming_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        ClusterConfig(**{field: value})
    assert message in str(e.value)
    assert field in str(e.value) or field == "feature_gates"
