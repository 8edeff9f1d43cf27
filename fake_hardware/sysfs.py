"""Write a node's PCI functions as a directory tree shaped like Linux sysfs (HW-01).

    devices/pci0000:00/<root port>/<switch ports>/<BDF>/{vendor,device,class,numa_node,...}
    bus/pci/devices/<BDF>           -> ../../../devices/.../<BDF>
    bus/pci/drivers/<driver>/<BDF>  -> the device; <BDF>/driver -> bus/pci/drivers/<driver>
    kernel/iommu_groups/<n>/devices/<BDF>; <BDF>/iommu_group -> kernel/iommu_groups/<n>
    class/net/<ifname>              -> ../../devices/.../<BDF>/net/<ifname>
    devices/system/node/node<N>/cpulist

Every link is relative, so the tree works wherever it is mounted (a driver container sees it
at /sys/bus/pci, /sys/devices, /sys/class/net). Every change is atomic: files and links are
created under a temporary name and renamed into place, a device directory is assembled
beside its final place and renamed in, so a driver never reads a half-written device.

GPU_INFO_FILE is lab-specific: real drivers learn a GPU's UUID, memory, model and health from
vendor libraries (NVML), which sysfs does not carry. It is JSON:
{"uuid": "GPU-...", "index": 0, "model": "...", "memoryBytes": 85899345920, "health": "healthy"}
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fake_hardware.topology import NodePlan, PciFunction

GPU_INFO_FILE = "dralab-gpu.json"
PCI_RESOURCE_LINES = 13


def write_atomic(path: Path, content: str | bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    (tmp.write_bytes if isinstance(content, bytes) else tmp.write_text)(content)  # type: ignore[operator]
    os.replace(tmp, path)


def link_atomic(link: Path, target: Path) -> None:
    """A relative symlink at `link` pointing at `target` (both absolute paths of the tree)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(target, link.parent))
    os.replace(tmp, link)


def device_dir(root: Path, fn: PciFunction) -> Path:
    return root.joinpath("devices", *fn.path)


def _files(fn: PciFunction) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "vendor": f"0x{fn.vendor:04x}\n", "device": f"0x{fn.device:04x}\n",
        "subsystem_vendor": f"0x{fn.subsystem_vendor:04x}\n", "subsystem_device": f"0x{fn.subsystem_device:04x}\n",
        "class": f"0x{fn.class_code:06x}\n", "revision": "0xa1\n", "numa_node": f"{fn.numa}\n",
        "local_cpulist": f"{fn.cpulist}\n", "irq": "0\n", "enable": "1\n",
        "current_link_speed": f"{fn.link_speed}\n", "current_link_width": f"{fn.link_width}\n",
        "max_link_speed": f"{fn.link_speed}\n", "max_link_width": f"{fn.link_width}\n",
        "resource": "0x0000000000000000 0x0000000000000000 0x0000000000000000\n" * PCI_RESOURCE_LINES,
        "config": fn.config_space(),
    }
    if fn.gpu is not None:
        files[GPU_INFO_FILE] = json.dumps({**fn.gpu, "health": "healthy"}, indent=2) + "\n"
    if fn.kind == "nic" and fn.sriov_total:
        files.update({"sriov_totalvfs": f"{fn.sriov_total}\n", "sriov_numvfs": f"{fn.sriov_num_at_boot}\n",
                      "sriov_offset": "1\n", "sriov_stride": "1\n", "sriov_vf_device": f"{fn.sriov_vf_device:04x}\n"})
    return files


def write_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """Write one function (assembled aside, renamed into place) and the links that point at it."""
    final = device_dir(root, fn)
    staging = final.with_name(f".{fn.bdf}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for name, content in _files(fn).items():
        (staging / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    if fn.netdev:
        _write_netdev_dir(staging / "net" / fn.netdev, fn)
    if final.exists():
        shutil.rmtree(final)
    os.rename(staging, final)
    _link_function(root, plan, fn)


def _write_netdev_dir(directory: Path, fn: PciFunction) -> None:
    """The attributes of a function's netdev, class/net/<ifname> as the kernel shows it."""
    directory.mkdir(parents=True)
    (directory / "address").write_text(f"{fn.mac}\n")


def _link_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    here = device_dir(root, fn)
    link_atomic(root / "bus" / "pci" / "devices" / fn.bdf, here)
    if fn.driver:
        driver = root / "bus" / "pci" / "drivers" / fn.driver
        link_atomic(driver / fn.bdf, here)
        link_atomic(here / "driver", driver)
    if fn.iommu_group is not None:
        group = root / "kernel" / "iommu_groups" / str(fn.iommu_group)
        link_atomic(group / "devices" / fn.bdf, here)
        link_atomic(here / "iommu_group", group)
    if fn.netdev:
        link_atomic(root / "class" / "net" / fn.netdev, here / "net" / fn.netdev)
    if fn.physfn:
        pf = plan.by_bdf(fn.physfn)
        link_atomic(here / "physfn", device_dir(root, pf))
        link_atomic(device_dir(root, pf) / f"virtfn{pf.virtfns.index(fn.bdf)}", here)
    for i, vf in enumerate(fn.virtfns):
        if device_dir(root, plan.by_bdf(vf)).exists():
            link_atomic(here / f"virtfn{i}", device_dir(root, plan.by_bdf(vf)))


def remove_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """Unlink a function from every index first, then take its directory away in one rename."""
    for link in (root / "bus" / "pci" / "devices" / fn.bdf,
                 root / "bus" / "pci" / "drivers" / (fn.driver or "-") / fn.bdf,
                 root / "kernel" / "iommu_groups" / str(fn.iommu_group) / "devices" / fn.bdf,
                 root / "class" / "net" / (fn.netdev or "-")):
        if link.is_symlink():
            link.unlink()
    if fn.physfn:
        pf = plan.by_bdf(fn.physfn)
        (device_dir(root, pf) / f"virtfn{pf.virtfns.index(fn.bdf)}").unlink(missing_ok=True)
    final = device_dir(root, fn)
    if final.exists():
        doomed = final.with_name(f".{fn.bdf}.removed")
        os.rename(final, doomed)
        shutil.rmtree(doomed)


def set_gpu_health(root: Path, fn: PciFunction, healthy: bool) -> None:
    info = device_dir(root, fn) / GPU_INFO_FILE
    data = json.loads(info.read_text())
    data["health"] = "healthy" if healthy else "unhealthy"
    write_atomic(info, json.dumps(data, indent=2) + "\n")


def set_num_vfs(root: Path, pf: PciFunction, count: int) -> None:
    write_atomic(device_dir(root, pf) / "sriov_numvfs", f"{count}\n")


def write_tree(root: Path, plan: NodePlan) -> None:
    # Every index exists, as in real sysfs, even with no device in it (a node without NICs still
    # has /sys/class/net): drivers and their hostPath mounts rely on that.
    for index in ("devices/pci0000:00", "bus/pci/devices", "bus/pci/drivers", "class/net", "kernel/iommu_groups"):
        (root / index).mkdir(parents=True, exist_ok=True)
    for fn in plan.at_boot():
        write_function(root, plan, fn)
    numa_dir = root / "devices" / "system" / "node"
    for numa in plan.profile.numa_nodes:
        (numa_dir / f"node{numa.id}").mkdir(parents=True, exist_ok=True)
        write_atomic(numa_dir / f"node{numa.id}" / "cpulist", f"{numa.cpus}\n")
    ids = sorted(n.id for n in plan.profile.numa_nodes)
    write_atomic(numa_dir / "online", f"{ids[0]}-{ids[-1]}\n" if len(ids) > 1 else f"{ids[0]}\n")


def write_netdev(root: Path, fn: PciFunction) -> None:
    """A function's netdev appears (its network driver registered it): assembled aside, renamed in."""
    final = device_dir(root, fn) / "net" / str(fn.netdev)
    staging = final.with_name(f".{fn.netdev}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    _write_netdev_dir(staging, fn)
    if final.exists():
        shutil.rmtree(final)
    os.rename(staging, final)
    link_atomic(root / "class" / "net" / str(fn.netdev), final)


def remove_netdev(root: Path, fn: PciFunction) -> None:
    (root / "class" / "net" / str(fn.netdev)).unlink(missing_ok=True)
    net = device_dir(root, fn) / "net"
    if net.exists():
        shutil.rmtree(net)


def unlink_driver(root: Path, fn: PciFunction) -> None:
    """The function has no driver: no driver link, and no netdev a driver would have registered."""
    (root / "bus" / "pci" / "drivers" / (fn.driver or "-") / fn.bdf).unlink(missing_ok=True)
    (device_dir(root, fn) / "driver").unlink(missing_ok=True)
    if fn.netdev:
        remove_netdev(root, fn)
