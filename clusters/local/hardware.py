"""A lab's emulated hardware brought up: the trees and netdevs, then a hardware agent per node
(fake_hardware/agent.py) supervised like every lab component, which serves the node's tree through
FUSE, so writes to sriov_numvfs, bind or driver_override take effect, or fail, as on a real node
(HW-08)."""

from __future__ import annotations

import sys
from pathlib import Path

from clusters.config import ClusterConfig
from clusters.local import supervisor
from clusters.local.waits import wait_for
from fake_hardware import host_root
from fake_hardware.lab import HardwareLab
from fake_hardware.nvml import Userspace

AGENT_START_TIMEOUT = 30.0


def bring_up(cfg: ClusterConfig, log_dir: Path, nvidia: Userspace | None, binaries: Path, node_mount_ns: dict[str, Path]) -> HardwareLab:
    """`binaries`: drivers_under_test's build (sysfs-fuse, modprobe); `node_mount_ns`: each node's
    mount namespace, where its tree is mounted for its pods."""
    lab = HardwareLab(cfg.hardware_site())
    lab.build(nvidia)
    for hw in lab.nodes.values():
        host_root.build(hw, binaries / "modprobe")
    agents = [
        supervisor.start(
            f"{hw.name}-hardware-agent",
            [
                sys.executable,
                "-m",
                "fake_hardware.agent",
                "--site",
                str(lab.site_file),
                "--node",
                hw.name,
                "--sysfs-fuse",
                str(binaries / "sysfs-fuse"),
                *(["--node-mount-ns", str(node_mount_ns[hw.name])] if hw.name in node_mount_ns else []),
            ],
            lab_dir=cfg.lab_dir,
            log_dir=log_dir,
        )
        for hw in lab.nodes.values()
    ]
    wait_for("the hardware agents", lambda: all(hw.agent_ready_file().exists() for hw in lab.nodes.values()), AGENT_START_TIMEOUT, agents)
    return lab
