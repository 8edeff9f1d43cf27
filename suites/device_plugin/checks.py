"""The device plugin checks that the tests and the self-check share, judged by the device plugin
API as the kubelet holds it (its checkpoint of each Allocate answer and of the healthy devices,
the node's capacity and allocatable), not by what our plugin logs or names; and the plugin as the
node runs it: its pod and log on a node (evidence), the GPUs the emulated hardware gives the node."""

from __future__ import annotations

from basics.errors import HarnessError
from clusters.providers import Lab
from fake_hardware.lab import HardwareLab
from suites.device_plugin import allocation, checkpoint, observations
from suites.device_plugin.checkpoint import Entry
from suites.device_plugin.node_resources import allocatable, capacity, wait_allocatable
from suites.framework import cdi_specs, pods
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.node_files import NodeFiles
from suites.framework.pods import PodBuilder
from suites.framework.waits import DriverTimedOut

# Measured on the lab (v1.37.1): allocatable follows a health change 9.6 to 10.1 s later. The
# plugin sees it within its 1 s sysfs poll; kubelet publishes allocatable with its next node
# status update (every 10 s, nodeStatusUpdateFrequency). 30 s is three of those.
HEALTH_TIMEOUT = 30


def gpus(lab: Lab, plugin: DriverUnderTest, node: str) -> list[str]:
    """The node's emulated GPUs by profile name (gpu0, gpu1, ...): what the plugin must advertise."""
    plugin.requires_hardware("this check counts the GPUs dralab's emulated hardware gives each node")
    return [f.name for f in HardwareLab(lab.hardware_site("counting the emulated GPUs")).node(node).plan.functions if f.kind == "gpu"]


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
    lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, namespace: str, pod: str, count: int, ev: Evidence
) -> Entry:  # DP-04
    """Once pod `pod` (a device_pod) runs: the kubelet's record of its allocation, after checking
    that it was granted `count` distinct devices, that the plugin's Allocate answer for them names
    none of the resource's other devices, and that its container holds everything the answer
    gave (env, mounts, device nodes, CDI devices' edits)."""
    running = pods.wait_phase(api, namespace, pod)
    node: str = running.spec.node_name  # type: ignore[assignment]  # a Running pod's, Optional in the client
    held = observations.kubelet_checkpoint(files, node)
    entry = observations.entry_of(held, running, plugin.resource)
    ev.add(f"pod {pod}: the kubelet's record of its allocation (checkpoint)", entry.as_evidence())
    ids = entry.device_ids
    ev.observe(f"pod {pod}: devices granted", ids)
    assert len(set(ids)) == len(ids) == count, f"pod {pod} asked for {count} {plugin.resource}, the kubelet granted {len(ids)}: {ids}"
    specs = list(cdi_specs.on_node(files, node).values()) if entry.answer.cdi_devices else []
    # The container gets whatever the answer names: naming another device hands that one out.
    others = sorted(set(held.registered.get(plugin.resource, [])) - set(ids))
    foreign = allocation.foreign_devices(entry.answer, specs, others)
    assert not foreign, (
        f"pod {pod} was granted {ids}, yet the plugin's Allocate answer for them names devices the "
        f"kubelet did not grant: " + "; ".join(foreign)
    )
    expected, wrong = allocation.promises(entry.answer, specs)
    nodes = [p for p in expected if p.what == "device node"]
    view = observations.container_view(lab, namespace, pod, [p.target for p in nodes], [p.target for p in expected if p.what == "mount"])
    ev.add(f"pod {pod}: what its container holds", view.as_evidence())
    wrong += allocation.violations(expected, view, {p.host_path: observations.file_kind(files, node, p.host_path) for p in nodes})
    assert not wrong, f"pod {pod}'s container lacks what the plugin answered to Allocate for {ids}: " + "; ".join(wrong)
    return entry


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
