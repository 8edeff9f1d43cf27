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
    usr/sbin/modprobe   fake_hardware/cmd/modprobe: a module the node has loaded succeeds,
                        any other fails as for a module not installed (sbin links to usr/sbin)
    lib/modules/<release>/modules.alias
                        the PCI IDs of the node's devices with their drivers' modules, and vfio_pci's
                        own alias, as depmod writes them: go-nvlib picks a GPU's vfio driver
                        variant from it (NVIDIA's chart mounts it at /lib/modules too: `hostRoot`
                        puts this one there, `node_modules_mount`)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fake_hardware import sysfs
from fake_hardware.lab import NODE_DRIVER_ROOT, NodeHardware
from fake_hardware.topology import NodePlan

MOUNTED = ("sys", "dev", "proc", NODE_DRIVER_ROOT.lstrip("/"))


def modules_alias(plan: NodePlan) -> str:
    """modules.alias of the node: each device ID its driver's module claims, then vfio_pci's catch-all."""
    claimed = sorted({(fn.vendor, fn.device, sysfs.module_name(fn.driver)) for fn in plan.functions if fn.driver})
    lines = [f"alias pci:v{vendor:08X}d{device:08X}sv*sd*bc*sc*i* {module}" for vendor, device, module in claimed]
    return "\n".join(["# Aliases extracted from modules themselves.", *lines, "alias vfio_pci:v*d*sv*sd*bc*sc*i* vfio_pci"]) + "\n"


def build(hw: NodeHardware, modprobe: Path) -> None:
    root = hw.host_root
    modules = root / "lib" / "modules" / os.uname().release
    for directory in (*MOUNTED, "usr/sbin", "usr/bin", "run", "tmp"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    modules.mkdir(parents=True, exist_ok=True)
    (modules / "modules.alias").write_text(modules_alias(hw.plan))
    shutil.copy(modprobe, root / "usr" / "sbin" / "modprobe")
    os.chmod(root / "usr" / "sbin" / "modprobe", 0o755)
    for link in ("sbin", "bin"):
        if not (root / link).is_symlink():
            (root / link).symlink_to(f"usr/{link}")
