"""Emulated hardware in kind's workers, where the local lab's nodes have it: each worker's tree and
driver root (/var/lib/dralab-hardware), its /dev/vfio and /dev/infiniband are the local lab's host
directories of that node, bind-mounted (kind's extraMounts); its NIC and VF netdevs go into the
worker container's network namespace, attached under the name the local lab gives a node's (`ip
netns attach`). So the hardware lab, its agents and faults (fake_hardware) work unchanged, and so
do driver profiles."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusters.config import ClusterConfig
from clusters.local import hardware
from clusters.local.network import sh
from clusters.provision import Toolchain
from fake_hardware.lab import NODE_SYSFS_ROOT, HardwareLab
from fake_hardware.nvml import Userspace

HARDWARE_DIR = str(Path(NODE_SYSFS_ROOT).parent)  # the tree and the driver root
DEV_DIRS = ("vfio", "infiniband")  # under /dev: the nodes the hardware lab and its agents make


def mounts(cfg: ClusterConfig) -> dict[str, dict[str, Path]]:
    """Per lab node with hardware: node path -> host path, created now (before the containers)."""
    found = {}
    for name, hw in HardwareLab(cfg.hardware_site()).nodes.items():  # profiles and node names are checked here
        found[name] = {HARDWARE_DIR: hw.sys_root.parent, **{f"/dev/{d}": hw.dev_dir / d for d in DEV_DIRS}}
        for host in found[name].values():
            host.mkdir(parents=True, exist_ok=True)
    return found


def bring_up(cfg: ClusterConfig, tools: Toolchain, containers: dict[str, str], docker: str, log_dir: Path) -> None:
    """Attach each worker's network namespace by the lab's name for it, then build the hardware, its
    tree mounted in the worker's mount namespace."""
    Path("/run/netns").mkdir(parents=True, exist_ok=True)
    mount_ns = {}
    for node in cfg.hardware:
        pid = subprocess.run(
            [docker, "inspect", "-f", "{{.State.Pid}}", containers[node]], capture_output=True, text=True, check=True
        ).stdout.strip()
        sh("ip", "netns", "attach", cfg.netns(node), pid)
        mount_ns[node] = Path(f"/proc/{pid}/ns/mnt")
    hardware.bring_up(cfg, log_dir, Userspace(tools.nvml_library, tools.nvidia_smi), tools.drivers_under_test, mount_ns)
