"""HW-05: a driver container sees the node's emulated hardware at the standard sysfs paths, and
under a root prefix; one DaemonSet-style pod spec serves every node."""

from __future__ import annotations

import json

import pytest

from clusters.providers import Lab
from fake_hardware.exposure import standard_sysfs_mounts, sysfs_root_mount
from fake_hardware.lab import HardwareLab
from suites.framework import pods
from suites.framework.pods import PodBuilder

pytestmark = pytest.mark.e2e

READ_GPU0 = ("ls /sys/bus/pci/devices | wc -l; cat /sys/bus/pci/devices/0000:03:00.0/vendor; "
             "cat /sys/bus/pci/devices/0000:03:00.0/dralab-gpu.json; readlink /sys/class/net/ens1f0v0; "
             "cat /sys/class/net/ens1f0v0/address; cat $ROOT/bus/pci/devices/0000:03:00.0/numa_node")


@pytest.mark.requirement("HW-05")
def test_driver_pod_reads_the_tree_at_standard_paths_and_under_a_root_prefix(local_only: Lab, api, namespace: str) -> None:
    if not local_only.local.cfg.hardware:
        pytest.skip("the lab has no emulated hardware")
    hardware = HardwareLab(local_only.local.cfg)
    volumes, mounts = standard_sysfs_mounts()
    root_volume, root_mount, flag = sysfs_root_mount()
    for node in local_only.nodes:
        pod = PodBuilder(f"driver-view-{node.name}").on_node(node.name).once()
        pod.running("sh", "-c", READ_GPU0)
        pod.env.append({"name": "ROOT", "value": flag.split("=", 1)[1]})
        pod.volumes += [*volumes, root_volume]
        pod.mounts += [*mounts, root_mount]
        pods.create(api, namespace, pod)
    for node in local_only.nodes:
        name = f"driver-view-{node.name}"
        finished = pods.wait_phase(api, namespace, name, ("Succeeded", "Failed"))
        out = pods.logs(api, namespace, name).splitlines()
        assert finished.status.phase == "Succeeded", out
        plan = hardware.node(node.name).plan
        gpu, vf = plan.by_name("gpu0"), plan.by_name("nic0-vf0")
        assert int(out[0]) == len(plan.at_boot())
        assert out[1] == "0x10de"
        info = json.loads("".join(out[2:9]))
        assert info["uuid"] == gpu.gpu["uuid"] and info["health"] == "healthy"
        assert out[9].endswith(f"{vf.bdf}/net/ens1f0v0")
        assert out[10] == vf.mac and out[11] == str(gpu.numa)
