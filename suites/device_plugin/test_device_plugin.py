"""The classic device plugin API on a real kubelet (DP-01 to DP-07), against each profile that
claims `device-plugin` (default: dralab's fake-gpu-plugin on the emulated GPUs). The figures the
checks observe (how long kubelet takes to see a health change, a re-registration, a plugin's
death and return) are kept as `observed` properties; the timeouts are generous bounds, not claims."""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any

import pytest
from kubernetes import client

from clusters.providers import Capability as LabCapability, Lab
from suites.framework.evidence import Evidence
from drivers_under_test.deploy import PROFILE_LABEL
from drivers_under_test.profile import Capability
from suites.device_plugin import allocation, calls, checkpoint, checks, devices, observations, probe
from suites.device_plugin import generated_run as generated_run_of
from suites.device_plugin.generated_run import Run
from suites.device_plugin.node_resources import allocatable, capacity, wait_allocatable
from suites.framework import pods, spec_drift, verdicts
from suites.framework.drivers import DriverUnderTest
from suites.framework.node_files import NodeFiles
from suites.framework.spec_drift import Drift
from suites.framework.pods import ObservationFailed
from suites.framework.verdicts import Blocked, DriverFailure
from suites.framework.waits import DriverTimedOut, driver_must, wait_for
from suites.kubelet_plugin import generated

pytestmark = pytest.mark.e2e

REFERENCE_DRIVERS = ["fake-gpu-plugin"]
PROPOSAL = "device plugin proposal"
PROBE_RESOURCE = "dralab.dev/probe"


@pytest.fixture(scope="module")
def plugin(driver: DriverUnderTest) -> DriverUnderTest:
    driver.requires(Capability.DEVICE_PLUGIN)
    return driver


@pytest.fixture
def node(lab: Lab) -> str:
    return lab.nodes[0].name


@pytest.mark.requirement("DP-01")
def test_registration_advertises_every_device(
    host_access: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest, evidence: Evidence
) -> None:
    problems = []
    for n in host_access.nodes:
        gpus = checks.node_gpus(host_access, plugin, n.name)
        with contextlib.suppress(DriverTimedOut):  # judged below, on the counts the node shows
            wait_allocatable(api, n.name, plugin.resource, len(gpus.gpus))
        counts = (capacity(api, n.name, plugin.resource), allocatable(api, n.name, plugin.resource))
        # Every GPU is healthy here, and the kubelet's checkpoint holds the healthy devices ListAndWatch listed.
        listed = checks.healthy_devices(node_files, n.name, plugin.resource)
        evidence.observe(f"{n.name} capacity, allocatable; device IDs listed (checkpoint)", {"counts": counts, "listed": listed})
        problems.append(devices.registration_problem(gpus, plugin.resource, counts, listed))
    assert not any(problems), "\n".join(p for p in problems if p)


@pytest.mark.requirement("DP-02")
def test_registration_with_an_unsupported_version_is_refused(
    host_access: Lab, api, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence
) -> None:
    resource = f"{PROBE_RESOURCE}-old-version"
    answer = probe.register(host_access, api, namespace, "old-version", node, resource, version="v1alpha1")
    evidence.observe("kubelet's answer", answer)
    assert not answer["registered"] and "v1alpha1" in answer["answer"], (
        f"kubelet accepted a registration with API version v1alpha1: {answer}"
    )
    time.sleep(2)  # a refused plugin must not show up in the node's status at all
    assert capacity(api, node, resource) is None, f"{node} lists {resource} though kubelet refused its plugin"


@pytest.mark.requirement("DP-02")
def test_second_plugin_for_a_registered_resource_name(
    host_access: Lab, api, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence, request
) -> None:
    first = probe.register(host_access, api, namespace, "first", node, PROBE_RESOURCE, devices=2)
    assert first["registered"], f"the first probe for {PROBE_RESOURCE} was refused: {first}"
    wait_allocatable(api, node, PROBE_RESOURCE, 2, wait=wait_for)
    second = probe.register(host_access, api, namespace, "second", node, PROBE_RESOURCE, devices=3)
    evidence.observe("kubelet's answers", {"first": first, "second": second})
    # Shipped kubelet takes the second registration and drops the first plugin's endpoint; the
    # node shows the second plugin's devices with its next status update (about 10 s, measured).
    assert second["registered"], f"kubelet refused the second plugin for {PROBE_RESOURCE}: {second}"
    took = wait_allocatable(api, node, PROBE_RESOURCE, 3, timeout=30, wait=wait_for)
    evidence.observe("allocatable", f"{PROBE_RESOURCE} = 3 (the second plugin's devices) {took:.1f}s after it registered")
    spec_drift.record(
        request,
        Drift(
            PROPOSAL,
            "second plugin for a registered resource name",
            "the registration is refused",
            f"kubelet accepts it and replaces the first plugin: allocatable {PROBE_RESOURCE} "
            f"went from 2 to the second plugin's 3 devices in {took:.1f}s",
        ),
    )


@pytest.mark.requirement("DP-03")
def test_unhealthy_device_leaves_allocatable_and_returns(
    host_access: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest, node: str, evidence: Evidence
) -> None:
    checks.health_follows_the_hardware(host_access, api, node_files, plugin, node, evidence)


@pytest.mark.requirement("DP-04")
def test_allocate_results_reach_the_container(
    lab: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence
) -> None:
    pods.create(api, namespace, checks.device_pod("two", plugin, 2, node))
    checks.holds_its_allocation(lab, api, node_files, plugin, namespace, "two", evidence)


@pytest.mark.requirement("DP-04")
def test_concurrent_pods_get_disjoint_devices(
    lab: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence
) -> None:
    names = [f"pod-{i}" for i in range(3)]
    for name in names:
        pods.create(api, namespace, checks.device_pod(name, plugin, 2, node))
    given = {n: checks.holds_its_allocation(lab, api, node_files, plugin, namespace, n, evidence).device_ids for n in names}
    evidence.observe("devices per pod", given)
    everything = [d for ids in given.values() for d in ids]
    assert len(set(everything)) == 6, f"3 pods x 2 devices overlap: {given}"


def _container(api, namespace: str, name: str) -> tuple[str, int]:
    pod: Any = client.CoreV1Api(api).read_namespaced_pod(name, namespace)  # Any: its container statuses, Optional in the client
    status = pod.status.container_statuses[0]
    return status.container_id, status.restart_count


@pytest.mark.requirement("DP-05")
def test_kubelet_restart_keeps_running_pods_devices(
    host_access: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence
) -> None:
    total = len(checks.gpus(host_access, plugin, node))
    pods.create(api, namespace, checks.device_pod("running", plugin, 2, node))
    held = checks.holds_its_allocation(host_access, api, node_files, plugin, namespace, "running", evidence)
    before = _container(api, namespace, "running")
    written = node_files.version(node, checkpoint.PATH)
    start = time.monotonic()
    host_access.node(node).restart_kubelet()
    # Measured (v1.37.1): the reference plugin registers again about 1.5 s after the restart began
    # (it watches for a new kubelet.sock every second).
    driver_must(
        f"the plugin to register again and list its {total} devices to the restarted kubelet",
        lambda: checks.lists_again(node_files, node, plugin.resource, written, total),
        60,
    )
    took = time.monotonic() - start
    wait_allocatable(api, node, plugin.resource, total)
    evidence.observe("re-registered", f"{took:.1f}s after the kubelet restart began")
    assert _container(api, namespace, "running") == before, "the running pod's container changed or restarted"
    kept = observations.allocation_of(node_files, client.CoreV1Api(api).read_namespaced_pod("running", namespace), plugin.resource)
    assert kept.device_ids == held.device_ids, (
        f"after the kubelet restart its checkpoint gives the running pod {kept.device_ids}, before {held.device_ids}"
    )
    # Every other device goes to a new pod: kubelet still knows (checkpoint) which two are taken.
    pods.create(api, namespace, checks.device_pod("rest", plugin, total - 2, node))
    rest = checks.holds_its_allocation(host_access, api, node_files, plugin, namespace, "rest", evidence)
    evidence.observe("devices", {"running pod": held.device_ids, "new pod": rest.device_ids})
    assert not set(rest.device_ids) & set(held.device_ids), (
        f"after the kubelet restart a new pod got {rest.device_ids}, overlapping the running pod's {held.device_ids}"
    )


def _plugin_daemonset(api, plugin: DriverUnderTest) -> str:
    (ds,) = (
        client.AppsV1Api(api)
        .list_namespaced_daemon_set(plugin.profile.namespace, label_selector=f"{PROFILE_LABEL}={plugin.profile.name}")
        .items
    )
    return ds.metadata.name  # type: ignore[return-value]  # a listed object's name, Optional in the client


RETURN_TIMEOUT = 90  # seconds for a restored plugin's devices to be back in allocatable


@pytest.mark.requirement("DP-06")
def test_plugin_death_and_return(host_access: Lab, api, plugin: DriverUnderTest, namespace: str, node: str, evidence: Evidence) -> None:
    total = len(checks.gpus(host_access, plugin, node))
    pods.run(api, namespace, checks.device_pod("survivor", plugin, 1, node))
    before = _container(api, namespace, "survivor")
    apps, ds = client.AppsV1Api(api), _plugin_daemonset(api, plugin)
    # The DaemonSet would replace a killed plugin at once: select no node instead, then restore.
    # Measured (v1.37.1): allocatable drops to 0 about 4 s after the pod is stopped, while capacity
    # stays (kubelet keeps a dead plugin's resource in capacity for a grace period of 5 minutes);
    # allocatable is back about 10 s after the plugin returns (the next node status update).
    apps.patch_namespaced_daemon_set(
        ds, plugin.profile.namespace, {"spec": {"template": {"spec": {"nodeSelector": {"dralab.dev/device-plugin-stopped": "true"}}}}}
    )
    try:
        dropped = wait_allocatable(api, node, plugin.resource, 0, timeout=60, wait=wait_for)  # the kubelet's part
        after_death = (capacity(api, node, plugin.resource), allocatable(api, node, plugin.resource))
    finally:
        apps.patch_namespaced_daemon_set(ds, plugin.profile.namespace, {"spec": {"template": {"spec": {"nodeSelector": None}}}})
    try:
        restored = wait_allocatable(api, node, plugin.resource, total, timeout=RETURN_TIMEOUT)
    except DriverTimedOut:
        raise AssertionError(
            f"the plugin's pod was let back onto {node}, yet {RETURN_TIMEOUT}s later its allocatable "
            f"{plugin.resource} is {allocatable(api, node, plugin.resource)}, not {total}: the "
            "restarted plugin did not restore the resource"
        ) from None
    evidence.observe(
        "allocatable",
        f"{total} -> 0 {dropped:.1f}s after the plugin's pod was stopped (capacity, "
        f"allocatable then: {after_death}) -> {total} {restored:.1f}s after it was restored",
    )
    assert _container(api, namespace, "survivor") == before, "the running pod's container changed or restarted"
    assert client.CoreV1Api(api).read_namespaced_pod("survivor", namespace).status.phase == "Running"


@pytest.fixture(scope="module")
def generated_run(request: pytest.FixtureRequest, lab: Lab, api, node_files: NodeFiles, plugin: DriverUnderTest) -> Run:
    """The plugin's generated workloads (generated_run.py), drawn once a module by the first check
    that asks for them (`--seed`, `--seeds` and `--budget` as the DRA drivers'); kept where the
    FAIL attachments find the case a message names."""
    lab.require(LabCapability.HOST_ACCESS, "the generated pods")  # as host_access does; that fixture is per test
    config = request.config
    chosen = config.getoption("--seed")
    run = generated_run_of.draw(
        lab,
        api,
        node_files,
        plugin,
        chosen if chosen is not None else random.randrange(2**32),
        config.getoption("--budget"),
        config.getoption("--seeds"),
    )
    config.stash.setdefault(generated.RUNS, {})[plugin.resource] = run  # keyed as the DRA drivers are by driver name; a plugin has none
    return run


def _drawn(run: Run, evidence: Evidence) -> None:
    """The run's seeds and shapes in the evidence; SKIP when nothing could be drawn."""
    evidence.observe(
        "generated workloads", f"seed {run.seed} ({run.seeds} seed(s)), budget {run.budget} shape(s), up to {run.capacity} device(s) a pod"
    )
    evidence.add("shapes tried", run.tried)
    if run.skipped:
        pytest.skip(run.skipped)


@pytest.mark.requirement("DP-04")
def test_every_container_of_the_generated_pods_holds_its_allocation(
    generated_run: Run, host_access: Lab, plugin: DriverUnderTest, evidence: Evidence
) -> None:
    """Every container of the generated pods that asked for devices (init containers and several
    containers a pod among them), judged as the fixed pods are, against its node's GPUs."""
    _drawn(generated_run, evidence)
    gpus = {n.name: checks.node_gpus(host_access, plugin, n.name) for n in host_access.nodes}
    judged = {seen.name: allocation.judge(seen, gpus[seen.node]) for seen in generated_run.containers}
    evidence.observe("containers judged", f"{len(judged)}: {sorted(judged)}")
    wrong = [seen for seen in generated_run.containers if judged[seen.name]]
    evidence.add("the containers that break it", [seen.as_evidence() for seen in wrong][:10])
    problems = [f"{seen.name} was granted {seen.entry.device_ids}: " + "; ".join(judged[seen.name]) for seen in wrong]
    if generated_run.failure:
        raise DriverFailure("\n".join([str(generated_run.failure), *problems]))
    if not judged:
        raise ObservationFailed(f"no generated container asking for {plugin.resource} was looked into; shapes tried: {generated_run.tried}")
    assert not problems, "\n".join(problems)


def _granted(run: Run, node: str) -> list[calls.Granted]:
    """The containers of the run on `node` with their devices, in the order the kubelet admitted them."""
    return [
        calls.Granted(seen.name, seen.entry.pod_uid, seen.init, tuple(seen.entry.device_ids), seen.entry.answer)
        for seen in run.containers
        if seen.node == node
    ]


@pytest.mark.requirement("DP-07")
def test_every_allocate_of_the_run_honours_the_preference_and_gets_its_pre_start(generated_run: Run, evidence: Evidence) -> None:
    # DevicePluginOptions (deviceplugin/v1beta1 api.proto): GetPreferredAllocationAvailable "indicates
    # if GetPreferredAllocation is implemented and available for calling"; PreStartRequired "indicates
    # if PreStartContainer call is required before each container start". Judged from the calls
    # the kubelet and the plugin exchanged through the proxies, whichever plugin it is, for every
    # container of the generated pods, each matched to its own Allocate.
    _drawn(generated_run, evidence)
    for node, why in generated_run.unrecorded.items():
        evidence.observe(f"no calls recorded on {node}", why)
    if not generated_run.calls:
        raise ObservationFailed(f"no proxy recorded the calls on any node: {generated_run.unrecorded}")
    if not generated_run.containers and generated_run.failure:
        raise Blocked("DP-04", f"no generated pod started: {generated_run.failure}")
    violations, notes, judged = [], set(), 0
    for node, seen in sorted(generated_run.calls.items()):
        evidence.add(f"calls through the proxy on {node}", [c.as_evidence() for c in seen if c.method != "ListAndWatch"][:200])
        granted = _granted(generated_run, node)
        verdict = calls.judge(seen, granted)
        evidence.observe(f"judged on {node}", verdict.seen)
        violations += [f"on {node}: {v}" for v in verdict.violations]
        notes |= set(verdict.notes)
        judged += len(granted)
    if not judged:
        raise ObservationFailed(f"no generated container ran on a node whose calls a proxy recorded ({sorted(generated_run.calls)})")
    if len(notes) == 2:
        verdicts.skip("; ".join(sorted(notes)), "DP-07 applies to a plugin that offers either")
    for note in sorted(notes):
        evidence.observe("not applicable", note)
    assert not violations, "\n".join(violations)
