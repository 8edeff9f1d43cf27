"""The kernel's part (HW-08) on a small node's tree: what each write does, and what is refused.
Netdevs are recorded instead of created (the e2e tests create real ones)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from clusters.config import ClusterConfig
from basics.errors import LabBroken
from fake_hardware import lab as lab_module
from fake_hardware.kernel import NodeKernel
from fake_hardware.lab import NodeHardware
from fake_hardware.profile import NodeProfile
from fake_hardware.topology import plan_node
from tests.unit.test_hardware_profiles import VALID

import yaml


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NodeKernel:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    netdevs: set[str] = set()
    monkeypatch.setattr(lab_module.netdevs, "create", lambda pairs, *_: netdevs.update(f.netdev for f, _ in pairs))
    monkeypatch.setattr(
        lab_module.netdevs, "delete", lambda peers: netdevs.difference_update({f.netdev for f in hw.plan.netdevs() if hw.peer(f) in peers})
    )
    cfg = ClusterConfig(name="unit", nodes=1, slot=1)
    profile = NodeProfile.model_validate(yaml.safe_load(VALID.replace("sriov:", "rdma: true, sriov:")))
    hw = NodeHardware(cfg.hardware_site(), 1, plan_node(profile, "node-1", seed=1))
    hw.make_device_nodes()  # as HardwareLab.build does
    lab_module.sysfs.write_tree(hw.tree, hw.plan)
    netdevs.update(f.netdev for f in hw.plan.at_boot() if f.netdev)
    k = NodeKernel(hw, hw.dev_dir)  # as the agent does
    k.install()
    k.netdevs = netdevs  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    return k


def write(k: NodeKernel, rel: str, value: str) -> Path:
    """A write the kernel does: the attribute's path, to read back."""
    assert k.written(rel, value) == 0, f"write of {value!r} to {rel} refused"
    return k.root / rel


def refused(k: NodeKernel, rel: str, value: str) -> str:
    """A write the kernel refuses: the errno's name, which write(2) returns to the writer."""
    code = k.written(rel, value)
    assert code, f"write of {value!r} to {rel} done"
    return errno.errorcode[code]


def dev(k: NodeKernel, name: str) -> str:
    return f"bus/pci/devices/{k.hw.plan.by_name(name).bdf}"


def test_sriov_numvfs_enables_and_disables_vfs_with_their_netdevs(kernel: NodeKernel) -> None:
    pf = dev(kernel, "nic0")
    assert kernel.netdevs == {"ens1f0", "ens1f0v0", "ens1f0v1"}  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    assert write(kernel, f"{pf}/sriov_numvfs", "0").read_text() == "0\n"
    assert not list((kernel.root / pf).glob("virtfn*")) and kernel.netdevs == {"ens1f0"}  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    assert write(kernel, f"{pf}/sriov_numvfs", "4\n").read_text() == "4\n"
    assert sorted(p.name for p in (kernel.root / pf).glob("virtfn*")) == [f"virtfn{i}" for i in range(4)]
    assert kernel.netdevs == {"ens1f0", *(f"ens1f0v{i}" for i in range(4))}  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel


@pytest.mark.parametrize("value,why", [("5", "ERANGE"), ("3", "EBUSY"), ("three", "EINVAL")])
def test_refused_sriov_numvfs_keeps_the_old_value(kernel: NodeKernel, value: str, why: str, caplog: pytest.LogCaptureFixture) -> None:
    numvfs = f"{dev(kernel, 'nic0')}/sriov_numvfs"
    assert refused(kernel, numvfs, value) == why and (kernel.root / numvfs).read_text() == "2\n"
    assert why in caplog.text and len(list((kernel.root / dev(kernel, "nic0")).glob("virtfn*"))) == 2


def test_vfs_stay_unbound_when_autoprobe_is_off(kernel: NodeKernel) -> None:
    pf = dev(kernel, "nic0")
    write(kernel, f"{pf}/sriov_numvfs", "0")
    (kernel.root / pf / "sriov_drivers_autoprobe").write_text("0\n")
    write(kernel, f"{pf}/sriov_numvfs", "3")
    vf = kernel.root / dev(kernel, "nic0-vf2")
    assert vf.is_dir() and not (vf / "driver").exists() and not (vf / "net").exists()
    assert "ens1f0v2" not in kernel.netdevs  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel


def test_override_unbind_and_probe_move_a_vf_to_vfio_pci_with_its_group_node(kernel: NodeKernel) -> None:
    vf, fn = dev(kernel, "nic0-vf1"), kernel.hw.plan.by_name("nic0-vf1")
    write(kernel, f"{vf}/driver_override", "vfio-pci\n")
    write(kernel, "bus/pci/drivers/mlx5_core/unbind", fn.bdf)
    assert not (kernel.root / vf / "driver").exists() and "ens1f0v1" not in kernel.netdevs  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    write(kernel, "bus/pci/drivers_probe", fn.bdf)
    assert os.readlink(kernel.root / vf / "driver").endswith("/drivers/vfio-pci")
    assert (kernel.root / vf / "uevent").read_text().startswith("DRIVER=vfio-pci\n")
    group = kernel.dev_dir / "vfio" / str(fn.iommu_group)
    assert group.is_char_device() and os.major(group.stat().st_rdev) == 240
    assert (kernel.root / "bus/pci/drivers/mlx5_core/unbind").read_text() == ""  # write-only: reads back empty


def test_binds_the_kernel_would_refuse(kernel: NodeKernel, caplog: pytest.LogCaptureFixture) -> None:
    fn = kernel.hw.plan.by_name("nic0-vf0")
    assert refused(kernel, "bus/pci/drivers/vfio-pci/bind", fn.bdf) == "EBUSY"  # still bound to mlx5_core
    write(kernel, "bus/pci/drivers/mlx5_core/unbind", fn.bdf)
    assert refused(kernel, "bus/pci/drivers/vfio-pci/bind", fn.bdf) == "ENODEV"
    assert "ENODEV: vfio-pci does not match" in caplog.text  # neither override nor ID table names it
    write(kernel, "bus/pci/drivers/vfio-pci/new_id", "15b3 101e")  # binds the unbound VF of that ID
    assert os.readlink(kernel.root / dev(kernel, "nic0-vf0") / "driver").endswith("/drivers/vfio-pci")
    assert os.readlink(kernel.root / dev(kernel, "nic0-vf1") / "driver").endswith("/drivers/mlx5_core")


def test_unbinding_a_pf_disables_its_vfs_and_takes_its_netdev_and_rdma_device(kernel: NodeKernel) -> None:
    pf = kernel.hw.plan.by_name("nic0")
    assert pf.rdma_device and (kernel.root / "class" / "infiniband" / pf.rdma_device).is_dir()
    write(kernel, "bus/pci/drivers/mlx5_core/unbind", pf.bdf)
    assert (kernel.root / dev(kernel, "nic0") / "sriov_numvfs").read_text() == "0\n"
    assert kernel.netdevs == set()  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    assert not (kernel.root / "class" / "infiniband" / pf.rdma_device).exists()
    assert not (kernel.root / dev(kernel, "nic0") / "infiniband").exists()
    assert "DRIVER=" not in (kernel.root / dev(kernel, "nic0") / "uevent").read_text()
    write(kernel, "bus/pci/drivers/mlx5_core/bind", pf.bdf)
    assert kernel.netdevs == {"ens1f0"}  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    assert os.readlink(kernel.root / "class" / "infiniband" / pf.rdma_device / "device") == f"../../../{pf.bdf}"


def test_a_netdev_whose_namespace_was_destroyed_comes_back_once_it_stayed_missing(kernel: NodeKernel) -> None:
    vf = kernel.hw.plan.by_name("nic0-vf0")
    kernel.netdevs.discard(vf.netdev)  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    alive = {kernel.hw.peer(f) for f in kernel.hw.plan.at_boot() if f.netdev and f is not vf}
    kernel.return_lost_netdevs(alive, now=10.0)
    assert vf.netdev not in kernel.netdevs, "returned before it stayed missing"  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    kernel.return_lost_netdevs(alive, now=10.5)
    assert vf.netdev in kernel.netdevs  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    vf1 = kernel.hw.plan.by_name("nic0-vf1")
    write(kernel, f"bus/pci/drivers/{vf1.driver}/unbind", vf1.bdf)
    alive.discard(kernel.hw.peer(vf1))  # an unbound function has no netdev to return
    kernel.return_lost_netdevs(alive, now=11.0)
    kernel.return_lost_netdevs(alive, now=12.0)
    assert vf1.netdev not in kernel.netdevs  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel


def test_a_netdev_that_cannot_be_made_again_yet_is_tried_again_and_the_agent_lives_on(
    kernel: NodeKernel, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    vf = kernel.hw.plan.by_name("nic0-vf0")
    kernel.netdevs.discard(vf.netdev)  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel
    alive = {kernel.hw.peer(f) for f in kernel.hw.plan.at_boot() if f.netdev and f is not vf}
    made = lab_module.netdevs.create

    def exists(*_: object) -> None:
        raise LabBroken("`ip -batch -` failed: RTNETLINK answers: File exists")

    monkeypatch.setattr(lab_module.netdevs, "create", exists)  # a driver or a fault took the name meanwhile
    kernel.return_lost_netdevs(alive, now=10.0)
    kernel.return_lost_netdevs(alive, now=10.5)
    assert "not returned to the node yet" in caplog.text
    monkeypatch.setattr(lab_module.netdevs, "create", made)
    kernel.return_lost_netdevs(alive, now=11.0)
    assert vf.netdev in kernel.netdevs, "tried again once the name was free"  # type: ignore[attr-defined]  # the fixture's record of the netdevs, set on the kernel


def rdma_nodes(k: NodeKernel) -> dict[str, tuple[int, int, int]]:
    """The node's /dev/infiniband: name -> (major, minor, mode) of each character device."""
    found: dict[str, tuple[int, int, int]] = {}
    for node in (k.hw.dev_dir / "infiniband").iterdir():
        st = node.lstat()
        assert stat.S_ISCHR(st.st_mode), f"{node} is not a character device"
        found[node.name] = (os.major(st.st_rdev), os.minor(st.st_rdev), stat.S_IMODE(st.st_mode))
    return found


def chars(*n: int) -> set[str]:
    return {f"{kind}{i}" for i in n for kind in ("uverbs", "umad", "issm")}


def test_rdma_device_nodes_come_and_go_with_their_devices(kernel: NodeKernel) -> None:
    """/dev/infiniband has rdma_cm and the nodes of every RDMA device present and bound to its
    driver, with the numbers its class devices' `dev` show: what a driver hands to a container."""
    nodes = rdma_nodes(kernel)
    assert set(nodes) == {"rdma_cm", *chars(0, 1, 2)}  # the PF and the 2 VFs enabled at boot
    assert (nodes["rdma_cm"], nodes["uverbs0"], nodes["umad1"], nodes["issm2"]) == (
        (10, 262, 0o666),
        (231, 192, 0o666),
        (231, 1, 0o600),
        (231, 66, 0o600),
    )
    for name, (major, minor, _) in nodes.items():
        cls = "infiniband_verbs" if name.startswith("uverbs") else "infiniband_mad"
        assert name == "rdma_cm" or (kernel.root / "class" / cls / name / "dev").read_text() == f"{major}:{minor}\n"

    vf1 = kernel.hw.plan.by_name("nic0-vf1")
    write(kernel, "bus/pci/drivers/mlx5_core/unbind", vf1.bdf)  # e.g. on its way to vfio-pci
    assert set(rdma_nodes(kernel)) == {"rdma_cm", *chars(0, 1)}
    assert not (kernel.root / "class" / "infiniband_verbs" / "uverbs2").exists()
    write(kernel, "bus/pci/drivers/mlx5_core/bind", vf1.bdf)
    assert set(rdma_nodes(kernel)) == {"rdma_cm", *chars(0, 1, 2)}

    pf = dev(kernel, "nic0")
    write(kernel, f"{pf}/sriov_numvfs", "0")
    assert set(rdma_nodes(kernel)) == {"rdma_cm", *chars(0)}
    write(kernel, f"{pf}/sriov_numvfs", "4")
    assert set(rdma_nodes(kernel)) == {"rdma_cm", *chars(0, 1, 2, 3, 4)}

    hw, nic = kernel.hw, kernel.hw.plan.by_name("nic0")
    hw.unplug([nic, *hw.present_vfs(nic)])  # the hot-unplug fault; rdma_cm stays with the RDMA stack
    assert set(rdma_nodes(kernel)) == {"rdma_cm"}
    assert [p.name for p in (kernel.root / "class" / "infiniband_mad").iterdir()] == ["abi_version"]
    hw.plug([nic] + [vf for vf in map(hw.plan.by_bdf, nic.virtfns) if vf.at_boot])  # and its restore
    assert rdma_nodes(kernel) == nodes and not list((hw.dev_dir / "infiniband").glob(".*"))


@pytest.mark.parametrize("cleared_by", ["\x00", "", "\n"])
def test_a_nul_or_empty_write_clears_driver_override_as_the_kernel_does(kernel: NodeKernel, cleared_by: str) -> None:
    vf = dev(kernel, "nic0-vf1")
    assert write(kernel, f"{vf}/driver_override", "vfio-pci\x00garbage").read_text() == "vfio-pci\n"
    assert write(kernel, f"{vf}/driver_override", cleared_by).read_text() == "(null)\n"


def test_every_driver_a_function_may_bind_to_is_a_loaded_module(kernel: NodeKernel) -> None:
    """/sys/module/<module> with its driver linked both ways: NVIDIA's passthrough checks
    /sys/module/vfio_pci before it binds a GPU to vfio-pci."""
    for driver, module in (("vfio-pci", "vfio_pci"), ("mlx5_core", "mlx5_core")):
        here = kernel.root / "module" / module
        assert (here / "initstate").read_text() == "live\n" and (here / "parameters").is_dir()
        assert (here / "drivers" / f"pci:{driver}").resolve() == kernel.driver_dir(driver).resolve()
        assert (kernel.driver_dir(driver) / "module").resolve() == here.resolve()
    assert all((kernel.root / "module" / m).is_dir() for m in ("vfio", "vfio_iommu_type1"))


def test_the_node_roots_modules_alias_names_each_devices_module_and_vfio_pcis_own(kernel: NodeKernel) -> None:
    """As depmod writes it: go-nvlib picks a GPU's vfio driver variant from the `vfio_pci:` lines."""
    from fake_hardware.host_root import modules_alias

    lines = modules_alias(kernel.hw.plan).splitlines()
    vf = kernel.hw.plan.by_name("nic0-vf0")
    assert f"alias pci:v{vf.vendor:08X}d{vf.device:08X}sv*sd*bc*sc*i* mlx5_core" in lines
    assert lines[-1] == "alias vfio_pci:v*d*sv*sd*bc*sc*i* vfio_pci" and len(lines) == len(set(lines))


def test_the_nodes_own_links_join_class_net_beside_the_emulated_netdevs(kernel: NodeKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_hardware.sysfs import VirtualLink

    pf = kernel.hw.plan.by_name("nic0")
    link = VirtualLink(ifindex=2, address="02:00:00:00:00:02", mtu=1500, operstate="up", arp_type=1, flags=0x1003)
    monkeypatch.setattr(lab_module.netdevs, "links_of", lambda netns: {"eth0": link, "cni0": link, pf.netdev: link})
    kernel.sync_node_links()
    net = kernel.root / "class" / "net"
    assert os.readlink(net / "eth0") == "../../devices/virtual/net/eth0" and (net / "cni0").is_dir()
    assert "virtual" not in os.readlink(net / pf.netdev), "an emulated netdev stays its PCI function's"
