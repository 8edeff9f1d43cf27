"""The device plugin checks that the tests and the self-check share, judged by the device plugin
API as the kubelet holds it (its checkpoint of each Allocate answer and of the healthy devices,
the node's capacity and allocatable), not by what our plugin logs or names; and the plugin as the
node runs it: its pod and log on a node (evidence), the GPUs the emulated hardware gives the node."""

from __future__ import annotations

import contextlib
from typing import Iterator

from basics.errors import HarnessError
from clusters.providers import Lab
from fake_hardware.lab import HardwareLab
from suites.device_plugin import allocation, calls, checkpoint, devices, observations, probe
from suites.device_plugin.checkpoint import Entry
from suites.device_plugin.devices import NodeGpus
from suites.device_plugin.node_resources import allocatable, capacity, wait_allocatable
from suites.framework import pods
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.node_files import NodeFiles
from suites.framework.pods import PodBuilder
from suites.framework.waits import DriverTimedOut, driver_must, wait_for

# Measured on the lab (v1.37.1): allocatable follows a health change 9.6 to 10.1 s later. The
# plugin sees it within its 1 s sysfs poll; kubelet publishes allocatable with its next node
# status update (every 10 s, nodeStatusUpdateFrequency). 30 s is three of those.
HEALTH_TIMEOUT = 30


def node_gpus(lab: Lab, plugin: DriverUnderTest, node: str) -> NodeGpus:
    """The node's emulated GPUs (their IDs and device nodes): what the plugin must advertise and hand out."""
    plugin.requires_hardware("this check matches the plugin's devices to the GPUs dralab's emulated hardware gives each node")
    return devices.of_plan(HardwareLab(lab.hardware_site("reading the emulated GPUs")).node(node).plan)


def gpus(lab: Lab, plugin: DriverUnderTest, node: str) -> list[str]:
    """The node's emulated GPUs by profile name (gpu0, gpu1, ...)."""
    return [g.name for g in node_gpus(lab, plugin, node).gpus]


def plugin_pod(api, plugin: DriverUnderTest, node: str) -> str:
    items = plugin.pods_on(api, node)
    if not items:
        raise HarnessError(f"no pod of {plugin.profile.name} on {node} to read the log of (DEP-01 judges where it runs)")
    return items[0].metadata.name


def plugin_log(api, plugin: DriverUnderTest, node: str) -> str:
    return pods.logs(api, plugin.profile.namespace, plugin_pod(api, plugin, node))


def device_pod(name: str, plugin: DriverUnderTest, count: int, node: str) -> PodBuilder:
    """A pod whose container asks for `count` of the plugin's devices and sleeps: its PID 1 holds
    the environment the runtime gave the container."""
    return PodBuilder(name).on_node(node).with_limit(plugin.resource, count)


def holds_its_allocation(
    lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, namespace: str, pod: str, ev: Evidence
) -> Entry:  # DP-04
    """Once pod `pod` (a device_pod) runs: the kubelet's record of its allocation, after judging
    it (allocation.judge): as many distinct devices as it asked for, an Allocate answer naming
    none of the resource's others, everything it gave held by the container, and the device
    nodes those of the granted GPUs."""
    running = pods.wait_phase(api, namespace, pod)
    node: str = running.spec.node_name  # type: ignore[assignment]  # a Running pod's, Optional in the client
    seen = observations.observe(lab, files, observations.kubelet_checkpoint(files, node), running, "main", plugin.resource)
    ev.add(f"pod {pod}: its allocation, as the kubelet holds it and the container has it", seen.as_evidence())
    ev.observe(f"pod {pod}: devices granted", seen.entry.device_ids)
    problems = allocation.judge(seen, node_gpus(lab, plugin, node))
    assert not problems, f"{seen.name} was granted {seen.entry.device_ids}: " + "; ".join(problems)
    return seen.entry


def healthy_devices(files: NodeFiles, node: str, resource: str) -> list[str]:
    """The devices of `resource` the kubelet holds healthy, as ListAndWatch last listed them."""
    return observations.kubelet_checkpoint(files, node).registered.get(resource, [])


def lists_again(files: NodeFiles, node: str, resource: str, written_before: str | None, total: int) -> bool:
    """A checkpoint written since `written_before` holds `total` healthy devices of `resource`: the
    kubelet writes it when a plugin lists its devices, so after a kubelet restart (which clears
    them, readCheckpoint) or a plugin restart this is the plugin registered and listing again."""
    return files.version(node, checkpoint.PATH) != written_before and len(healthy_devices(files, node, resource)) == total


def health_follows_the_hardware(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, node: str, ev: Evidence) -> None:  # DP-03
    """A GPU faulted in the emulated hardware leaves the node's allocatable (the kubelet's count of
    the healthy devices ListAndWatch lists) and returns to it once healed."""
    every = gpus(lab, plugin, node)
    gpu, total = every[-1], len(every)
    # A plugin just rolled out (the self-check's variant) shows in allocatable only with kubelet's
    # next node status update: start once every GPU is there, not from a passing 0.
    wait_allocatable(api, node, plugin.resource, total, HEALTH_TIMEOUT)
    before = healthy_devices(files, node, plugin.resource)
    hardware = HardwareLab(lab.cfg.hardware_site())
    hardware.set_gpu_health(node, gpu, healthy=False)
    try:
        try:
            dropped: float | None = wait_allocatable(api, node, plugin.resource, total - 1, HEALTH_TIMEOUT)
        except DriverTimedOut:
            dropped = None
        during = healthy_devices(files, node, plugin.resource)
        counts = capacity(api, node, plugin.resource), allocatable(api, node, plugin.resource)
    finally:
        hardware.set_gpu_health(node, gpu, healthy=True)
    left = sorted(set(before) - set(during))
    ev.observe(
        f"the kubelet's healthy {plugin.resource} on {node} (checkpoint, from ListAndWatch)",
        {"before": before, f"with {gpu} unhealthy": during, "left": left},
    )
    ev.observe(f"capacity, allocatable with {gpu} unhealthy", counts)
    if dropped is None:
        ev.add(f"plugin log on {node}", plugin_log(api, plugin, node)[-3000:])
        raise AssertionError(
            f"{gpu} marked unhealthy in the emulated hardware, yet {node}'s allocatable "
            f"{plugin.resource} stayed {counts[1]} (want {total - 1}) for {HEALTH_TIMEOUT}s; the "
            f"kubelet holds {len(during)} of its {len(before)} devices healthy (checkpoint)"
        )
    restored = wait_allocatable(api, node, plugin.resource, total, HEALTH_TIMEOUT)
    ev.observe(
        "allocatable",
        f"{total} -> {total - 1} {dropped:.1f}s after {gpu} went unhealthy ({left} left the "
        f"kubelet's healthy devices) -> {total} {restored:.1f}s after it recovered",
    )


@contextlib.contextmanager
def recording(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, namespace: str, proxy: str, node: str) -> Iterator[None]:
    """The recording proxy (pod `proxy`) between the node's kubelet and the plugin, in use.
    Afterwards the plugin alone again: the proxy gone and the plugin's pod restarted, so that it
    registers anew and later checks talk to it and to nothing else."""
    healthy = healthy_devices(files, node, plugin.resource)
    try:
        probe.proxy(lab, api, namespace, proxy, node, plugin.resource, healthy)
        # The kubelet talks to a resource's newest registration: the proxy's, once it listed through it.
        wait_for(
            f"the kubelet to take {plugin.resource}'s devices through the proxy on {node}",
            lambda: calls.listed(probe.recorded(api, namespace, proxy)),
            30,
        )
        wait_allocatable(api, node, plugin.resource, len(healthy), wait=wait_for)  # the proxy's
        yield
    finally:
        probe.delete(api, namespace, proxy)
        written = files.version(node, checkpoint.PATH)
        plugin.restart_on(api, node)
        driver_must(
            f"the restarted plugin to register and list its {len(healthy)} devices on {node}",
            lambda: lists_again(files, node, plugin.resource, written, len(healthy)),
            60,
        )
        wait_allocatable(api, node, plugin.resource, len(healthy))
