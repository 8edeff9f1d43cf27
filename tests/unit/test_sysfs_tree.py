"""The exact tree the writer produces for a small profile (HW-01, HW-02, HW-03), and faults (HW-04)."""

import json
import os
from dataclasses import replace
from pathlib import Path

import yaml

from fake_hardware import sysfs
from fake_hardware.profile import NodeProfile, gpu_uuid, load_node_profile, mac_address
from fake_hardware.topology import plan_node
from tests.unit.test_hardware_profiles import VALID

ROOT = Path("/hw")
RP = "devices/pci0000:00/0000:00:01.0"
GPU = f"{RP}/0000:01:00.0/0000:02:00.0/0000:03:00.0"
NIC = f"{RP}/0000:01:00.0/0000:02:01.0/0000:04:00.0"
VF1 = f"{RP}/0000:01:00.0/0000:02:01.0/0000:04:00.2"


def build(fs):
    # a small memory keeps the tree small: the fake filesystem is slow with a block directory per 2 GiB
    fs.create_file("/p/tiny.yaml", contents=VALID.replace('cpus: "0-7"}', 'cpus: "0-7", memory: 1Gi}'))
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
        "uuid": gpu_uuid(5, "node-1", "gpu0"),
        "index": 0,
        "model": "M",
        "memoryBytes": 16 * 2**30,
        "health": "healthy",
    }
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


def test_pci_functions_have_the_attributes_the_kernel_writes(fs) -> None:
    build(fs)
    assert read(f"{GPU}/modalias") == "pci:v000010DEd000020B0sv000010DEsd00000000bc03sc02i00\n"
    assert read(f"{GPU}/uevent").splitlines() == [
        "DRIVER=nvidia",
        "PCI_CLASS=30200",
        "PCI_ID=10DE:20B0",
        "PCI_SUBSYS_ID=10DE:0000",
        "PCI_SLOT_NAME=0000:03:00.0",
        "MODALIAS=pci:v000010DEd000020B0sv000010DEsd00000000bc03sc02i00",
    ]
    assert (read(f"{GPU}/driver_override"), read(f"{GPU}/revision"), read(f"{GPU}/local_cpus")) == ("(null)\n", "0xa1\n", "ff\n")
    assert link(f"{GPU}/subsystem") == "../../../../../../bus/pci"


def test_netdevs_have_their_attributes_and_lead_to_their_function(fs) -> None:
    build(fs)
    pf, vf = f"{NIC}/net/ens1f0", f"{VF1}/net/ens1f0v1"
    for name, value in (
        ("type", "1"),
        ("addr_assign_type", "0"),
        ("addr_len", "6"),
        ("operstate", "up"),
        ("carrier", "1"),
        ("mtu", "1500"),
        ("speed", "100000"),
        ("dev_port", "0"),
    ):
        assert read(f"{pf}/{name}") == read(f"{vf}/{name}") == f"{value}\n", name
    assert link(f"{pf}/device") == "../../../0000:04:00.0" and link(f"{vf}/subsystem").endswith("/class/net")
    assert (ROOT / "class/net/ens1f0v1/device").resolve() == ROOT / VF1
    assert read(f"{pf}/phys_port_name") == "p0\n" and len(read(f"{pf}/phys_switch_id")) == 17
    assert not (ROOT / vf / "phys_port_name").exists() and not (ROOT / vf / "phys_switch_id").exists()


TWO_SOCKETS = """
name: two-sockets
numa_nodes:
  - {id: 0, cpus: "0-3,8-11", threads_per_core: 2, memory: 4Gi}
  - {id: 1, cpus: "4-7,12-15", threads_per_core: 2, memory: 4Gi}
root_ports: [{name: rp0, numa: 0}, {name: rp1, numa: 1}]
switches: [{name: sw0, root_port: rp0}]
gpus:
  - {name: gpu0, model: M, memory: 16Gi, vendor: "0x10de", device: "0x20b0", numa: 0, switch: sw0}
nics:
  - {name: nic0, ifname: ens1f0, vendor: "0x15b3", device: "0x101d", numa: 1, root_port: rp1, rdma: true,
     sriov: {total_vfs: 2, num_vfs: 1, vf_device: "0x101e"}}
"""
SOCKET1_NIC = "devices/pci0000:80/0000:80:01.0/0000:81:00.0"


def build_two_sockets(fs):
    fs.create_file("/p/two.yaml", contents=TWO_SOCKETS)
    plan = plan_node(load_node_profile("/p/two.yaml"), "node-1", seed=5)
    sysfs.write_tree(ROOT, plan)
    return plan


def test_each_socket_has_its_host_bridge_and_its_own_bus_numbers(fs) -> None:
    plan = build_two_sockets(fs)
    assert plan.host_bridges() == ["pci0000:00", "pci0000:80"]
    assert link("bus/pci/devices/0000:03:00.0") == f"../../../{GPU}"
    assert link("bus/pci/devices/0000:81:00.0") == f"../../../{SOCKET1_NIC}"
    assert tuple((ROOT / "devices/pci0000:80/0000:80:01.0/config").read_bytes()[0x18:0x1B]) == (0x80, 0x81, 0x81)
    assert read(f"{SOCKET1_NIC}/local_cpus") == "f0f0\n" and read(f"{SOCKET1_NIC}/numa_node") == "1\n"


def test_numa_nodes_have_distances_memory_cores_and_caches(fs) -> None:
    build_two_sockets(fs)
    node1 = "devices/system/node/node1"
    assert (read("devices/system/node/node0/distance"), read(f"{node1}/distance")) == ("10 21\n", "21 10\n")
    assert (read(f"{node1}/cpulist"), read(f"{node1}/cpumap"), read("devices/system/node/online")) == ("4-7,12-15\n", "f0f0\n", "0-1\n")
    meminfo = read(f"{node1}/meminfo").splitlines()
    assert meminfo[0] == "Node 1 MemTotal:        4194304 kB" and meminfo[-1] == "Node 1 HugePages_Surp:      0"
    assert read(f"{node1}/hugepages/hugepages-2048kB/nr_hugepages") == "0\n"
    assert link(f"{node1}/cpu12") == "../../cpu/cpu12"
    cpu12 = "devices/system/cpu/cpu12"
    assert (
        read(f"{cpu12}/topology/core_id"),
        read(f"{cpu12}/topology/physical_package_id"),
        read(f"{cpu12}/topology/thread_siblings_list"),
    ) == ("0\n", "1\n", "4,12\n")
    assert [read(f"{cpu12}/cache/index{i}/level") for i in range(4)] == ["1\n", "1\n", "2\n", "3\n"]
    assert (read(f"{cpu12}/cache/index0/shared_cpu_map"), read(f"{cpu12}/cache/index3/shared_cpu_map")) == ("1010\n", "f0f0\n")
    # the list form, which dra-driver-cpu reads (a CPU without it is dropped)
    assert (read(f"{cpu12}/cache/index0/shared_cpu_list"), read(f"{cpu12}/cache/index3/shared_cpu_list")) == ("4,12\n", "4-7,12-15\n")
    assert (read("devices/system/cpu/smt/control"), read("devices/system/cpu/smt/active")) == ("on\n", "1\n")
    assert read("devices/system/memory/block_size_bytes") == "8000000\n"  # 128 MiB blocks below 64 GiB
    assert link(f"{node1}/memory32") == "../../memory/memory32" and not (ROOT / f"{node1}/memory31").exists()
    assert read("devices/system/memory/memory63/state") == "online\n"


def test_rdma_functions_have_their_infiniband_devices(fs) -> None:
    plan = build_two_sockets(fs)
    pf, vf = plan.by_name("nic0"), plan.by_name("nic0-vf0")
    assert (pf.rdma_device, vf.rdma_device, plan.by_name("nic0-vf1").rdma_device) == ("mlx5_0", "mlx5_1", "mlx5_2")
    assert link("class/infiniband/mlx5_0") == f"../../{SOCKET1_NIC}/infiniband/mlx5_0"
    device = ROOT / "class/infiniband/mlx5_1"
    assert (device / "device").resolve() == ROOT / "devices/pci0000:80/0000:80:01.0/0000:81:00.1"
    mac = pf.mac.split(":")
    assert read("class/infiniband/mlx5_0/node_guid") == f"{''.join(mac[:2])}:{mac[2]}03:00{mac[3]}:{''.join(mac[4:])}\n"
    assert read("class/infiniband/mlx5_1/sys_image_guid") == read("class/infiniband/mlx5_0/node_guid")
    assert [read(f"class/infiniband/mlx5_{n}/hca_type") for n in (0, 1)] == ["MT4125\n", "MT4126\n"]
    assert read("class/infiniband/mlx5_1/ports/1/state") == "4: ACTIVE\n"
    assert read("class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0") == "ens1f0v0\n"
    sysfs.remove_function(ROOT, plan, vf)
    assert not (ROOT / "class/infiniband/mlx5_1").is_symlink()


def test_rdma_devices_have_their_verbs_and_mad_character_devices(fs) -> None:
    """What rdmamap's GetRdmaCharDevices and rdma-core read: class/infiniband_verbs/uverbs<n> and
    class/infiniband_mad/{umad,issm}<n>, each naming its RDMA device in ibdev, with the kernel's numbers."""
    plan = build_two_sockets(fs)
    pf, vf = plan.by_name("nic0"), plan.by_name("nic0-vf0")
    vf_dir = "devices/pci0000:80/0000:80:01.0/0000:81:00.1"
    assert link("class/infiniband_verbs/uverbs0") == f"../../{SOCKET1_NIC}/infiniband_verbs/uverbs0"
    assert link("class/infiniband_mad/issm1") == f"../../{vf_dir}/infiniband_mad/issm1"
    assert sorted(p.name for p in (ROOT / "class/infiniband_verbs").iterdir()) == ["abi_version", "uverbs0", "uverbs1"]
    assert sorted(p.name for p in (ROOT / "class/infiniband_mad").iterdir()) == [
        "abi_version",
        "issm0",
        "issm1",
        "umad0",
        "umad1",
    ]  # nic0-vf1 (mlx5_2) is not enabled at boot
    assert (read("class/infiniband_verbs/abi_version"), read("class/infiniband_mad/abi_version")) == ("6\n", "5\n")
    uverbs0, umad1, issm1 = "class/infiniband_verbs/uverbs0", "class/infiniband_mad/umad1", "class/infiniband_mad/issm1"
    assert (read(f"{uverbs0}/ibdev"), read(f"{uverbs0}/abi_version"), read(f"{uverbs0}/dev")) == ("mlx5_0\n", "1\n", "231:192\n")
    assert read(f"{uverbs0}/uevent").splitlines() == ["MAJOR=231", "MINOR=192", "DEVNAME=infiniband/uverbs0", "DEVMODE=0666"]
    assert (read(f"{umad1}/ibdev"), read(f"{umad1}/port"), read(f"{umad1}/dev")) == ("mlx5_1\n", "1\n", "231:1\n")
    assert (read(f"{issm1}/ibdev"), read(f"{issm1}/port"), read(f"{issm1}/dev")) == ("mlx5_1\n", "1\n", "231:65\n")
    assert read(f"{issm1}/uevent").splitlines() == ["MAJOR=231", "MINOR=65", "DEVNAME=infiniband/issm1"]
    # Parented on the PCI function, as rdmamap's GetRdmaDevicesForPcidev and udev follow them.
    assert (ROOT / f"{uverbs0}/device").resolve() == ROOT / SOCKET1_NIC
    assert (ROOT / f"{umad1}/device").resolve() == ROOT / vf_dir
    assert (ROOT / f"{umad1}/subsystem").resolve() == ROOT / "class/infiniband_mad"
    assert [p.name for p in (ROOT / f"{SOCKET1_NIC}/infiniband").iterdir()] == ["mlx5_0"]

    sysfs.unregister_devices(ROOT, plan, pf)  # its driver unbound: every class device goes, links first
    for gone in (
        "class/infiniband/mlx5_0",
        uverbs0,
        "class/infiniband_mad/umad0",
        "class/infiniband_mad/issm0",
        f"{SOCKET1_NIC}/infiniband_verbs",
        f"{SOCKET1_NIC}/infiniband_mad",
        "class/net/ens1f0",
    ):
        assert not (ROOT / gone).exists() and not (ROOT / gone).is_symlink(), gone
    sysfs.register_devices(ROOT, plan, pf)
    assert read(f"{uverbs0}/ibdev") == "mlx5_0\n" and read("class/infiniband_mad/issm0/dev") == "231:64\n"
    sysfs.remove_function(ROOT, plan, vf)  # hot-unplugged: no dangling class link is left
    assert not any((ROOT / rel).is_symlink() for rel in ("class/infiniband_verbs/uverbs1", umad1, issm1))
    sysfs.write_function(ROOT, plan, vf)
    assert read(f"{umad1}/dev") == "231:1\n"
    assert not [p for d in ("class", "devices/pci0000:80") for p in (ROOT / d).rglob(".*")], "temporary files left"


def test_rdma_character_devices_past_the_fixed_minors_take_the_dynamic_majors() -> None:
    plan = plan_node(NodeProfile.model_validate(yaml.safe_load(TWO_SOCKETS)), "node-1", seed=5)
    numbers = {
        n: {c.name: (c.major, c.minor) for c in sysfs.rdma_char_devices(replace(plan.by_name("nic0"), rdma_device=f"mlx5_{n}"))}
        for n in (31, 32, 63, 64, 70)
    }
    assert numbers[31]["uverbs31"] == (231, 223) and numbers[32]["uverbs32"] == (239, 0)  # 32 fixed uverbs minors
    assert (numbers[63]["umad63"], numbers[63]["issm63"]) == ((231, 63), (231, 127))  # 64 fixed umad and issm minors
    # Past them umad and issm share one dynamic major, issm's minors after the kernel's 8192 - 64 umad ones.
    assert (numbers[64]["umad64"], numbers[64]["issm64"]) == ((238, 0), (238, 8128))
    assert numbers[70] == {"uverbs70": (239, 38), "umad70": (238, 6), "issm70": (238, 8134)}
    assert sysfs.rdma_char_devices(plan.by_name("gpu0")) == []


def test_the_nodes_own_links_are_virtual_netdevs_kept_in_step(tmp_path: Path) -> None:
    lo = sysfs.VirtualLink(ifindex=1, address="00:00:00:00:00:00", mtu=65536, operstate="unknown", arp_type=772, flags=0x10049)
    eth0 = sysfs.VirtualLink(ifindex=2, address="02:42:0a:63:01:01", mtu=1500, operstate="up", arp_type=1, flags=0x11043)
    (tmp_path / "class" / "net").mkdir(parents=True)
    sysfs.sync_virtual_links(tmp_path, {"lo": lo, "eth0": eth0})
    net = tmp_path / "class" / "net"
    assert sorted(os.listdir(net)) == ["eth0", "lo"]
    assert os.readlink(net / "eth0") == "../../devices/virtual/net/eth0"
    assert (net / "eth0" / "address").read_text() == "02:42:0a:63:01:01\n"
    assert (net / "lo" / "type").read_text() == "772\n" and (net / "lo" / "flags").read_text() == "0x10049\n"
    assert not (net / "eth0" / "device").exists(), "a virtual netdev has no device behind it"
    assert os.path.realpath(net / "eth0" / "subsystem") == os.path.realpath(net)
    sysfs.sync_virtual_links(tmp_path, {"lo": lo, "eth0": sysfs.VirtualLink(**{**eth0.__dict__, "operstate": "down"})})
    assert (net / "eth0" / "operstate").read_text() == "down\n" and (net / "eth0" / "carrier").read_text() == "0\n"
    sysfs.sync_virtual_links(tmp_path, {"lo": lo})  # eth0 went (a pod's veth end, say)
    assert os.listdir(net) == ["lo"] and os.listdir(tmp_path / "devices" / "virtual" / "net") == ["lo"]
