"""The emulated hardware on a real kernel: veth-backed VFs, the fabric, faults, lspci (HW-01..HW-06)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from clusters import residue
from clusters.config import ClusterConfig
from clusters.local.cluster import LocalCluster
from fake_hardware.lab import HardwareLab

pytestmark = pytest.mark.e2e
LAB = "hwlab"


def dralab(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "dralab.cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"dralab {' '.join(args)} failed:\n{result.stderr}"
    return result


def links(netns: str) -> dict[str, str]:
    out = subprocess.run(["ip", "-n", netns, "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {link["ifname"]: link.get("address", "") for link in json.loads(out)}


@pytest.fixture(scope="module")
def hw() -> Iterator[HardwareLab]:
    dralab("hw", "up", "--name", LAB, "--profile", "dgx-like", "--nodes", "2")
    try:
        yield HardwareLab(ClusterConfig.model_validate_json(LocalCluster.state_file(LAB).read_text()).hardware_site())
    finally:
        dralab("hw", "down", "--name", LAB)
        found = residue.find(LAB)
        assert not found, "hw down left behind:\n" + "\n".join(map(str, found))


@pytest.mark.requirement("HW-03")
def test_dgx_like_has_32_vf_netdevs_per_node_with_the_profile_macs(hw: HardwareLab) -> None:
    for node in hw.nodes.values():
        present = links(node.netns)
        booted = [fn for fn in node.plan.at_boot() if fn.netdev]
        assert len([fn for fn in booted if fn.kind == "vf"]) == 32
        assert {fn.netdev: present.get(fn.netdev) for fn in booted} == {fn.netdev: fn.mac for fn in booted}
        assert not any(fn.netdev in present for fn in node.plan.netdevs() if not fn.at_boot), "VFs not enabled have netdevs"
    macs = [fn.mac for node in hw.nodes.values() for fn in node.plan.at_boot() if fn.netdev]
    assert len(set(macs)) == len(macs) == 80, "MACs collide between nodes"


@pytest.mark.requirement("HW-03")
def test_vf_moved_into_a_netns_keeps_its_mac_and_reaches_a_vf_of_another_node(hw: HardwareLab) -> None:
    ends = []
    try:
        for i, node in enumerate(hw.nodes.values(), start=1):
            vf = node.plan.by_name("nic0-vf0")
            pod = f"dralabtest-pod{i}"  # stands in for a pod's network namespace; 10.97.0.0/24 is used by no lab network
            subprocess.run(["ip", "netns", "add", pod], check=True)
            ends.append(pod)
            subprocess.run(["ip", "-n", node.netns, "link", "set", vf.netdev, "netns", pod], check=True)
            subprocess.run(["ip", "-n", pod, "addr", "add", f"10.97.0.{i}/24", "dev", vf.netdev], check=True)
            subprocess.run(["ip", "-n", pod, "link", "set", vf.netdev, "up"], check=True)
            assert links(pod)[vf.netdev] == vf.mac
        ping = subprocess.run(
            ["ip", "netns", "exec", ends[0], "busybox", "ping", "-c", "2", "-W", "2", "10.97.0.2"], capture_output=True, text=True
        )
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        for pod in ends:
            subprocess.run(["ip", "netns", "delete", pod])
    # As a real NIC's netdev when its namespace is destroyed, each VF returns to its node.
    for node in hw.nodes.values():
        vf = node.plan.by_name("nic0-vf0")
        settled(f"{vf.netdev} back on {node.name} after its namespace was destroyed", lambda: links(node.netns).get(vf.netdev) == vf.mac)


@pytest.mark.requirement("HW-04")
def test_faults_show_up_in_tree_and_netdevs_and_clear(hw: HardwareLab) -> None:
    node = hw.nodes["node-1"]
    nic = node.plan.by_name("nic1")
    bus = node.sys_root / "bus" / "pci" / "devices"
    dralab("hw", "fault", "remove", "--name", LAB, "--node", "node-1", "--device", "nic1")
    assert not (bus / nic.bdf).exists() and not any((bus / vf).exists() for vf in nic.virtfns)
    assert nic.netdev not in links(node.netns) and f"{nic.netdev}v0" not in links(node.netns)
    dralab("hw", "fault", "restore", "--name", LAB, "--node", "node-1", "--device", "nic1")
    assert (bus / nic.bdf / "vendor").read_text() == "0x15b3\n"
    assert links(node.netns)[nic.netdev] == nic.mac and links(node.netns)[f"{nic.netdev}v3"]

    gpu = node.plan.by_name("gpu5")
    info = bus / gpu.bdf / "dralab-gpu.json"
    dralab("hw", "fault", "unhealthy", "--name", LAB, "--node", "node-1", "--device", "gpu5")
    assert json.loads(info.read_text())["health"] == "unhealthy"
    assert "unhealthy" in dralab("hw", "show", "--name", LAB).stdout
    dralab("hw", "fault", "healthy", "--name", LAB, "--node", "node-1", "--device", "gpu5")
    assert json.loads(info.read_text())["health"] == "healthy"

    vf = node.plan.by_name("nic2-vf1")
    pf_dir = bus / node.plan.by_bdf(vf.physfn).bdf
    dralab("hw", "fault", "remove", "--name", LAB, "--node", "node-1", "--device", "nic2-vf1")
    assert (pf_dir / "sriov_numvfs").read_text() == "3\n" and not (pf_dir / "virtfn1").exists()
    assert vf.netdev not in links(node.netns)
    dralab("hw", "fault", "restore", "--name", LAB, "--node", "node-1", "--device", "nic2-vf1")
    assert (pf_dir / "sriov_numvfs").read_text() == "4\n" and os.readlink(pf_dir / "virtfn1") == f"../{vf.bdf}"
    assert links(node.netns)[vf.netdev] == vf.mac


@pytest.mark.requirement("HW-01")
def test_lspci_reads_the_tree_with_names_numa_nodes_and_topology(hw: HardwareLab) -> None:
    node = hw.nodes["node-2"]

    def lspci(*args: str) -> str:
        return subprocess.run(
            ["lspci", "-A", "linux-sysfs", "-O", f"sysfs.path={node.sys_root / 'bus' / 'pci'}", *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    listing = lspci("-D").splitlines()
    assert len(listing) == len(node.plan.at_boot()) == 72
    assert sum("3D controller: NVIDIA Corporation GA100 [A100 SXM4 40GB]" in line for line in listing) == 8
    assert sum("Mellanox Technologies MT2892 Family [ConnectX-6 Dx]" in line for line in listing) == 8
    assert sum("ConnectX Family mlx5Gen Virtual Function" in line for line in listing) == 32
    assert sum("PEX890xx PCIe Gen 5 Switch" in line for line in listing) == 4 * 5
    for fn in (node.plan.by_name("gpu0"), node.plan.by_name("gpu7"), node.plan.by_name("nic6-vf2")):
        assert f"NUMA node {fn.numa}" in lspci("-v", "-s", fn.bdf)
    tree = lspci("-t")
    # root port 00:01.0 -> switch 01:00.0 -> downstream 02:00.0 -> GPU 03:00.0, and the NIC with its 4 VFs
    assert "+-01.0-[01-06]----00.0-[02-06]--+-00.0-[03]----00.0" in tree, tree
    assert "+-02.0-[05]--+-00.0" in tree and "\\-00.4" in tree, tree
    # each socket has its host bridge (HW-09): socket 1's root ports on bus 80, its buses numbered from 81
    assert "\\-[0000:80]-+-01.0-[81-86]----00.0-[82-86]--+-00.0-[83]----00.0" in tree, tree
    assert "-+-[0000:00]-+-01.0-[01-06]" in tree and node.plan.by_name("gpu4").bdf == "0000:83:00.0", tree


def identities(cfg: ClusterConfig) -> dict[str, list[tuple[str, str | None, object]]]:
    """Per node: address, MAC and GPU UUID of every PCI function."""
    return {
        n: [(f.bdf, f.mac, (f.gpu or {}).get("uuid")) for f in hw.plan.functions]
        for n, hw in HardwareLab(cfg.hardware_site()).nodes.items()
    }


@pytest.mark.benchmark
@pytest.mark.requirement("HW-06")
def test_build_and_teardown_benchmark_and_determinism(capsys) -> None:
    start = time.monotonic()
    dralab("hw", "up", "--name", "hwbench", "--profile", "dgx-like", "--nodes", "2")
    built = time.monotonic() - start
    state = ClusterConfig.model_validate_json(LocalCluster.state_file("hwbench").read_text())
    first = identities(state)
    start = time.monotonic()
    dralab("hw", "down", "--name", "hwbench")
    torn = time.monotonic() - start
    assert not residue.find("hwbench")
    again = identities(state)
    assert first == again, "the same seed and node names must give the same hardware"
    with capsys.disabled():
        print(
            f"\nBENCHMARK dgx-like hardware (72 PCI functions, 40 netdevs per node), 2 nodes: "
            f"build {built:.2f}s ({built / 2:.2f}s per node), teardown {torn:.2f}s ({torn / 2:.2f}s per node), "
            "command start to end"
        )


# Kernel-side behaviour (HW-08): the node's hardware agent acts on writes as the kernel would, within
# the write. What happens outside any write (a namespace destroyed) takes the agent's next round. ----


def settled(what: str, condition: Callable[[], bool], timeout: float = 10.0) -> float:
    """Seconds until `condition` held (printed: the requirement's budget is one second)."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, f"{what}: not seen within {timeout:.0f}s"
        time.sleep(0.02)
    took = time.monotonic() - start
    print(f"BENCHMARK hardware agent: {what} in {took * 1000:.0f} ms")
    return took


def refused(path: Path, value: str) -> str:
    """Write as a driver does (open, write, close); the errno the writer got, by name."""
    with pytest.raises(OSError) as e:
        path.write_text(value)
    return errno.errorcode[e.value.errno or 0]


@pytest.mark.requirement("HW-08")
def test_sriov_numvfs_writes_create_and_remove_vfs_within_the_write_and_bad_values_fail(hw: HardwareLab) -> None:
    node = hw.nodes["node-2"]
    pf = node.plan.by_name("nic5")
    pf_dir = node.sys_root / "bus" / "pci" / "devices" / pf.bdf
    numvfs = pf_dir / "sriov_numvfs"
    vfs = [node.plan.by_bdf(b) for b in pf.virtfns]
    assert len(vfs) == 8 and numvfs.read_text() == "4\n"

    # Back to back, as operators write them: each is done when write(2) returns.
    numvfs.write_text("0")
    numvfs.write_text("5")
    assert numvfs.read_text() == "5\n" and len(list(pf_dir.glob("virtfn*"))) == 5
    assert {links(node.netns).get(vf.netdev) for vf in vfs[:5]} == {vf.mac for vf in vfs[:5]}
    numvfs.write_text("0")
    assert numvfs.read_text() == "0\n" and not list(pf_dir.glob("virtfn*"))
    assert not any(vf.netdev in links(node.netns) for vf in vfs)
    assert not any((node.sys_root / "class" / "net" / str(vf.netdev)).exists() for vf in vfs)

    numvfs.write_text("8")
    assert numvfs.read_text() == "8\n" and {links(node.netns)[vf.netdev] for vf in vfs} == {vf.mac for vf in vfs}
    assert [os.readlink(pf_dir / f"virtfn{i}") for i in range(8)] == [f"../{vf.bdf}" for vf in vfs]
    assert all(os.readlink(node.sys_root / "bus" / "pci" / "devices" / vf.bdf / "physfn") == f"../{pf.bdf}" for vf in vfs)

    # The kernel refuses more than sriov_totalvfs (ERANGE), a change between two non-zero counts
    # (EBUSY) and no number (EINVAL): the writer gets the errno, the attribute keeps its value and
    # the agent's log says why. A shell's `echo 99 >` fails the same way.
    agent_log = hw.site.lab_dir / "logs" / "node-2-hardware-agent.log"
    for value, errno_name in (("9", "ERANGE"), ("3", "EBUSY"), ("three", "EINVAL")):
        assert refused(numvfs, value) == errno_name and numvfs.read_text() == "8\n"
        assert errno_name in agent_log.read_text().splitlines()[-1]
    shell = subprocess.run(["bash", "-c", f"echo 99 > {numvfs}"], capture_output=True, text=True)
    assert shell.returncode != 0 and "out of range" in shell.stderr.lower(), shell.stderr
    assert len(list(pf_dir.glob("virtfn*"))) == 8


@pytest.mark.requirement("HW-08")
def test_driver_override_and_bind_move_a_vf_to_vfio_pci_and_back(hw: HardwareLab) -> None:
    node = hw.nodes["node-2"]
    vf = node.plan.by_name("nic6-vf1")
    dev = node.sys_root / "bus" / "pci" / "devices" / vf.bdf
    drivers = node.sys_root / "bus" / "pci" / "drivers"
    group = node.dev_dir / "vfio" / str(vf.iommu_group)
    assert os.readlink(dev / "driver").endswith("/mlx5_core") and (dev / "driver_override").read_text() == "(null)\n"
    assert refused(drivers / "vfio-pci" / "bind", vf.bdf) == "EBUSY"  # still bound to mlx5_core

    # The usual three writes, back to back.
    (dev / "driver_override").write_text("vfio-pci")
    (drivers / "mlx5_core" / "unbind").write_text(vf.bdf)
    assert vf.netdev not in links(node.netns) and not (drivers / "mlx5_core" / vf.bdf).exists()
    (node.sys_root / "bus" / "pci" / "drivers_probe").write_text(vf.bdf)
    assert os.readlink(dev / "driver").endswith("/vfio-pci") and (drivers / "vfio-pci" / vf.bdf).is_symlink()
    assert group.is_char_device() and (node.dev_dir / "vfio" / "vfio").is_char_device()
    assert (node.sys_root / "kernel" / "iommu_groups" / str(vf.iommu_group) / "devices" / vf.bdf).resolve() == dev.resolve()
    assert not (node.sys_root / "class" / "net" / str(vf.netdev)).exists()

    # Back, as the SR-IOV DRA driver does: clear the override with a NUL write, unbind from
    # vfio-pci, bind to the native driver: the netdev returns.
    (dev / "driver_override").write_bytes(b"\x00")
    (drivers / "vfio-pci" / "unbind").write_text(vf.bdf)
    assert not group.exists()
    (drivers / "mlx5_core" / "bind").write_text(vf.bdf)
    assert links(node.netns)[vf.netdev] == vf.mac and (node.sys_root / "class" / "net" / str(vf.netdev)).exists()
    assert (dev / "driver_override").read_text() == "(null)\n"

    # The SR-IOV DRA driver's vfio bind, in its order: override, unbind, bind, the override cleared.
    (dev / "driver_override").write_text("vfio-pci")
    (drivers / "mlx5_core" / "unbind").write_text(vf.bdf)
    (drivers / "vfio-pci" / "bind").write_text(vf.bdf)
    (dev / "driver_override").write_bytes(b"\x00")
    assert os.readlink(dev / "driver").endswith("/vfio-pci") and group.is_char_device()
    assert (dev / "driver_override").read_text() == "(null)\n"


@pytest.mark.requirement("HW-08")
def test_new_id_binds_every_unbound_function_it_matches(hw: HardwareLab) -> None:
    node = hw.nodes["node-2"]
    vfs = [node.plan.by_name(f"nic7-vf{i}") for i in (0, 1)]
    drivers = node.sys_root / "bus" / "pci" / "drivers"
    for vf in vfs:
        (drivers / "mlx5_core" / "unbind").write_text(vf.bdf)
        assert not (drivers / "mlx5_core" / vf.bdf).exists()
    (drivers / "vfio-pci" / "new_id").write_text(f"{vfs[0].vendor:04x} {vfs[0].device:04x}")
    assert all((drivers / "vfio-pci" / vf.bdf).exists() for vf in vfs)
    # Only the unbound ones: the other VFs of the same ID stay with mlx5_core.
    assert (drivers / "mlx5_core" / node.plan.by_name("nic7-vf2").bdf).exists()
