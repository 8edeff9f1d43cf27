"""Hardware profile validation (HW-01, HW-07, HW-09): each mistake is a clear error naming the field."""

from pathlib import Path

import pytest

from basics.errors import BadInput
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


@pytest.mark.parametrize(
    "change, message",
    [
        (("numa: 0, switch: sw0}\nnics", "numa: 0, switch: sw0, colour: red}\nnics"), "gpus.0.colour: Extra inputs are not permitted"),
        (("num_vfs: 2", "num_vfs: 5"), "num_vfs (5) is more than total_vfs (4)"),
        (("{name: nic0,", "{name: gpu0,"), "duplicate names: gpu0"),
        (('device: "0x20b0", numa: 0', 'device: "0x20b0", numa: 3'), "gpus[0] (gpu0): NUMA node 3 does not exist"),
        (("switch: sw0}\nnics", "switch: sw9}\nnics"), "gpus[0] (gpu0): switch 'sw9' does not exist"),
        (("memory: 16Gi", "memory: lots"), "'lots' is not a quantity like 80Gi"),
        (('vendor: "0x10de"', 'vendor: "10de"'), "gpus.0.vendor: String should match pattern"),
        (("ifname: ens1f0", "ifname: ens1f0-far-too-long"), "interface names are 1-12 lower-case letters"),
    ],
)
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


@pytest.mark.parametrize(
    "change, message",
    [
        (('cpus: "0-7"}', 'cpus: "0-7", threads_per_core: 3}'), "node 0: 8 CPUs do not make whole cores of 3 threads"),
        (('cpus: "0-7"}', 'cpus: "0-7", memory: much}'), "numa_nodes.0.memory: Value error, 'much' is not a quantity"),
        (
            ('numa_nodes: [{id: 0, cpus: "0-7"}]', 'numa_nodes: [{id: 0, cpus: "0-7"}, {id: 1, cpus: "6-9"}]'),
            "CPUs [6, 7] are in more than one NUMA node",
        ),
        (
            ('numa_nodes: [{id: 0, cpus: "0-7"}]', 'numa_nodes: [{id: 0, cpus: "0-7"}, {id: 0, cpus: "8-9"}]'),
            "duplicate NUMA node ids in [0, 0]",
        ),
        (('numa_nodes: [{id: 0, cpus: "0-7"}]', "numa_nodes: []"), "numa_nodes: List should have at least 1 item"),
        (("switch: sw0,\n", "switch: sw0, rdma: true, driver: ice,\n"), "nic0: rdma needs driver mlx5_core"),
        (("switch: sw0,\n", "switch: sw0, speed: 0,\n"), "nics.0.speed: Input should be greater than or equal to 10"),
    ],
)
def test_topology_and_nic_mistakes_are_rejected(fs, change: tuple[str, str], message: str) -> None:
    test_mistakes_are_rejected_naming_the_field(fs, change, message)


def test_numa_memory_threads_and_nic_fields_have_real_defaults(fs) -> None:
    profile = load(fs, VALID)
    numa, nic = profile.numa_nodes[0], profile.nics[0]
    assert (numa.threads_per_core, numa.memory_bytes()) == (1, 256 * 2**30)
    assert (nic.speed, nic.rdma, nic.sriov.vf_driver) == (100_000, False, None)


def test_new_profiles_have_the_promised_shape() -> None:
    h100 = load_node_profile("hgx-h100")
    assert (len(h100.gpus), len(h100.nics), all(n.rdma for n in h100.nics)) == (8, 8, True)
    assert (h100.numa_nodes[0].threads_per_core, len(h100.numa_nodes[0].cpu_ids()), h100.numa_nodes[0].memory_bytes()) == (2, 112, 2**40)
    e810 = load_node_profile("l40-e810")
    assert {(n.driver, n.sriov.vf_driver, n.sriov.vf_device) for n in e810.nics} == {("ice", "iavf", "0x1889")}


def pci_ids() -> set[str]:
    """vendor:device of every device in the machine's pci.ids (pciutils reads the same file)."""
    ids, vendor = set(), ""
    for line in PCI_IDS.read_text(errors="replace").splitlines():
        if line[:1].isalnum() and not line.startswith("C "):
            vendor = line[:4]
        elif line.startswith("\t") and not line.startswith("\t\t") and vendor:
            ids.add(f"{vendor}:{line[1:5]}")
    return ids


PCI_IDS = Path("/usr/share/misc/pci.ids")
NEWER_THAN_BOOKWORM_PCI_IDS = {"10de:2335"}  # H200: pci.ids has it since late 2023, Debian bookworm's copy is 2023.04


@pytest.mark.skipif(not PCI_IDS.exists(), reason="pci.ids is not installed")
@pytest.mark.parametrize("name", sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
def test_shipped_profiles_use_real_pci_ids(name: str) -> None:
    profile = load_node_profile(name)
    devices = [*profile.root_ports, *profile.switches, *profile.gpus, *profile.nics]
    used = {f"{d.vendor[2:]}:{d.device[2:]}" for d in devices}
    used |= {f"{n.vendor[2:]}:{n.sriov.vf_device[2:]}" for n in profile.nics if n.sriov}
    assert used - pci_ids() - NEWER_THAN_BOOKWORM_PCI_IDS == set()


def test_a_profile_of_the_hosts_own_cpus_needs_them_on_the_host(monkeypatch, tmp_path: Path) -> None:
    from clusters.config import ClusterConfig
    from fake_hardware import lab

    online = tmp_path / "online"
    monkeypatch.setattr(lab, "HOST_CPUS_ONLINE", str(online))
    cfg = ClusterConfig(name="t", nodes=1, hardware={"node-1": "cpu-pair"})
    online.write_text("0-1\n")
    assert set(lab.HardwareLab(cfg.hardware_site()).nodes) == {"node-1"}
    online.write_text("0\n")  # a one-CPU machine: cgroups would refuse cpusets of CPU 1
    with pytest.raises(
        BadInput,
        match=r"cpu-pair \(node node-1\) names CPUs 1, which this machine does not have "
        r"\(online: 0\)",
    ):
        lab.HardwareLab(cfg.hardware_site())
    assert load_node_profile("dgx-like").cpus_missing_on_host({0}) == []  # its CPUs are not the host's
