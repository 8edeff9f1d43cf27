"""The device plugin checks that the tests and the self-check share, and the plugin as the node
runs it: its pod and log on a node, the GPUs the emulated hardware gives the node."""

from __future__ import annotations

import re

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from fake_hardware.lab import HardwareLab
from suites.device_plugin.node_resources import allocatable, wait_allocatable
from suites.framework import pods
from suites.framework.drivers import DriverUnderTest
from suites.framework.pods import PodBuilder
from suites.framework.waits import WaitTimeout

# Measured on the lab (v1.37.1): allocatable follows a health change 9.6 to 10.1 s later. The
# plugin sees it within its 1 s sysfs poll; kubelet publishes allocatable with its next node
# status update (every 10 s, nodeStatusUpdateFrequency). 30 s is three of those.
HEALTH_TIMEOUT = 30


def gpus(lab: Lab, plugin: DriverUnderTest, node: str) -> list[str]:
    """The node's emulated GPUs by profile name (gpu0, gpu1, ...): what the plugin must advertise."""
    plugin.requires_hardware("this check counts the GPUs dralab's emulated hardware gives each node")
    assert lab.local is not None
    return [f.name for f in HardwareLab(lab.local.cfg).node(node).plan.functions if f.kind == "gpu"]


def plugin_pod(api, plugin: DriverUnderTest, node: str) -> str:
    items = plugin.pods_on(api, node)
    assert items, f"no pod of {plugin.profile.name} on {node}"
    return items[0].metadata.name


def plugin_log(api, plugin: DriverUnderTest, node: str) -> str:
    return pods.logs(api, plugin.profile.namespace, plugin_pod(api, plugin, node))


def granted(log: str, call: str) -> list[list[str]]:
    """The device ID lists the plugin logged for each `call` (klog: `"Allocate" devices=["a","b"]`)."""
    key = "preferred" if call == "GetPreferredAllocation" else "devices"
    return [re.findall(r"[A-Za-z0-9][\w.-]*", m) for m in re.findall(rf'"{call}" {key}=\[([^\]]*)\]', log)]


def uuids_of(output: str) -> list[str]:
    """The device IDs a container was given, from the plugin's env var it printed."""
    found = re.search(r"DRALAB_FAKE_GPU_UUIDS=(\S+)", output)
    return found.group(1).split(",") if found else []


def gpu_pod(name: str, plugin: DriverUnderTest, count: int, node: str) -> PodBuilder:
    """A pod that asks for `count` devices and prints what it got: env, device nodes, mounts."""
    return (PodBuilder(name).on_node(node).with_limit(plugin.resource, count).running(
        "sh", "-c", "env | grep ^DRALAB_ | sort; echo ---; ls /dev | grep dralab-fake-gpu; echo ---; "
                    "ls /var/run/dralab/fake-gpu; echo ---end; sleep 3600"))


def health_follows_the_hardware(lab: Lab, api, plugin: DriverUnderTest, node: str, ev: Evidence) -> None:  # DP-03
    every = gpus(lab, plugin, node)
    gpu, total = every[-1], len(every)
    # A plugin just rolled out (the self-check's variant) shows in allocatable only with kubelet's
    # next node status update: start once every GPU is there, not from a passing 0.
    wait_allocatable(api, node, plugin.resource, total, HEALTH_TIMEOUT)
    hardware = HardwareLab(lab.local.cfg)  # type: ignore[union-attr]
    hardware.set_gpu_health(node, gpu, healthy=False)
    try:
        dropped = wait_allocatable(api, node, plugin.resource, total - 1, HEALTH_TIMEOUT)
    except WaitTimeout:
        ev.add(f"plugin log on {node}", plugin_log(api, plugin, node)[-3000:])
        raise AssertionError(f"{gpu} marked unhealthy in sysfs, yet {node}'s allocatable {plugin.resource} stayed "
                             f"{allocatable(api, node, plugin.resource)} (want {total - 1}) for {HEALTH_TIMEOUT}s") from None
    finally:
        hardware.set_gpu_health(node, gpu, healthy=True)
    restored = wait_allocatable(api, node, plugin.resource, total, HEALTH_TIMEOUT)
    ev.observe("allocatable", f"{total} -> {total - 1} {dropped:.1f}s after {gpu} went unhealthy -> {total} "
                              f"{restored:.1f}s after it recovered")
