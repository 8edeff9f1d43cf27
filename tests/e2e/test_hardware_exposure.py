"""HW-05: a driver container sees the node's emulated hardware at the standard sysfs paths, under a
root prefix, and in the node's root where a chart expects the host's; one DaemonSet-style pod spec
serves every node."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from clusters.providers import Lab
from fake_hardware.exposure import host_root_mounts, standard_sysfs_mounts, sysfs_root_mount
from fake_hardware.lab import HardwareLab
from suites.framework import pods
from suites.framework.pods import PodBuilder

pytestmark = pytest.mark.e2e

READ_GPU0 = (
    "ls /sys/bus/pci/devices | wc -l; cat /sys/bus/pci/devices/0000:03:00.0/vendor; "
    "cat /sys/bus/pci/devices/0000:03:00.0/dralab-gpu.json; readlink /sys/class/net/ens1f0v0; "
    "cat /sys/class/net/ens1f0v0/address; cat $ROOT/bus/pci/devices/0000:03:00.0/numa_node; "
    # HW-08 in a container: /sys/module as drivers check it, a write the kernel refuses fails for the writer
    "readlink /sys/module/vfio_pci/drivers/pci:vfio-pci; "
    "(echo 99 > /sys/bus/pci/devices/$PF/sriov_numvfs) 2>/dev/null && echo accepted || echo refused; "
    "cat /sys/bus/pci/devices/$PF/sriov_numvfs"
)


def run_on_every_node(
    lab: Lab,
    api,
    namespace: str,
    prefix: str,
    script: str,
    volumes: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    env: Callable[[str], dict[str, str]],
) -> dict[str, list[str]]:
    """The script's output lines on each node, run in a pod with the volumes mounted (as a driver DaemonSet's)."""
    for node in lab.nodes:
        pod = PodBuilder(f"{prefix}-{node.name}").on_node(node.name).once()
        pod.running("sh", "-c", script)
        pod.env += [{"name": k, "value": v} for k, v in env(node.name).items()]
        pod.volumes += volumes
        pod.mounts += mounts
        pods.create(api, namespace, pod)
    out = {}
    for node in lab.nodes:
        name = f"{prefix}-{node.name}"
        finished = pods.wait_phase(api, namespace, name, ("Succeeded", "Failed"))
        out[node.name] = pods.logs(api, namespace, name).splitlines()
        assert finished.status.phase == "Succeeded", out[node.name]
    return out


@pytest.mark.requirement("HW-05")
def test_driver_pod_reads_the_tree_at_standard_paths_and_under_a_root_prefix(local_only: Lab, api, namespace: str) -> None:
    if not local_only.local.cfg.hardware:
        pytest.skip("the lab has no emulated hardware")
    hardware = HardwareLab(local_only.local.cfg.hardware_site())
    volumes, mounts = standard_sysfs_mounts()
    root_volume, root_mount, flag = sysfs_root_mount()
    seen = run_on_every_node(
        local_only,
        api,
        namespace,
        "driver-view",
        READ_GPU0,
        [*volumes, root_volume],
        [*mounts, root_mount],
        lambda node: {"ROOT": flag.split("=", 1)[1], "PF": hardware.node(node).plan.by_name("nic0").bdf},
    )
    for node, out in seen.items():
        plan = hardware.node(node).plan
        gpu, vf = plan.by_name("gpu0"), plan.by_name("nic0-vf0")
        assert int(out[0]) == len(plan.at_boot())
        assert out[1] == "0x10de"
        info = json.loads("".join(out[2:9]))
        assert info["uuid"] == gpu.gpu["uuid"] and info["health"] == "healthy"
        assert out[9].endswith(f"{vf.bdf}/net/ens1f0v0")
        assert out[10] == vf.mac and out[11] == str(gpu.numa)
        pf = plan.by_name("nic0")
        assert out[12].endswith("bus/pci/drivers/vfio-pci")
        assert out[13:] == ["refused", str(len([v for v in pf.virtfns if plan.by_bdf(v).at_boot]))], out[12:]


# modprobe by its path: busybox's chroot would run its own modprobe applet (coreutils' finds the root's by PATH).
HOST_ROOT_CHECKS = (
    "chroot /host-root /usr/sbin/modprobe vfio_pci && echo vfio_pci loaded; "
    "chroot /host-root /sbin/modprobe nouveau 2>&1; "
    "ls /host-root/sys/kernel/iommu_groups | wc -l; "
    "readlink /host-root/sys/bus/pci/devices/$GPU/iommu_group; "
    "test -c /host-root/dev/null && test -d /host-root/proc/1 && echo dev and proc; "
    "ls /host-root/var/lib/dralab-hardware/driver-root/dev | grep -c '^nvidia[0-9]'"
)


@pytest.mark.requirement("HW-05")
def test_a_chart_sees_the_node_root_where_it_expects_the_hosts(local_only: Lab, api, namespace: str) -> None:
    """hostRoot (fake_hardware/host_root.py): what NVIDIA's passthrough support does at start, from a pod."""
    if not local_only.local.cfg.hardware:
        pytest.skip("the lab has no emulated hardware")
    hardware = HardwareLab(local_only.local.cfg.hardware_site())
    volumes, mounts = host_root_mounts("/host-root")
    seen = run_on_every_node(
        local_only,
        api,
        namespace,
        "host-root",
        HOST_ROOT_CHECKS,
        volumes,
        mounts,
        lambda node: {"GPU": hardware.node(node).plan.by_name("gpu0").bdf},
    )
    for node, out in seen.items():
        plan = hardware.node(node).plan
        gpu = plan.by_name("gpu0")
        assert out[0] == "vfio_pci loaded", out
        assert out[1].startswith("modprobe: FATAL: Module nouveau not found in directory /lib/modules/"), out
        assert int(out[2]) == len({fn.iommu_group for fn in plan.at_boot() if fn.iommu_group is not None})
        assert out[3].endswith(f"kernel/iommu_groups/{gpu.iommu_group}") and out[4] == "dev and proc"
        assert int(out[5]) == len([fn for fn in plan.at_boot() if fn.kind == "gpu"]), out
