"""Hardware profile validation (HW-01): each mistake is a clear error naming the field."""


import pytest

from clusters.errors import BadInput
from fake_hardware.profile import PROFILES_DIR, gpu_uuid, load_node_profile, mac_address

VALID = """
name: tiny
numa_nodes: [{id: 0, cpus: "0-7"}]
root_ports: [{name: rp0, numa: 0}]
switches: [{name: sw0, root_port: rp0}]
gpus:
  - {name: gpu0, model: M, memory: 16Gi, vendor: "0x10de", device: "0x20b0", numa: 0, switch: sw0}
nics:
  - {name: nic0, ifname: ens1f0, vendor: "0x15b3", device: "0x101d", numa: 0, switch: sw0,
     sriov: {total_vfs: 4, num_vfs: 2, vf_device: "0x101e"}}
"""


def load(fs, text: str):
    fs.create_file("/p/tiny.yaml", contents=text)
    return load_node_profile("/p/tiny.yaml")


def test_valid_profile_loads(fs) -> None:
    profile = load(fs, VALID)
    assert [g.name for g in profile.gpus] == ["gpu0"] and profile.nics[0].sriov.num_vfs == 2
    assert profile.gpus[0].memory_bytes() == 16 * 2**30


@pytest.mark.parametrize("change, message", [
    (("numa: 0, switch: sw0}\nnics", "numa: 0, switch: sw0, colour: red}\nnics"), "gpus.0.colour: Extra inputs are not permitted"),
    (("num_vfs: 2", "num_vfs: 5"), "num_vfs (5) is more than total_vfs (4)"),
    (("{name: nic0,", "{name: gpu0,"), "duplicate names: gpu0"),
    (('device: "0x20b0", numa: 0', 'device: "0x20b0", numa: 3'), "gpus[0] (gpu0): NUMA node 3 does not exist"),
    (("switch: sw0}\nnics", "switch: sw9}\nnics"), "gpus[0] (gpu0): switch 'sw9' does not exist"),
    (("memory: 16Gi", "memory: lots"), "'lots' is not a quantity like 80Gi"),
    (('vendor: "0x10de"', 'vendor: "10de"'), "gpus.0.vendor: String should match pattern"),
    (("ifname: ens1f0", "ifname: ens1f0-far-too-long"), "interface names are 1-12 lower-case letters"),
])
def test_mistakes_are_rejected_naming_the_field(fs, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in VALID
    with pytest.raises(BadInput) as e:
        load(fs, VALID.replace(old, new))
    assert "hardware profile /p/tiny.yaml is invalid" in str(e.value)
    assert message in str(e.value)


def test_bad_yaml_names_file_and_line(fs) -> None:
    with pytest.raises(BadInput, match=r"/p/tiny.yaml is not valid YAML at line 4, column 1"):
        load(fs, "name: x\nnuma_nodes:\n  - {id: 0, cpus: [\n")


def test_unknown_profile_name_lists_the_shipped_ones() -> None:
    with pytest.raises(BadInput, match="unknown hardware profile 'dgx'.*dgx-like.*gpu-small.*misaligned"):
        load_node_profile("dgx")


@pytest.mark.parametrize("profile", sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
def test_shipped_profiles_are_valid(profile: str) -> None:
    assert load_node_profile(profile).name == profile


def test_ids_are_deterministic_and_differ_between_nodes() -> None:
    assert gpu_uuid(7, "node-1", "gpu0") == gpu_uuid(7, "node-1", "gpu0")
    assert gpu_uuid(7, "node-1", "gpu0") != gpu_uuid(7, "node-2", "gpu0") != gpu_uuid(8, "node-1", "gpu0")
    mac = mac_address(7, "node-1", "nic0", 3)
    assert mac == mac_address(7, "node-1", "nic0", 3) != mac_address(7, "node-2", "nic0", 3)
    assert int(mac.split(":")[0], 16) & 0x03 == 0x02  # locally administered unicast


def test_dgx_like_has_the_promised_shape() -> None:
    profile = load_node_profile("dgx-like")
    assert (len(profile.gpus), len(profile.nics), len(profile.switches), len(profile.numa_nodes)) == (8, 8, 4, 2)
    assert sum(n.sriov.num_vfs for n in profile.nics) == 32
    misaligned = load_node_profile("misaligned")
    assert not {g.numa for g in misaligned.gpus} & {n.numa for n in misaligned.nics}
