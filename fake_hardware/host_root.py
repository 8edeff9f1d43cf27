"""A node's root as a chart mounts it (NVIDIA's DRA driver at /host-root): the directory the lab
makes for it, and what `fake_hardware.exposure.host_root_mounts` puts over it.

Drivers that manage hardware outside their container look at the host's own paths under that
mount and run host tools there with chroot: NVIDIA's passthrough support checks
/host-root/sys/module/vfio_pci and /host-root/sys/kernel/iommu_groups, runs `chroot /host-root
modprobe vfio_pci` when the module is not loaded, and finds the GPUs' device nodes under its
driver root. A lab node's / is the host machine's, whose /sys has none of the emulated hardware,
so a node gets a root of its own, at NODE_HOST_ROOT:

    sys                 the node's tree, served as at /sys (mounted over it)
    dev, proc           the node's /dev (its /dev/vfio and /dev/infiniband) and /proc (mounted)
    <driver root>       the node's NVIDIA driver root at its node path (mounted)
    usr/sbin/modprobe   drivers_under_test/cmd/modprobe: a module the node has loaded succeeds,
                        any other fails as for a module not installed (sbin links to usr/sbin)
    lib/modules/<release>   present, as modprobe and drivers expect it
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fake_hardware.lab import NODE_DRIVER_ROOT, NodeHardware

MOUNTED = ("sys", "dev", "proc", NODE_DRIVER_ROOT.lstrip("/"))


def build(hw: NodeHardware, modprobe: Path) -> None:
    root = hw.host_root
    for directory in (*MOUNTED, "usr/sbin", "usr/bin", f"lib/modules/{os.uname().release}", "run", "tmp"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    shutil.copy(modprobe, root / "usr" / "sbin" / "modprobe")
    os.chmod(root / "usr" / "sbin" / "modprobe", 0o755)
    for link in ("sbin", "bin"):
        if not (root / link).is_symlink():
            (root / link).symlink_to(f"usr/{link}")
