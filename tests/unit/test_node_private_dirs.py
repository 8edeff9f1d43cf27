"""Directories a lab node has of its own: /etc/cdi among them, so a driver writing its CDI specs
there reaches neither the host nor another node (MUT-02's cdi-etc variants), and /dev/vfio and
/dev/infiniband, where its emulated device nodes are; the host mount points a lab creates for them
are removed with the last lab and reported as residue until then."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.config import ClusterConfig
from clusters.local import configs, network
from clusters.local.node import LocalNode
from tests.unit.test_component_configs import TOOLS

LABS = Path("/srv/dralab")


@pytest.fixture
def labs(monkeypatch: pytest.MonkeyPatch, fs) -> Path:
    """A host with the usual dirs (pyfakefs has /tmp) and no /dev/vfio, /dev/infiniband, /etc/cdi or /opt, one
    lab running."""
    monkeypatch.setenv("DRALAB_LABS", str(LABS))
    for d in ("/var/lib", "/run", "/var/log", "/dev", "/etc", LABS / "labs" / "lab"):
        fs.create_dir(d)
    return LABS


def test_every_cdi_dir_of_containerd_is_the_nodes_own() -> None:
    node = LocalNode(ClusterConfig(name="lab"), TOOLS, "node-2", 2)
    assert node.cdi_dirs == (node.dir / "etc-cdi", node.dir / "run" / "cdi")
    assert set(configs.CDI_DIRS) == {"/etc/cdi", "/var/run/cdi"}
    assert node.host_path("/etc/cdi/vendor.json") == node.dir / "etc-cdi" / "vendor.json"
    assert node.host_path("/etc/containerd/config.toml") == Path("/etc/containerd/config.toml")


def test_the_last_lab_removes_the_mount_points_labs_created(labs: Path) -> None:
    network.create_host_mount_points()
    assert Path("/etc/cdi").is_dir() and Path("/dev/vfio").is_dir() and Path("/dev/infiniband").is_dir()
    assert sorted(p.name for p in labs.glob("*.created")) == [
        "dev-infiniband.created",
        "dev-vfio.created",
        "etc-cdi.created",
        "opt-cni-bin.created",
    ]
    network.create_host_mount_points()  # the next lab's nodes find them and mark nothing
    assert network.orphaned_host_mount_points() == [], "a lab is left: its nodes still mount there"
    network.release_host_mount_points()
    assert Path("/etc/cdi").is_dir()
    (labs / "labs" / "lab").rmdir()
    assert network.orphaned_host_mount_points() == [Path("/dev/vfio"), Path("/dev/infiniband"), Path("/etc/cdi"), Path("/opt/cni/bin")]
    network.release_host_mount_points()
    # /opt/cni/bin's parents too, which the lab made for it; the host's /tmp stays.
    assert not any(Path(p).exists() for p in ("/etc/cdi", "/dev/vfio", "/dev/infiniband", "/opt"))
    assert Path("/tmp").is_dir()
    assert not list(labs.glob("*.created"))
    assert network.orphaned_host_mount_points() == []


def test_the_hosts_own_mount_points_stay(labs: Path, fs) -> None:
    fs.create_file("/etc/cdi/vendor.json")
    network.create_host_mount_points()
    (labs / "labs" / "lab").rmdir()
    assert network.orphaned_host_mount_points() == [Path("/dev/vfio"), Path("/dev/infiniband"), Path("/opt/cni/bin")]
    network.release_host_mount_points()
    assert Path("/etc/cdi/vendor.json").exists()


def test_a_created_mount_point_someone_filled_is_kept_and_stays_residue(labs: Path, fs) -> None:
    network.create_host_mount_points()
    fs.create_file("/etc/cdi/vendor.json")
    (labs / "labs" / "lab").rmdir()
    network.release_host_mount_points()
    assert Path("/etc/cdi/vendor.json").exists()
    assert network.orphaned_host_mount_points() == [Path("/etc/cdi")]


def test_the_node_mount_namespace_binds_its_own_etc_cdi_and_dev_dirs(labs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(network, "sh", lambda *cmd, check=True: calls.append(tuple(map(str, cmd))))
    node_dir = labs / "labs" / "lab" / "nodes" / "node-1"
    (labs / "labs" / "lab" / "ns").mkdir()  # create_mount_ns_dir's
    network.create_node_mount_ns(ClusterConfig(name="lab"), "node-1", node_dir)
    (*unshare, script), uts = calls
    assert unshare[:2] == ["unshare", f"--mount={labs}/labs/lab/ns/node-1.mnt"]
    # its own hostname, the node's name (a hostNetwork pod's os.Hostname)
    assert uts == ("unshare", f"--uts={labs}/labs/lab/ns/node-1.uts", "hostname", "node-1")
    lines = script.splitlines()
    # The host's mounts under /etc/cdi are detached first, then the node's dir is bound there.
    assert "|/etc/cdi|" in lines[0] and f"mount --bind {node_dir / 'etc-cdi'} /etc/cdi" in lines
    assert (node_dir / "etc-cdi").is_dir() and lines[-1] == "mount --make-rshared /"
    # So are the dirs of its device nodes: containerd finds a CDI spec's /dev/infiniband/uverbs0 there.
    for dev in ("vfio", "infiniband"):
        assert f"|/dev/{dev}|" in lines[0] and f"mount --bind {node_dir / 'dev' / dev} /dev/{dev}" in lines
    # And what pods put in /opt/cni/bin or under /tmp (a chart's CNI plugin, a device plugin's host paths).
    assert f"mount --bind {node_dir / 'opt-cni-bin'} /opt/cni/bin" in lines
    assert f"mount --bind {node_dir / 'tmp'} /tmp" in lines
