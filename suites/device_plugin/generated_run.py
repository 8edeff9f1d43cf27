"""Running the device plugin's generated workloads (generated.py) on a lab: a recording proxy
between each node's kubelet and the plugin for the while (DP-07 judges every Allocate it saw),
first a pod of one container of 2 devices on each node, then the shapes hypothesis draws, each pod
started, each of its containers that asked for devices looked into while it runs (an init
container before it ends) with the kubelet's record of its allocation, then removed. A pod that
does not start is the run's own finding (Run.failure, DP-04's)."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field

from kubernetes import client

from clusters.providers import Lab
from suites.device_plugin import checks, observations, probe
from suites.device_plugin.allocation import Observed
from suites.device_plugin.calls import Call
from suites.device_plugin.generated import INIT, OBSERVED, PodShape, pod_shapes
from suites.framework import namespaces, pods
from suites.framework.drivers import DriverUnderTest
from suites.framework.node_files import NodeFiles
from suites.framework.pods import ObservationFailed
from suites.framework.verdicts import DriverFailure
from suites.framework.waits import TooSlowToJudge, WaitTimeout, driver_must
from suites.kubelet_plugin import generated

FIRST_DEVICES = 2  # the first pod on each node: one container of this many devices


@dataclass
class Run(generated.Run):
    """The bookkeeping of the DRA drivers' generated workloads (seed, shapes tried and their
    manifests, the failure; the FAIL attachments name a case by it) and what the device plugin's
    showed: each container that asked for devices as observed, in the order the kubelet admitted
    them, and each node's calls through its proxy, or why none were recorded there."""

    containers: list[Observed] = field(default_factory=list)
    calls: dict[str, list[Call]] = field(default_factory=dict)
    unrecorded: dict[str, str] = field(default_factory=dict)


def free_devices(files: NodeFiles, node: str, resource: str) -> int:
    """The node's healthy devices of `resource` no container holds, as the kubelet's checkpoint has them."""
    held = observations.kubelet_checkpoint(files, node)
    taken = {d for e in held.entries if e.resource == resource for d in e.device_ids}
    return len(set(held.registered.get(resource, [])) - taken)


def draw(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, seed: int, budget: int, seeds: int = 1) -> Run:
    """The fixed first pods, then shapes drawn by hypothesis with `seed` and the `seeds` - 1 after
    it, `budget` each, in a namespace of their own, with a proxy recording on each node."""
    run = Run(seed=seed, budget=budget, seeds=seeds)
    free = {n.name: free_devices(files, n.name, plugin.resource) for n in lab.nodes}
    run.capacity = max(free.values(), default=0)
    if run.capacity == 0:
        run.skipped = f"no node has a free device of {plugin.resource} ({free}): no pod shape to draw"
        return run
    with contextlib.ExitStack() as stack:
        namespace = run.namespace = stack.enter_context(namespaces.fresh(api, "gen"))
        proxies = _recording(lab, api, files, plugin, run, stack)
        attempt = functools.partial(_attempt, lab, api, files, plugin, run)
        first = [PodShape(node, (FIRST_DEVICES,)) for node, count in sorted(free.items()) if count >= FIRST_DEVICES]
        run.failure = next((f for f in (attempt(shape, seed=seed) for shape in first) if f), None)
        for s in range(run.seed, run.seed + run.seeds):
            if run.failure:
                break
            run.failure = generated.explore(pod_shapes(free), s, budget, functools.partial(attempt, seed=s))
        run.calls = {node: probe.recorded(api, namespace, proxy) for node, proxy in proxies.items()}
    return run


def _recording(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, run: Run, stack: contextlib.ExitStack) -> dict[str, str]:
    """A recording proxy on each node, for as long as `stack` lasts: node -> its pod. A node where
    it cannot take the plugin's place has none, why being in `run.unrecorded`."""
    proxies = {}
    for i, n in enumerate(lab.nodes):
        proxy = f"recording-proxy-{i}"
        try:
            stack.enter_context(checks.recording(lab, api, files, plugin, run.namespace, proxy, n.name))
            proxies[n.name] = proxy
        except (DriverFailure, TooSlowToJudge):  # the plugin not back after it, or a lab too slow: not the proxy's
            raise
        except (ObservationFailed, WaitTimeout) as e:  # the proxy's own: DP-04 is judged without it
            run.unrecorded[n.name] = str(e)
    return proxies


def _attempt(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, run: Run, shape: PodShape, seed: int) -> generated.Failure | None:
    name = f"gen-{len(run.tried)}"
    run.tried.append(f"{name} (seed {seed}): {shape}")
    run.manifests[name] = shape.manifest(name, plugin.resource)
    pods.create(api, run.namespace, shape.pod(name, plugin.resource))
    try:
        run.containers += _observed(lab, api, files, plugin, run.namespace, shape, name)
        return None
    except DriverFailure as e:  # the plugin's, its timeouts too; the lab's own errors end the run
        return generated.Failure(
            f"pod {run.namespace}/{name} asking for {plugin.resource} {shape.devices} (init container: {shape.init}) on "
            f"{shape.node} did not start (seed {seed}): {e}\nthe case, to apply:\n{run.manifests[name]}",
            "DP-04",
        )
    finally:
        pods.delete(api, run.namespace, [name])


def _observed(lab: Lab, api, files: NodeFiles, plugin: DriverUnderTest, namespace: str, shape: PodShape, name: str) -> list[Observed]:
    """Each container of the pod that asked for devices, looked into while it runs, in the order
    the kubelet admitted them: the init container, told to end once seen, then the others."""
    pod = _started(api, namespace, name, shape.init)
    held = observations.kubelet_checkpoint(files, shape.node)  # written as the kubelet admitted the pod
    seen = []
    for c in shape.containers():
        if c.init:
            if c.devices:
                seen.append(observations.observe(lab, files, held, pod, c.name, plugin.resource))
            done = pods.exec_in(lab, namespace, name, "touch", OBSERVED, container=INIT)
            if done.returncode != 0:
                raise ObservationFailed(f"telling init container {INIT} of {namespace}/{name} to end: {done.stderr.strip()}")
            pod = _started(api, namespace, name, init=False)
        elif c.devices:
            seen.append(observations.observe(lab, files, held, pod, c.name, plugin.resource))
    return seen


def _started(api, namespace: str, name: str, init: bool) -> client.V1Pod:
    """The pod once its init container runs (`init`), else once every container of it runs: the
    plugin's to bring about (a pod the kubelet refused, Failed, is a DriverFailure at once, with why)."""
    core = client.CoreV1Api(api)

    def started() -> client.V1Pod | None:
        pod = core.read_namespaced_pod(name, namespace)
        status = pod.status
        if status.phase == "Failed":
            raise DriverFailure(
                f"pod {namespace}/{name} failed: {status.reason}: {status.message}\nevents:\n{pods.events(api, namespace, name)}"
            )
        if init:
            return pod if any(s.state and s.state.running for s in status.init_container_statuses or []) else None
        running = [s.state and s.state.running for s in status.container_statuses or []]
        return pod if status.phase == "Running" and running and all(running) else None

    what = f"the init container of pod {namespace}/{name}" if init else f"pod {namespace}/{name}"
    return driver_must(f"{what} to run", started, pods.POD_TIMEOUT)
