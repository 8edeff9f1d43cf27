"""The exact tree the writer produces for a small profile (HW-01, HW-02, HW-03), and faults (HW-04)."""

import json
import os
from pathlib import Path

from fake_hardware import sysfs
from fake_hardware.profile import gpu_uuid, load_node_profile, mac_address
from fake_hardware.topology import plan_node
from tests.unit.test_hardware_profiles import VALID

ROOT = Path("/hw")
RP = "devices/pci0000:00/0000:00:01.0"
GPU = f"{RP}/0000:01:00.0/0000:02:00.0/0000:03:00.0"
NIC = f"{RP}/0000:01:00.0/0000:02:01.0/0000:04:00.0"
VF1 = f"{RP}/0000:01:00.0/0000:02:01.0/0000:04:00.2"


def build(fs):
    fs.create_file("/p/tiny.yaml", contents=VALID)
    plan = plan_node(load_node_profile("/p/tiny.yaml"), "node-1", seed=5)
    sysfs.write_tree(ROOT, plan)
    return plan


def read(rel: str) -> str:
    return (ROOT / rel).read_text()


def link(rel: str) -> str:
    return os.readlink(ROOT / rel)


def test_tree_paths_files_and_links(fs) -> None:
    build(fs)
    assert link("bus/pci/devices/0000:03:00.0") == f"../../../{GPU}"
    assert (read(f"{GPU}/vendor"), read(f"{GPU}/device"), read(f"{GPU}/class")) == ("0x10de\n", "0x20b0\n", "0x030200\n")
    assert (read(f"{GPU}/numa_node"), read(f"{GPU}/local_cpulist")) == ("0\n", "0-7\n")
    assert (read(f"{GPU}/current_link_speed"), read(f"{GPU}/current_link_width")) == ("16.0 GT/s PCIe\n", "16\n")
    assert link(f"{GPU}/driver") == "../../../../../../bus/pci/drivers/nvidia"
    assert link("bus/pci/drivers/nvidia/0000:03:00.0") == f"../../../../{GPU}"
    assert link(f"{GPU}/iommu_group") == "../../../../../../kernel/iommu_groups/0"
    assert len(read(f"{GPU}/resource").splitlines()) == 13
    assert json.loads(read(f"{GPU}/dralab-gpu.json")) == {
        "uuid": gpu_uuid(5, "node-1", "gpu0"), "index": 0, "model": "M", "memoryBytes": 16 * 2**30, "health": "healthy"}
    config = (ROOT / f"{GPU}/config").read_bytes()
    assert len(config) == 256 and config[:4] == bytes.fromhex("de10b020")
    bridge = (ROOT / f"{RP}/config").read_bytes()
    assert bridge[0x0E] == 1 and tuple(bridge[0x18:0x1B]) == (0, 1, 4)  # root port spans buses 1-4
    assert read("devices/system/node/node0/cpulist") == "0-7\n"


def test_sriov_links_and_veth_names_and_macs(fs) -> None:
    build(fs)
    assert (read(f"{NIC}/sriov_totalvfs"), read(f"{NIC}/sriov_numvfs")) == ("4\n", "2\n")
    assert link(f"{NIC}/virtfn1") == "../0000:04:00.2" and link(f"{VF1}/physfn") == "../0000:04:00.0"
    assert read(f"{VF1}/device") == "0x101e\n"
    assert read(f"{NIC}/net/ens1f0/address") == mac_address(5, "node-1", "nic0") + "\n"
    assert read(f"{VF1}/net/ens1f0v1/address") == mac_address(5, "node-1", "nic0", 1) + "\n"
    assert link("class/net/ens1f0v1") == f"../../{VF1}/net/ens1f0v1"


def test_faults_remove_restore_and_health_are_visible_in_the_tree(fs) -> None:
    plan = build(fs)
    vf = plan.by_name("nic0-vf1")
    sysfs.remove_function(ROOT, plan, vf)
    assert not (ROOT / VF1).exists() and not (ROOT / "bus/pci/devices/0000:04:00.2").is_symlink()
    assert not (ROOT / f"{NIC}/virtfn1").is_symlink() and not (ROOT / "class/net/ens1f0v1").is_symlink()
    sysfs.write_function(ROOT, plan, vf)
    assert link(f"{NIC}/virtfn1") == "../0000:04:00.2" and read(f"{VF1}/net/ens1f0v1/address")
    sysfs.set_gpu_health(ROOT, plan.by_name("gpu0"), healthy=False)
    assert json.loads(read(f"{GPU}/dralab-gpu.json"))["health"] == "unhealthy"
    assert not [p for p in ROOT.rglob(".*")], "temporary files left behind"
