"""How a driver container sees the emulated hardware (HW-05).

Unmodified drivers read /sys/bus/pci, /sys/devices, /sys/class (net, and infiniband* where rdmamap
looks RDMA devices up), /sys/kernel/iommu_groups and /sys/module (is vfio_pci loaded?):
`standard_sysfs_mounts` bind-mounts the node's tree over exactly those paths. Drivers that take
a root prefix (`--sysfs-root`) get the whole tree at one path instead (`sysfs_root_mount`).
Drivers that find GPUs through NVML get the node's NVIDIA driver root (`driver_root_mounts`); drivers
that look at the host's own paths get the node's root (`host_root_mounts`).
Host paths are as the node sees them; each node's private /var/lib makes them the same on every
node, so one DaemonSet serves all.
"""

from __future__ import annotations

from typing import Any

from fake_hardware.host_root import MOUNTED
from fake_hardware.lab import NODE_DRIVER_ROOT, NODE_HOST_ROOT, NODE_SYSFS_ROOT

# All of /sys/class, not class/net and class/infiniband: a container's /sys is the host kernel's,
# read-only, and a host without RDMA has no class/infiniband to mount over (runc cannot create the
# mount point). The tree has every class a driver of its devices reads.
STANDARD_PATHS = ("bus/pci", "devices", "class", "kernel/iommu_groups", "module")
SYSFS_ROOT_IN_CONTAINER = "/var/run/dralab/sys"


def standard_sysfs_mounts(root: str = NODE_SYSFS_ROOT) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts) putting the fake tree at the standard /sys paths, writable as a
    privileged container's /sys is: drivers write sriov_numvfs, bind and driver_override (HW-08)."""
    volumes, mounts = [], []
    for sub in STANDARD_PATHS:
        name = "fake-sys-" + sub.replace("/", "-").replace("_", "-")
        volumes.append({"name": name, "hostPath": {"path": f"{root}/{sub}", "type": "Directory"}})
        mounts.append({"name": name, "mountPath": f"/sys/{sub}"})
    return volumes, mounts


def sysfs_root_mount(root: str = NODE_SYSFS_ROOT) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(volume, volumeMount, flag) for drivers that read sysfs under a prefix."""
    return (
        {"name": "fake-sysfs-root", "hostPath": {"path": root, "type": "Directory"}},
        {"name": "fake-sysfs-root", "mountPath": SYSFS_ROOT_IN_CONTAINER},
        f"--sysfs-root={SYSFS_ROOT_IN_CONTAINER}",
    )


def driver_root_mounts(mount_path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts) for the node's NVIDIA driver root at `mount_path`, read-only as NVIDIA's
    drivers mount it, and the tree at the node's own path too, which is where the library reads it."""
    volumes = [
        {"name": "nvidia-driver-root", "hostPath": {"path": NODE_DRIVER_ROOT, "type": "Directory"}},
        {"name": "nvml-sysfs", "hostPath": {"path": NODE_SYSFS_ROOT, "type": "Directory"}},
    ]
    mounts = [
        {"name": "nvidia-driver-root", "mountPath": mount_path, "readOnly": True},
        {"name": "nvml-sysfs", "mountPath": NODE_SYSFS_ROOT, "readOnly": True},
    ]
    return volumes, mounts


def host_root_mounts(mount_path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts) for the node's root at `mount_path` (fake_hardware/host_root.py): its
    own directory, with the tree at sys, the node's /dev, /proc and driver root over it."""
    sources = dict(zip(MOUNTED, (NODE_SYSFS_ROOT, "/dev", "/proc", NODE_DRIVER_ROOT)))
    volumes = [{"name": "host-root", "hostPath": {"path": NODE_HOST_ROOT, "type": "Directory"}}]
    mounts = [{"name": "host-root", "mountPath": mount_path, "readOnly": True}]
    for sub, source in sources.items():
        name = "host-root-" + sub.replace("/", "-").replace("_", "-")
        # A node without GPUs has no driver root: its place stays an empty directory of the node's.
        volumes.append(
            {"name": name, "hostPath": {"path": source, "type": "DirectoryOrCreate" if source == NODE_DRIVER_ROOT else "Directory"}}
        )
        mounts.append({"name": name, "mountPath": f"{mount_path}/{sub}"})
    return volumes, mounts


def node_modules_mount() -> tuple[dict[str, Any], dict[str, Any]]:
    """(volume, volumeMount) of the node root's /lib/modules at /lib/modules, read-only: where a chart
    that mounts the machine's finds its modules.alias (go-nvlib reads it there)."""
    return (
        {"name": "node-lib-modules", "hostPath": {"path": f"{NODE_HOST_ROOT}/lib/modules", "type": "Directory"}},
        {"name": "node-lib-modules", "mountPath": "/lib/modules", "readOnly": True},
    )
