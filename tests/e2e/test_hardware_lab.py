"""The emulated hardware on a real kernel: veth-backed VFs, the fabric, faults, lspci (HW-01..HW-06)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Iterator

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
        yield HardwareLab(ClusterConfig.model_validate_json(LocalCluster.state_file(LAB).read_text()))
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
        ping = subprocess.run(["ip", "netns", "exec", ends[0], "busybox", "ping", "-c", "2", "-W", "2", "10.97.0.2"],
                              capture_output=True, text=True)
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        for pod in ends:  # the VFs go with them; the fixture's teardown tolerates that
            subprocess.run(["ip", "netns", "delete", pod])


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
        return subprocess.run(["lspci", "-A", "linux-sysfs", "-O", f"sysfs.path={node.sys_root / 'bus' / 'pci'}", *args],
                              capture_output=True, text=True, check=True).stdout

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


def identities(cfg: ClusterConfig) -> dict[str, list[tuple[str, str | None, object]]]:
    """Per node: address, MAC and GPU UUID of every PCI function."""
    return {n: [(f.bdf, f.mac, (f.gpu or {}).get("uuid")) for f in hw.plan.functions]
            for n, hw in HardwareLab(cfg).nodes.items()}


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
        print(f"\nBENCHMARK dgx-like hardware (72 PCI functions, 40 netdevs per node), 2 nodes: "
              f"build {built:.2f}s ({built / 2:.2f}s per node), teardown {torn:.2f}s ({torn / 2:.2f}s per node), "
              "command start to end")
