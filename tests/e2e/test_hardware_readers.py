"""HW-07, HW-09: the libraries real drivers discover hardware with read every shipped profile's tree
as they read a real node's. ghw (pci, topology, net), netlink and rdmamap (RDMA devices and their
/dev/infiniband nodes) run in the Go tests of fake_hardware/internal/hwreaders, compiled once,
against one hardware-only lab at a time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from clusters import residue
from clusters.config import ClusterConfig
from clusters.local.cluster import LocalCluster
from fake_hardware import sysfs, system_tree
from fake_hardware.lab import RDMA_CM, HardwareLab, NodeHardware
from fake_hardware.profile import PROFILES_DIR
from fake_hardware.topology import PciFunction

pytestmark = pytest.mark.e2e
LAB = "hwreaders"
GO_MODULE = Path(__file__).resolve().parents[2] / "fake_hardware"


def dralab(*args: str) -> None:
    result = subprocess.run([sys.executable, "-m", "dralab.cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"dralab {' '.join(args)} failed:\n{result.stderr}"


@pytest.fixture(scope="module")
def readers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("hwreaders") / "hwreaders.test"
    built = subprocess.run(["go", "test", "-c", "-o", str(binary), "./internal/hwreaders"], cwd=GO_MODULE, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return binary


@pytest.fixture(scope="module", params=sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
def hw(request: pytest.FixtureRequest) -> Iterator[NodeHardware]:
    """A hardware-only lab of one node with the profile; pytest runs a profile's tests together, so
    there is one lab at a time."""
    dralab("hw", "up", "--name", LAB, "--profile", request.param, "--nodes", "1")
    try:
        yield next(
            iter(HardwareLab(ClusterConfig.model_validate_json(LocalCluster.state_file(LAB).read_text()).hardware_site()).nodes.values())
        )
    finally:
        dralab("hw", "down", "--name", LAB)
        found = residue.find(LAB)
        assert not found, "hw down left behind:\n" + "\n".join(map(str, found))


def parent(fn: PciFunction) -> str:
    """The upstream bridge's address, as ghw gives it; nothing for a root port below its host bridge."""
    return "" if fn.parent_path[-1].startswith("pci") else fn.parent_path[-1]


def expectation(hw: NodeHardware) -> dict[str, object]:
    """What the profile says, in the shape internal/hwreaders reads (its type expectation)."""
    plan, profile = hw.plan, hw.plan.profile
    booted = plan.at_boot()
    return {
        "profile": profile.name,
        "functions": [
            {
                "bdf": fn.bdf,
                "vendor": f"{fn.vendor:04x}",
                "device": f"{fn.device:04x}",
                "class": f"{fn.class_code:06x}",
                "numa": fn.numa,
                "driver": fn.driver or "",
                "parent": parent(fn),
            }
            for fn in booted
        ],
        "numaNodes": [
            {
                "id": numa.id,
                "cpus": sorted(numa.cpu_ids()),
                "cores": len(system_tree.cores(numa)),
                # per core L1d, L1i and L2; one L3 per socket
                "caches": len(system_tree.PER_CORE_CACHES) * len(system_tree.cores(numa)) + 1,
                "distances": system_tree.distances(profile)[numa.id],
                "memoryBytes": numa.memory_bytes(),
                "physicalBytes": len(system_tree.memory_blocks(profile)[numa.id]) * system_tree.block_size(profile),
            }
            for numa in profile.numa_nodes
        ],
        "netdevs": [{"name": fn.netdev, "mac": fn.mac, "bdf": fn.bdf, "speed": str(fn.port_speed)} for fn in booted if fn.netdev],
        "rdma": [
            {
                "name": fn.rdma_device,
                "bdf": fn.bdf,
                "netdev": fn.netdev,
                "charDevices": {
                    "/dev/infiniband/rdma_cm": "{}:{}".format(*RDMA_CM),
                    **{f"/dev/infiniband/{c.name}": f"{c.major}:{c.minor}" for c in sysfs.rdma_char_devices(fn)},
                },
            }
            for fn in booted
            if fn.rdma_device
        ],
    }


@pytest.mark.requirement("HW-07")
def test_ghw_and_netlink_see_every_device_of_the_profile(hw: NodeHardware, readers: Path, tmp_path: Path) -> None:
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps(expectation(hw), indent=2))
    env = dict(
        os.environ,
        DRALAB_HW_ROOT=str(hw.sys_root.parent),
        DRALAB_HW_EXPECT=str(expect),
        DRALAB_HW_NETNS=hw.netns,
        DRALAB_HW_DEV=str(hw.dev_dir),
    )
    run = subprocess.run([str(readers), "-test.v", "-test.count=1"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SKIP" not in run.stdout, run.stdout
    print(run.stdout)  # the per-profile figures (ghw pci/topology/net, rdmamap sees N of M), shown with -s


@pytest.mark.requirement("HW-09")
def test_rdma_devices_belong_to_their_functions(hw: NodeHardware) -> None:
    """class/infiniband/<dev> leads to the function, whose netdev the RDMA device's port names, as
    rdmamap and the RDMA device plugins follow them."""
    infiniband = hw.sys_root / "class" / "infiniband"
    rdma = [fn for fn in hw.plan.at_boot() if fn.rdma_device]
    assert sorted(p.name for p in infiniband.iterdir()) == sorted(str(fn.rdma_device) for fn in rdma)
    for fn in rdma:
        device = infiniband / str(fn.rdma_device)
        assert (device / "device").resolve() == (hw.sys_root / "bus" / "pci" / "devices" / fn.bdf).resolve()
        assert [p.name for p in (device / "device" / "net").iterdir()] == [fn.netdev]
        assert (device / "ports" / "1" / "gid_attrs" / "ndevs" / "0").read_text() == f"{fn.netdev}\n"


BENCHMARKED = "dgx-like"


def _per_op_us(op: Callable[[], object], times: int = 500) -> float:
    start = time.perf_counter()
    for _ in range(times):
        op()
    return (time.perf_counter() - start) / times * 1e6


def _ghw_ms(readers: Path, root: Path) -> float:
    """ms per full ghw read (PCI, topology, net) of the node tree under `root`."""
    run = subprocess.run(
        [str(readers), "-test.run", "^$", "-test.bench", "GhwReadsTheWholeTree", "-test.benchtime", "10x"],
        env=dict(os.environ, DRALAB_HW_ROOT=str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = re.search(r"BenchmarkGhwReadsTheWholeTree\S*\s+\d+\s+(\d+) ns/op", run.stdout)
    assert run.returncode == 0 and found, run.stdout + run.stderr
    return int(found.group(1)) / 1e6


def test_benchmark_the_kernel_served_tree_against_its_plain_files(
    hw: NodeHardware, readers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a timed test: what serving the tree through FUSE costs a reader and a writer, against the
    plain files it serves (what drivers read before the FUSE server existed). Printed with -s.
    On the largest profile only: the other profiles' figures add minutes to make test and say
    nothing new (x5 to x12 on ghw when measured on all seven)."""
    if hw.plan.profile.name != BENCHMARKED:
        pytest.skip(f"benchmarked on {BENCHMARKED} only; this profile's readers are checked above")
    fn = hw.plan.at_boot()[-1]
    rel = sysfs.device_dir(hw.tree, fn).relative_to(hw.tree)
    served, plain = hw.sys_root / rel, hw.tree / rel
    rows = {"read an attribute (vendor)": [_per_op_us(lambda: (root / "vendor").read_bytes()) for root in (served, plain)]}
    numa = (plain / "numa_node").read_text()
    rows["write a stored attribute (numa_node)"] = [_per_op_us(lambda: (root / "numa_node").write_text(numa)) for root in (served, plain)]
    # An acted write: through FUSE it is the kernel's (the agent's) round trip; plain, just a file.
    rows["write driver_override (acted)"] = [
        _per_op_us(lambda: (root / "driver_override").write_text("\n"), times=200) for root in (served, plain)
    ]
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "sys").symlink_to(hw.tree)
    rows["ghw full read (PCI, topology, net), ms"] = [_ghw_ms(readers, hw.sys_root.parent), _ghw_ms(readers, tmp_path / "plain")]
    with capsys.disabled():
        print(f"\nBENCHMARK {hw.plan.profile.name} tree ({len(hw.plan.at_boot())} PCI functions), FUSE vs plain files:")
        for what, (fuse, files) in rows.items():
            unit = "" if what.endswith("ms") else " us"
            print(f"  {what}: {fuse:.1f}{unit} vs {files:.1f}{unit} (x{fuse / files:.1f})")
