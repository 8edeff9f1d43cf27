"""KP: what every DRA driver owes the kubelet and the workloads, checked from outside as csi-test's
sanity suite checks a CSI driver: consistent slices (KP-02), prepare answers that name exactly
the claim's devices and resolvable CDI devices (KP-03), still after restarts and a reboot (KP-07),
per-claim CDI specs gone after unprepare (KP-06), registration again after a kubelet restart
(KP-01), and the driver's answers to a claim it cannot prepare, one allocated by dralab to a
device its pool lacks (KP-09, and unprepare of it: KP-05, with an unprepare repeated by dralab's
probe). The prepare, unprepare and slice rules hold over everything the run sees (every claim
prepared on every node, every pool of the driver), not only over the claims these tests create."""

from __future__ import annotations

import functools
import time
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Callable

import pytest
from kubernetes import client

from basics.errors import HarnessError
from clusters.watch_log import CLAIM_LOG
from clusters.plugin_calls import PluginCall
from clusters.providers import Lab
from drivers_under_test.deploy import PROFILE_LABEL
from drivers_under_test.profile import Capability
from fake_hardware.lab import HardwareLab
from suites.framework import cdi_specs, claims, pods, restarts, slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.node_files import NodeFiles
from suites.framework.pods import POD_TIMEOUT, ObservationFailed, PrepareRefused
from suites.framework.verdicts import Blocked, DriverFailure
from suites.framework.waits import DriverTimedOut, WaitTimeout, driver_must, wait_for
from suites.kubelet_plugin import contract, cpus, emulated, generated, health, hotplug, isolation, observe, probe_calls

pytestmark = pytest.mark.e2e

# How long the kubelet and the driver get to unprepare a claim once its last pod is gone, and the
# driver to remove its per-claim specs after that.
UNPREPARE_TIMEOUT = 60


@pytest.fixture(scope="module")
def dra_driver(driver: DriverUnderTest) -> DriverUnderTest:
    driver.requires_dra()
    return driver


def _devices_for(api, driver: DriverUnderTest) -> int:
    """Two devices where a node has them free (one where a claimConfig configures one): what a
    driver does to one device of several (leaves it out, does not restore it) shows only in a claim
    of several."""
    return 2 if driver.profile.claim_config is None and slices.room(api, driver.name).most_free >= 2 else 1


def _running_with_claim(api, driver: DriverUnderTest, namespace: str, name: str, node: str | None = None, count: int = 1) -> str:
    """The node of a pod with a claim of the driver (`count` devices), once it runs. A driver that will
    not prepare the claim breaks KP-03, which judges that: the check needing the pod is BLOCKED by
    it, not failed for it."""
    pods.create_with_claim(api, namespace, driver.claim(name, count=count), name, node)
    try:
        pod: Any = pods.wait_phase(api, namespace, name)  # running, so scheduled: its node_name is set
    except PrepareRefused as e:
        raise Blocked("KP-03", f"the driver did not prepare the claim this check needs: {e}") from None
    return str(pod.spec.node_name)


def _uid(api, namespace: str, name: str) -> str:
    return claims.read(api, namespace, name)["metadata"]["uid"]


@pytest.mark.requirement("KP-02")
def test_slices_of_every_pool_are_consistent(api, dra_driver: DriverUnderTest, evidence: Evidence) -> None:
    slices = observe.settled_slices(api, dra_driver.name)
    evidence.add(
        "the driver's ResourceSlices (pool, generation, count, node, devices)",
        [
            {
                "name": s["metadata"]["name"],
                "pool": s["spec"]["pool"],
                "node": s["spec"].get("nodeName"),
                "devices": [d["name"] for d in s["spec"].get("devices") or []],
            }
            for s in slices
        ],
    )
    assert slices, f"{dra_driver.name} publishes no ResourceSlice: nothing of it can be allocated"
    problems = contract.slice_problems(slices, observe.node_names(api))
    assert not problems, "\n".join(problems)


@pytest.mark.requirement("KP-12")
def test_standard_attributes_are_each_devices_own(host_access: Lab, api, dra_driver: DriverUnderTest, evidence: Evidence) -> None:
    dra_driver.requires_hardware("the standard attributes are held to the emulated devices' sysfs entries")
    slices = observe.settled_slices(api, dra_driver.name)
    assert slices, f"{dra_driver.name} publishes no ResourceSlice: nothing of it can be allocated"
    # Each node's tree read once, however many of its devices are judged.
    judged, problems = contract.standard_attribute_problems(slices, functools.cache(lambda node: emulated.pci_devices(host_access, node)))
    evidence.observe("the driver's devices with standard attributes, each with the PCI function it stands for", judged)
    if not judged:
        pytest.skip(
            f"no node-local device of {dra_driver.name} publishes {contract.PCI_BUS_ID}, {contract.PCIE_ROOT} or "
            f"{contract.NUMA_NODE}: KP-12 holds the values of those it publishes"
        )
    assert not problems, "\n".join(problems)


# Not over_the_run: the devices' attributes are read in the slices, which KP-11's uninstall, last in
# this module, deletes; the generated containers (the only ones that print their CPUs) are all seen by then.
@pytest.mark.requirement("KP-13")
def test_every_container_of_a_cpu_claim_runs_on_its_devices_cpus_alone(
    generated_run: generated.Run, host_access: Lab, api, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    """KP-13 over every container the run saw use the driver's CPU devices (the generated
    workloads' print their Cpus_allowed_list at their start), each against the CPUs of its own
    devices as the node's tree lists them and the count its allocation consumed."""
    dra_driver.requires(Capability.EXCLUSIVE_CPUS)
    dra_driver.requires_hardware("the CPUs a device stands for are read in the node's emulated tree")
    declared = dra_driver.profile.cpu_devices
    if declared is None:  # the profile's validator lets exclusive-cpus come with cpuDevices only
        raise HarnessError(f"driver profile {dra_driver.profile.name} claims exclusive-cpus without cpuDevices")
    if generated_run.skipped:
        pytest.skip(generated_run.skipped)
    records = host_access.container_files()
    published = cpus.published_attributes(slices.published(api, dra_driver.name))
    judged, problems, unknown = cpus.judged(
        records,
        host_access.claims_allocated(),
        published,
        declared,
        functools.cache(lambda node: emulated.cpu_topology(host_access, node)),
        dra_driver.name,
    )
    evidence.observe(
        "containers seen",
        f"{len(judged)} container(s) using CPU devices of {dra_driver.name} printed their CPUs, of {len(records)} recorded",
    )
    if unknown:
        evidence.add("containers not judged: a device of theirs is no longer published", unknown[:20])
    if not judged and not problems:
        if generated_run.started:
            raise ObservationFailed(
                f"{len(generated_run.started)} claim(s) of generated pods ran, and no container record using "
                f"{dra_driver.name}'s devices has its CPUs and devices still published ({len(unknown)} with devices "
                f"that are not); see {host_access.log_dir}"
            )
        raise Blocked("KP-03", f"no generated pod with a claim of {dra_driver.name} started: {generated_run.failure}")
    problems += cpus.problems(judged)
    evidence.add("each container: its CPUs and its devices'", [j.shown() for j in judged][:40])
    assert not problems, "containers run on CPUs other than their claims' devices give them alone:\n" + "\n".join(problems)


# How long a device's removal from the node, and its return, may take to show in the slices.
HOTPLUG_TIMEOUT = 60


@pytest.mark.requirement("KP-02")
def test_slices_follow_a_device_removed_from_the_node_and_restored(
    host_access: Lab, api, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    dra_driver.requires_hardware("this check removes an emulated device from a node")
    observe.settled_slices(api, dra_driver.name)
    found = hotplug.candidate(host_access, api, dra_driver.name, [n.name for n in host_access.nodes])
    if found is None:
        pytest.skip(
            f"no device in {dra_driver.name}'s node-local slices publishes the UUID or PCI address of an "
            "emulated device (attributes uuid, resource.kubernetes.io/pciBusID) that no claim holds, so "
            "dralab cannot tell which one to remove"
        )
    node, removed, before = found
    pool, name = before[removed]
    evidence.observe("published before", {"node": node, "emulated devices": {k: "/".join(v) for k, v in before.items()}})

    def now() -> dict[str, tuple[str, str]]:
        return hotplug.published(host_access, api, dra_driver.name, node)

    hardware = HardwareLab(host_access.cfg.hardware_site())
    hardware.remove_device(node, removed)
    try:
        try:
            after = driver_must(
                f"{removed} of {node} to leave {dra_driver.name}'s slices",
                lambda: (lambda seen: seen if removed not in seen else None)(now()),
                HOTPLUG_TIMEOUT,
            )
        except DriverTimedOut:
            raise AssertionError(
                f"{removed} of {node} removed from the node: {HOTPLUG_TIMEOUT}s later the driver's "
                f"slices still publish it as device {pool}/{name}"
            ) from None
        evidence.observe("published once removed", {k: "/".join(v) for k, v in after.items()})
        lost = sorted(set(before) - set(after) - {removed})
        assert not lost, (
            f"{removed} of {node} removed from the node: the driver's slices dropped {', '.join(lost)} too, which are still there"
        )
    finally:
        hardware.restore_device(node, removed)
    try:
        driver_must(f"{removed} of {node} published again", lambda: removed in now(), HOTPLUG_TIMEOUT)
    except DriverTimedOut:
        raise AssertionError(
            f"{removed} of {node} plugged in again: {HOTPLUG_TIMEOUT}s later the driver's slices do not "
            f"publish it (they publish {sorted(now())})"
        ) from None


@pytest.mark.requirement("KP-03")
def test_every_prepared_claim_is_answered_with_its_devices_and_resolvable_cdi_devices(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    count = _devices_for(api, dra_driver)
    evidence.observe("this check's claim", f"claim {namespace}/prepared: request dev for {count} device(s)")
    pods.create_with_claim(api, namespace, dra_driver.claim("prepared", count=count), "prepared")
    try:
        pods.wait_phase(api, namespace, "prepared")
        not_started = None
    except WaitTimeout as e:  # a container the runtime cannot give its CDI devices: judged on the answer below
        not_started = e
    own = _uid(api, namespace, "prepared")
    problems, seen = [], []
    for node in [n.name for n in lab.nodes]:
        running = _in_use(api, node)  # before the checkpoint: these pods' claims were prepared when it is read
        state = observe.node_state(node_files, lab, node)
        for prepared in state.prepared:
            if prepared.of(dra_driver.name) is None:
                continue
            seen.append(prepared.uid)
            results = observe.allocation_of(api, lab, prepared)
            evidence.add(
                f"on {node}: the kubelet's record of claim {prepared.namespace}/{prepared.name}",
                {
                    "answer": [asdict(d) for d in prepared.of(dra_driver.name) or ()],
                    "allocated": [r for r in results if r.get("driver") == dra_driver.name],
                    "pods": sorted(prepared.pod_uids),
                    "a running pod uses it": bool(prepared.pod_uids & running),
                },
            )
            problems += [
                f"on {node}: {p}"
                for p in contract.prepare_problems(prepared, results, dra_driver.name, state.specs, bool(prepared.pod_uids & running))
            ]
    evidence.observe("claims judged", f"{len(seen)} claim(s) prepared by {dra_driver.name} on the lab's nodes")
    assert not problems, "\n".join(problems)
    if not_started is not None:
        raise not_started
    assert own in seen, (
        f"claim {namespace}/prepared ({own}) of the running pod is in no node's kubelet DRA checkpoint as prepared by {dra_driver.name}"
    )


@pytest.mark.requirement("KP-06")
def test_an_unprepared_claims_own_cdi_specs_are_gone(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    node = _running_with_claim(api, dra_driver, namespace, "cleanup")
    uid = _uid(api, namespace, "cleanup")
    state = observe.node_state(node_files, lab, node)
    prepared = state.running_claim(uid, namespace, "cleanup", "cleanup")
    own = contract.per_claim_specs(prepared, dra_driver.name, state.specs)
    evidence.add("the driver's answer for the claim", [asdict(d) for d in prepared.of(dra_driver.name) or ()])
    evidence.observe("its own CDI spec files (define its CDI devices and name its UID)", own)
    client.CoreV1Api(api).delete_namespaced_pod("cleanup", namespace)
    driver_must(
        f"the kubelet to unprepare claim {namespace}/cleanup on {node} once its pod is gone",
        lambda: all(c.uid != uid for c in observe.prepared_claims(node_files, lab, node)),
        UNPREPARE_TIMEOUT,
    )
    if not own:
        evidence.observe(
            "no per-claim CDI spec",
            "the claim's CDI devices are defined by specs shared by claims, which stay; there is no per-claim spec to remove",
        )
        return

    def left() -> list[str]:
        return sorted(set(own) & set(cdi_specs.on_node(node_files, node)))

    try:
        driver_must(f"the CDI spec(s) of unprepared claim {uid} to be removed from {node}", lambda: not left(), UNPREPARE_TIMEOUT)
    except DriverTimedOut:
        raise AssertionError(
            f"{UNPREPARE_TIMEOUT}s after the kubelet unprepared claim {namespace}/cleanup ({uid}), "
            f"its CDI spec(s) are still on {node}: {left()}"
        ) from None


@pytest.mark.requirement("KP-01")
def test_the_driver_registers_again_after_a_kubelet_restart(
    host_access: Lab, api, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    # Registered before: a pod with a claim ran on the node (then freed its device, for a driver
    # with one device per node).
    node = _running_with_claim(api, dra_driver, namespace, "before")
    pods.delete(api, namespace, ["before"], UNPREPARE_TIMEOUT)
    claims.delete(api, namespace, "before")
    host_access.node(node).restart_kubelet()
    evidence.observe("restarted", f"the kubelet of {node}, once a pod with a claim of {dra_driver.name} had run there")
    try:
        _running_with_claim(api, dra_driver, namespace, "after", node=node)
    except DriverTimedOut as e:
        unregistered = [line for line in str(e).splitlines() if pods.NOT_YET_REGISTERED in line]
        if unregistered:
            raise AssertionError(
                f"after the kubelet on {node} restarted, {dra_driver.name} did not register with it again: {unregistered[-1]}"
            ) from None
        raise


# A device name in no driver's pool: a claim allocated it is one no correct driver can prepare.
ABSENT_DEVICE = "dralab-absent-device"
# The kubelet's words for a driver's answers to NodePrepareResources (v1.37.1
# pkg/kubelet/cm/dra/manager.go): an error for one claim, an error of the whole call, claims left
# unanswered.
CLAIM_FAILED = "NodePrepareResources failed for ResourceClaim {claim}: "
CALL_FAILED = "NodePrepareResources: "
SKIPPED = "NodePrepareResources skipped"


def _node_pool(api, driver: DriverUnderTest) -> observe.NodePool:
    pools = observe.node_pools(observe.settled_slices(api, driver.name))
    if not pools:
        pytest.skip(f"{driver.name} publishes no node-local pool, so dralab cannot allocate a device of a node by hand")
    assert ABSENT_DEVICE not in pools[0].devices, f"pool {pools[0].pool} publishes a device named {ABSENT_DEVICE}"
    return pools[0]


def _unpreparable(api, driver: DriverUnderTest, namespace: str, name: str, at: observe.NodePool) -> None:
    """A pod bound to `at.node` whose claim dralab allocated, as the scheduler would, to a device
    that the driver's pool there does not publish: a claim no correct driver can prepare."""
    claims.create(api, namespace, driver.claim(name))
    pod = pods.create_bound(api, namespace, pods.PodBuilder(name).with_claim("c", claim=name), at.node)
    claims.allocate_by_hand(
        api,
        claims.read(api, namespace, name),
        [{"request": "dev", "driver": driver.name, "pool": at.pool, "device": ABSENT_DEVICE}],
        at.node,
        pod,
    )


def _driver_answers(api, namespace: str, pod: str) -> list[str]:
    """The kubelet's events of the driver's answers to NodePrepareResources for the pod, oldest first."""
    return [e.message or "" for e in pods.prepare_refusals(api, namespace, pod) if "NodePrepareResources" in (e.message or "")]


def _refused(api, namespace: str, name: str) -> list[str]:
    """The driver's answers to the pod's prepare once it has given one; a pod that starts means
    the driver prepared a device it does not publish."""

    def answered() -> list[str] | None:
        if client.CoreV1Api(api).read_namespaced_pod(name, namespace).status.phase == "Running":
            raise AssertionError(
                f"pod {namespace}/{name} runs: the driver prepared its claim, allocated device "
                f"{ABSENT_DEVICE}, which none of its slices publishes"
            )
        return _driver_answers(api, namespace, name) or None

    return driver_must(f"the kubelet's event of the driver's answer for pod {namespace}/{name}", answered, POD_TIMEOUT)


@pytest.mark.requirement("KP-09")
def test_a_claim_the_driver_cannot_prepare_gets_its_own_error_and_other_claims_are_served(
    api, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    at = _node_pool(api, dra_driver)
    _running_with_claim(api, dra_driver, namespace, "served", node=at.node)
    _unpreparable(api, dra_driver, namespace, "unpreparable", at)
    answers = _refused(api, namespace, "unpreparable")
    evidence.observe(f"the kubelet's events for pod unpreparable (claim allocated {at.pool}/{ABSENT_DEVICE} on {at.node})", answers)
    own = CLAIM_FAILED.format(claim="unpreparable")
    wrong = [a for a in answers if own not in a]
    assert not wrong, (
        f"the driver did not answer claim unpreparable, allocated device {ABSENT_DEVICE} that its pool "
        f"{at.pool} lacks, with an error of its own: the kubelet said {wrong[0]!r} (an error of the whole "
        f"call, '{CALL_FAILED}', fails every claim of the pod; '{SKIPPED}': claims left unanswered)"
    )
    if not any(ABSENT_DEVICE in a for a in answers):
        evidence.warn(
            f"the driver's error for claim unpreparable does not name the device it cannot prepare ({ABSENT_DEVICE}): {answers[-1]!r}"
        )
    assert client.CoreV1Api(api).read_namespaced_pod("served", namespace).status.phase == "Running", (
        f"pod served, prepared on {at.node} before, stopped running once the driver refused another claim"
    )
    client.CoreV1Api(api).delete_namespaced_pod("served", namespace)  # its device, if the node has only one
    pods.create_with_claim(api, namespace, dra_driver.claim("later"), "later", at.node)
    try:
        pods.wait_phase(api, namespace, "later")
    except PrepareRefused as e:
        raise AssertionError(f"once it had refused claim unpreparable, the driver refused a claim it can prepare: {e}") from None


def _in_use(api, node: str) -> set[str]:
    """The uids of the pods running on `node` and not being deleted: their claims stay prepared
    while a check calls prepare again (no unprepare races the call)."""
    found: Any = client.CoreV1Api(api).list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node},status.phase=Running")
    return {p.metadata.uid for p in found.items if p.metadata.deletion_timestamp is None}


@pytest.mark.requirement("KP-05")
def test_a_prepared_claim_prepared_again_gets_the_same_answer(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    # Every claim the kubelet holds as prepared by the driver for a running pod, on every node
    # (this check's own among them), asked for again, as a restarted kubelet would.
    _running_with_claim(api, dra_driver, namespace, "again")
    asked = 0
    problems: list[str] = []
    for node in sorted(n.name for n in lab.nodes):
        running = _in_use(api, node)
        held = [c for c in observe.prepared_claims(node_files, lab, node) if c.of(dra_driver.name) is not None and c.pod_uids & running]
        if not held:
            continue
        answer = probe_calls.call(lab, api, namespace, f"again-{node}", node, dra_driver.name, held)
        evidence.add(
            f"on {node}: the second NodePrepareResources of {len(held)} claim(s) and the kubelet's record of the first",
            {"second": answer, "first": {c.uid: [asdict(d) for d in c.of(dra_driver.name) or ()] for c in held}},
        )
        if answer.get("error"):
            raise ObservationFailed(f"dralab's probe on {node} could not call {dra_driver.name}: {answer['error']}")
        asked += len(held)
        problems += [f"on {node}: {p}" for p in probe_calls.prepare_problems(held, dra_driver.name, answer)]
    assert asked, f"no node's kubelet holds a claim of {dra_driver.name} prepared for a running pod, pod again's included"
    evidence.observe("prepared again", f"{asked} claim(s)")
    assert not problems, "NodePrepareResources is not idempotent, a prepared claim asked for again: " + "\n".join(problems)


@pytest.mark.requirement("KP-05")
def test_a_claim_whose_prepare_failed_is_unprepared(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    # The kubelet records a claim before it calls the driver and calls NodeUnprepareResources for
    # it once its pod is gone, prepared or not: the driver must answer it without an error.
    at = _node_pool(api, dra_driver)
    _unpreparable(api, dra_driver, namespace, "unprepared", at)
    evidence.observe("the driver's answer to prepare", _refused(api, namespace, "unprepared"))
    uid = _uid(api, namespace, "unprepared")
    wait_for(
        f"the kubelet on {at.node} to hold claim {namespace}/unprepared",
        lambda: any(c.uid == uid for c in observe.prepared_claims(node_files, lab, at.node)),
        UNPREPARE_TIMEOUT,
    )
    client.CoreV1Api(api).delete_namespaced_pod("unprepared", namespace)
    try:
        driver_must(
            f"the kubelet on {at.node} to unprepare claim {namespace}/unprepared once its pod is gone",
            lambda: all(c.uid != uid for c in observe.prepared_claims(node_files, lab, at.node)),
            UNPREPARE_TIMEOUT,
        )
    except DriverTimedOut:
        # Let the namespace go: the pod waits for an unprepare that will not succeed.
        client.CoreV1Api(api).delete_namespaced_pod("unprepared", namespace, grace_period_seconds=0)
        raise AssertionError(
            f"{UNPREPARE_TIMEOUT}s after its pod was deleted, the kubelet on {at.node} still holds claim "
            f"{namespace}/unprepared ({uid}), whose prepare had failed: the driver's "
            "NodeUnprepareResources did not succeed for a claim it had not prepared"
        ) from None


@pytest.mark.requirement("KP-05")
def test_a_claim_unprepared_already_is_unprepared_again_without_error(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    # The kubelet unprepares a claim once its last pod is gone; asked again (a kubelet that
    # restarted before its checkpoint recorded the first), the driver must succeed: dralab's probe
    # asks it again itself.
    node = _running_with_claim(api, dra_driver, namespace, "twice")
    uid = _uid(api, namespace, "twice")
    prepared = observe.node_state(node_files, lab, node).running_claim(uid, namespace, "twice", "twice")
    pods.delete(api, namespace, ["twice"], UNPREPARE_TIMEOUT)
    driver_must(
        f"the kubelet on {node} to unprepare claim {namespace}/twice once its pod is gone",
        lambda: all(c.uid != uid for c in observe.prepared_claims(node_files, lab, node)),
        UNPREPARE_TIMEOUT,
    )
    answer = probe_calls.call(lab, api, namespace, "unprepare-again", node, dra_driver.name, [prepared], method="unprepare")
    evidence.observe(f"on {node}: NodeUnprepareResources of claim {namespace}/twice again, once the kubelet had unprepared it", answer)
    if answer.get("error"):
        raise ObservationFailed(f"dralab's probe on {node} could not call {dra_driver.name}: {answer['error']}")
    problems = probe_calls.unprepare_problems([prepared], answer)
    assert not problems, f"on {node}: " + "\n".join(problems)


def _isolation_pod(api, driver: DriverUnderTest, namespace: str, node: str, devices: int) -> dict[str, list[tuple[str, str | None]]]:
    """Pod `isolation` on `node`: claim `pair` with requests r1 and r2, container main using r1 and
    container r2 using r2 (none of its requests where the profile declares that a claim serves one
    container), container none using nothing and, with room for a third device, claim `single` used
    by container single. Returns each container's (claim, request or None for all)."""
    claims.create(api, namespace, driver.claim("pair", requests=("r1", "r2")))
    builder = pods.PodBuilder("isolation").with_claim("pair", claim="pair", requests=("r1",))
    uses: dict[str, list[tuple[str, str | None]]] = {"main": [("pair", "r1")], "none": []}
    if not driver.profile.claims_serve_one_container:
        builder.with_container("r2", [{"name": "pair", "request": "r2"}])
        uses["r2"] = [("pair", "r2")]
    builder.with_container("none", [])
    if devices >= 3:
        claims.create(api, namespace, driver.claim("single"))
        builder.with_pod_claim("single", "single").with_container("single", [{"name": "single"}])
        uses["single"] = [("single", None)]
    builder.on_node(node).tolerations.append({"operator": "Exists"})
    pods.create(api, namespace, builder)
    try:
        pods.wait_phase(api, namespace, "isolation")
    except PrepareRefused as e:
        raise Blocked("KP-03", f"the driver did not prepare the claims this check needs: {e}") from None
    return uses


@pytest.mark.requirement("KP-04")
def test_each_container_gets_the_cdi_edits_of_what_it_uses_and_of_nothing_else(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    if dra_driver.profile.claim_config is not None:
        pytest.skip(
            f"driver profile {dra_driver.profile.name} has a claimConfig, which configures one device of a pod "
            "(say, its interface name), so dralab cannot give one pod the several claims this check needs"
        )
    room = max(observe.node_pools(observe.settled_slices(api, dra_driver.name)), key=lambda p: len(p.devices), default=None)
    if room is None or len(room.devices) < 2:
        pytest.skip(
            f"{dra_driver.name} publishes no node-local pool with two devices: a pod there cannot have "
            "devices for two requests to keep apart"
        )
    uses = _isolation_pod(api, dra_driver, namespace, room.node, len(room.devices))
    state = observe.node_state(node_files, lab, room.node)
    answered: dict[tuple[str, str], set[str]] = {}  # (claim, request) -> CDI device IDs
    for name in {claim for refs in uses.values() for claim, _ in refs}:
        prepared = state.running_claim(_uid(api, namespace, name), namespace, name, "isolation")
        for request, ids in isolation.ids_by_request(prepared, claims.read(api, namespace, name), dra_driver.name).items():
            answered[(name, request)] = ids
    evidence.observe(
        "CDI device IDs the driver answered, by claim and request (the allocation's)",
        {f"{c}/{r}": sorted(ids) for (c, r), ids in answered.items()},
    )
    specs = list(state.specs.values())
    problems, judged = [], 0
    for container, refs in uses.items():
        mine = {i for (c, r), ids in answered.items() for ref_c, ref_r in refs if c == ref_c and ref_r in (None, r) for i in ids}
        expected, _ = isolation.edits_of(specs, mine)
        _, foreign = isolation.edits_of(specs, set().union(*answered.values()) - mine)
        paths = sorted(expected.device_nodes | foreign.device_nodes)
        output = pods.observe(lab, namespace, "isolation", isolation.script(paths), container=container)
        seen = isolation.parse_seen(output or "", paths)
        judged += bool(expected or foreign)
        evidence.add(
            f"container {container} (uses {refs or 'no claim'})",
            {
                "expected": expected.listed(),
                "others' own": foreign.listed(),
                "seen": {"device nodes": sorted(seen.device_nodes), "env": sorted(seen.env)},
            },
        )
        problems += isolation.problems(container, seen, expected, foreign)
    if not judged:
        pytest.skip(
            f"the CDI devices {dra_driver.name} answered have no container edits: nothing of its reaches "
            "a container through CDI to keep apart"
        )
    assert not problems, "\n".join(problems)


def _claim_problems(
    lab: Lab, api, files: NodeFiles, driver: DriverUnderTest, node: str, namespace: str, name: str, evidence: Evidence, when: str
) -> list[str]:
    """KP-03's rule on claim `name` of running pod `name` as the node holds it `when`: its answer
    names its devices and every CDI device of it resolves on the node."""
    running = _in_use(api, node)  # before the checkpoint, as in KP-03's check
    state = observe.node_state(files, lab, node)
    try:
        prepared = state.running_claim(_uid(api, namespace, name), namespace, name, name)
    except ObservationFailed as e:
        raise type(e)(f"{when}, {e}") from None
    evidence.add(f"{when}: the kubelet's record of the driver's answer", [asdict(d) for d in prepared.of(driver.name) or ()])
    complete = bool(prepared.pod_uids & running)
    return contract.prepare_problems(prepared, observe.allocation_of(api, lab, prepared), driver.name, state.specs, complete)


@pytest.mark.requirement("KP-07")
@pytest.mark.parametrize("component", ["driver", *restarts.RESTARTS])
def test_a_claim_prepared_again_after_a_restart_resolves_its_cdi_devices(
    component: str,
    lab: Lab,
    api,
    node_files: NodeFiles,
    dra_driver: DriverUnderTest,
    namespace: str,
    evidence: Evidence,
    request: pytest.FixtureRequest,
) -> None:
    # Restarting the node's kubelet or containerd needs a lab dralab runs (host_access SKIPs otherwise).
    host: Lab = lab if component == "driver" else request.getfixturevalue("host_access")
    event = generated.RESTART_EVENTS[component]
    count = _devices_for(api, dra_driver)
    evidence.observe("this check's claim", f"claim {namespace}/restart: request dev for {count} device(s)")
    node = _running_with_claim(api, dra_driver, namespace, "restart", count=count)
    if problems := _claim_problems(host, api, node_files, dra_driver, node, namespace, "restart", evidence, f"before the {event}"):
        raise Blocked("KP-03", "\n".join(problems))
    if component == "driver":
        # The kubelet does not prepare the claim again: the specs the driver keeps must still
        # serve the containers that start later (a restarted container, a new pod of a shared claim).
        before = restarts.container_status(api, namespace, "restart", "main")
        dra_driver.restart_on(api, node)
        after = restarts.container_status(api, namespace, "restart", "main")
        assert after and after.ready and after.restart_count == before.restart_count, (
            f"container main of pod {namespace}/restart did not keep running across the driver restart: {after}"
        )
    else:
        try:
            restarts.prepare_again(host, api, component, namespace, "restart")
        except DriverTimedOut as e:
            raise restarts.why_not_started(api, namespace, "restart", event) or type(e)(
                f"{e}\nevents of restart:\n{pods.events(api, namespace, 'restart')}"
            ) from None
    problems = _claim_problems(host, api, node_files, dra_driver, node, namespace, "restart", evidence, f"after the {event}")
    assert not problems, "\n".join(f"after the {event}: {p}" for p in problems)


# How long a rolling update of the driver's DaemonSets may take on a lab node.
ROLLOUT_TIMEOUT = 180
ROLLED_AT = "dralab.dev/rolled-at"  # the pod template annotation a rollout changes, as `kubectl rollout restart` does


def _daemon_sets(api, driver: DriverUnderTest) -> list[Any]:  # listed objects: their metadata names are set
    return (
        client.AppsV1Api(api)
        .list_namespaced_daemon_set(driver.profile.namespace, label_selector=f"{PROFILE_LABEL}={driver.profile.name}")
        .items
    )


def _rolled_out(api, driver: DriverUnderTest) -> bool:
    def done(ds: Any) -> bool:  # a listed DaemonSet: its metadata.generation and status are set
        st = ds.status
        return (
            (st.observed_generation or 0) >= ds.metadata.generation
            and (st.updated_number_scheduled or 0) == st.desired_number_scheduled == (st.number_available or 0)
            and not st.number_unavailable
        )

    return all(done(ds) for ds in _daemon_sets(api, driver))


@pytest.mark.requirement("KP-08")
def test_a_rolling_update_loses_no_prepared_claim_and_fails_no_pod_start(
    lab: Lab, api, node_files: NodeFiles, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    sets = _daemon_sets(api, dra_driver)
    if not sets:
        pytest.skip(f"driver profile {dra_driver.profile.name} deploys no DaemonSet for dralab to roll out")
    node = _running_with_claim(api, dra_driver, namespace, "before")
    restarts_before = restarts.container_status(api, namespace, "before", "main").restart_count
    stamp = str(int(time.time()))
    for ds in sets:  # as `kubectl rollout restart` does, with each DaemonSet's own update strategy
        client.AppsV1Api(api).patch_namespaced_daemon_set(
            ds.metadata.name, ds.metadata.namespace, {"spec": {"template": {"metadata": {"annotations": {ROLLED_AT: stamp}}}}}
        )
    evidence.observe("rolled out", {ds.metadata.name: api.sanitize_for_serialization(ds.spec.update_strategy) for ds in sets})
    pods.create_with_claim(api, namespace, dra_driver.claim("during"), "during", node)
    driver_must(f"the rolling update of {dra_driver.profile.name}'s DaemonSets", lambda: _rolled_out(api, dra_driver), ROLLOUT_TIMEOUT)
    try:
        pods.wait_phase(api, namespace, "during", timeout=ROLLOUT_TIMEOUT)
    except DriverFailure as e:  # refused or not started in time; a lab too slow to judge by is no warning
        evidence.warn(f"a pod created on {node} as the driver's rolling update began did not start: {e}")
    after = restarts.container_status(api, namespace, "before", "main")
    if not (after and after.ready and after.restart_count == restarts_before):
        evidence.warn(
            f"container main of pod before, prepared on {node} before the rolling update, did not keep running across it: {after}"
        )
    for problem in _claim_problems(lab, api, node_files, dra_driver, node, namespace, "before", evidence, "after the rolling update"):
        evidence.warn(f"after the rolling update, the claim prepared before it: {problem}")


# How long a fault and its clearing may take to show, in the pod's status or the slices.
HEALTH_TIMEOUT = 60


@pytest.mark.requirement("KP-10")
def test_a_device_fault_reaches_the_pod_or_the_slice_and_clears(
    host_access: Lab, api, dra_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    dra_driver.requires(Capability.HEALTH)
    dra_driver.requires_hardware("this check faults an emulated GPU")
    node = _running_with_claim(api, dra_driver, namespace, "faulty")
    (result,) = claims.allocated(claims.read(api, namespace, "faulty"), dra_driver.name)
    pool, name = result["pool"], result["device"]
    device = health.published(api, dra_driver.name, pool, name)
    assert device is not None, f"device {pool}/{name}, allocated to claim faulty, is in none of {dra_driver.name}'s slices"
    gpu = emulated.named(emulated.identities(host_access, node, ("gpu",)), device)
    if gpu is None:
        pytest.skip(
            f"device {pool}/{name} publishes neither the UUID nor the PCI address of an emulated GPU of {node} "
            "(attributes uuid, resource.kubernetes.io/pciBusID), so dralab cannot tell which one to fault"
        )

    def now() -> health.Seen:
        return health.seen(api, dra_driver.name, namespace, "faulty", "c", pool, name)

    evidence.observe("before the fault", {"emulated GPU": gpu, **asdict(now())})
    hardware = HardwareLab(host_access.cfg.hardware_site())
    hardware.set_gpu_health(node, gpu, healthy=False)
    try:
        try:
            how = driver_must(
                f"the fault of {gpu} to reach pod faulty or the slice of {pool}/{name}", lambda: now().unhealthy(), HEALTH_TIMEOUT
            )
        except DriverTimedOut:
            raise AssertionError(
                f"{gpu} of {node}, device {pool}/{name} of claim faulty, faulted in the emulated hardware: "
                f"for {HEALTH_TIMEOUT}s the fault neither reached the status of pod faulty (its "
                f"allocatedResourcesStatus: {list(now().in_pod) or 'none'}) nor withdrew or tainted the "
                "device in the driver's slices"
            ) from None
        evidence.observe("with the fault", {"shown by": how, **asdict(now())})
    finally:
        hardware.set_gpu_health(node, gpu, healthy=True)
    stream = "allocatedResourcesStatus" in how
    try:
        driver_must(f"{pool}/{name} shown healthy again", lambda: now().healthy(stream), HEALTH_TIMEOUT)
    except DriverTimedOut:
        raise AssertionError(
            f"{HEALTH_TIMEOUT}s after the fault of {gpu} cleared, device {pool}/{name} is not shown healthy again: {asdict(now())}"
        ) from None


@pytest.fixture(scope="module")
def generated_run(generated_workloads: Callable[[DriverUnderTest], generated.Run], dra_driver: DriverUnderTest) -> generated.Run:
    """The driver's generated workloads (suites/conftest.py: drawn once a run, before the first
    check that asks for them, whichever suite it is in)."""
    return generated_workloads(dra_driver)


@pytest.mark.requirement("KP-03")
def test_generated_pods_with_claims_of_the_driver_start(generated_run: generated.Run, evidence: Evidence) -> None:
    """Every pod the generated workloads started ran (generated_run); the seed is in the evidence."""
    seeds = (
        f"seeds {generated_run.seed} to {generated_run.seed + generated_run.seeds - 1}"
        if generated_run.seeds > 1
        else f"seed {generated_run.seed}"
    )
    evidence.observe(
        "generated workloads",
        f"{seeds}, budget {generated_run.budget} shape(s), up to "
        f"{generated_run.capacity} device(s) a pod; second driver: "
        f"{generated_run.second_driver}",
    )
    evidence.add("shapes tried", generated_run.tried)
    if generated_run.skipped:
        pytest.skip(generated_run.skipped)
    if generated_run.failure and generated_run.failure.requirement == "KP-03":
        raise DriverFailure(str(generated_run.failure))


@pytest.mark.requirement("KP-07")
def test_generated_pods_run_again_after_the_restarts_drawn(generated_run: generated.Run, evidence: Evidence) -> None:
    """Every generated shape drawn with a restart (of the driver, or where dralab runs the nodes
    their kubelet, containerd or the node itself) ran again after it, its claims prepared again."""
    evidence.observe("restarts the generated pods ran again after", "; ".join(generated_run.restarted) or "none")
    if generated_run.skipped:
        pytest.skip(generated_run.skipped)
    failure = generated_run.failure
    if failure and failure.requirement == "KP-07":
        raise DriverFailure(str(failure))
    if not generated_run.restarted:
        if failure:
            raise Blocked("KP-03", f"no generated shape got as far as a restart: {failure}")
        pytest.skip(
            f"none of the {len(generated_run.tried)} generated shape(s) drew a restart; another --seed or a larger --budget draws some"
        )


def _recorded_calls(lab: Lab, driver: DriverUnderTest, run: generated.Run, evidence: Evidence) -> list[PluginCall]:
    """Every call between the kubelets and the driver the plugin recorder saw in this run so far,
    the prepares of every claim of the generated pods that started among them (the subject,
    before its properties)."""
    if lab.plugin_registries is None:
        pytest.skip(f"the {lab.provider.name} provider's nodes run no plugin recorder: no kubelet-plugin call is recorded")
    if run.skipped:
        pytest.skip(run.skipped)
    if not run.started:
        raise Blocked("KP-03", f"no generated pod started, so no prepared claim is there to judge: {run.failure}")
    calls = contract.calls_to(lab.plugin_calls(), driver.name)
    prepares = [c for c in calls if c.name == "NodePrepareResources"]
    evidence.observe(
        "calls recorded",
        f"{len(calls)} call(s) between the kubelets and {driver.name}, "
        f"{len(prepares)} NodePrepareResources; {len(run.started)} claim(s) of generated pods that started",
    )
    asked = contract.first_prepares(prepares)
    if unseen := [f"{name} ({uid})" for uid, name in run.started.items() if uid not in asked]:
        raise ObservationFailed(
            f"the plugin recorder has no NodePrepareResources of {len(unseen)} claim(s) whose pods "
            f"ran: {', '.join(unseen[:5])}; see the nodes' plugin-recorder logs under {lab.log_dir}"
        )
    return calls


def _judge_recorded_calls(
    problems_of: Callable[[list[PluginCall]], list[str]],
    what: str,
    verdict: str,
    lab: Lab,
    driver: DriverUnderTest,
    run: generated.Run,
    evidence: Evidence,
) -> None:
    """A rule over every recorded call of the run (the generated workloads' among them: each
    check asks for generated_run): its violations, each with the calls they name (by time)
    quoted from the trace."""
    calls = _recorded_calls(lab, driver, run, evidence)
    problems = problems_of(calls)
    evidence.add(f"the recorded calls {what}", [asdict(c) for c in calls if any(f"{c.start:%H:%M:%S.%f}" in p for p in problems)][:20])
    # The first violation on the first line: a report's headline.
    assert not problems, f"{verdict}: " + "\n".join(problems)


@pytest.mark.requirement("KP-03")
def test_every_prepare_call_of_the_run_answers_each_claim_it_was_given(
    generated_run: generated.Run, lab: Lab, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    _judge_recorded_calls(
        contract.unanswered_claims,
        "with a claim left unanswered",
        "NodePrepareResources left claims it was given unanswered",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


@pytest.mark.requirement("KP-05")
def test_every_claim_prepared_again_in_the_run_got_the_same_devices(
    generated_run: generated.Run, lab: Lab, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    _judge_recorded_calls(
        contract.changed_answers,
        "that answered a prepared claim differently",
        "NodePrepareResources is not idempotent over the run",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


@pytest.mark.requirement("KP-05")
def test_every_unprepare_call_of_the_run_succeeded_for_each_claim(
    generated_run: generated.Run, lab: Lab, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    def failed(calls: list[PluginCall]) -> list[str]:
        unprepares = [c for c in calls if c.name == "NodeUnprepareResources"]
        evidence.observe("unprepare calls recorded", f"{len(unprepares)} NodeUnprepareResources to {dra_driver.name}")
        if not unprepares:  # the generated pods were deleted: their claims were unprepared
            raise ObservationFailed(
                f"the plugin recorder has no NodeUnprepareResources; see the nodes' plugin-recorder logs under {lab.log_dir}"
            )
        return contract.failed_unprepares(calls)

    _judge_recorded_calls(
        failed,
        "that did not unprepare a claim",
        "NodeUnprepareResources did not succeed for claims over the run",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


def _claims_seen(lab: Lab, run: generated.Run, evidence: Evidence) -> dict[str, list[dict]]:
    """Every version of every claim the run saw allocated, from the claim log, by UID (each call
    is judged against the allocation of its time); the generated pods' claims among them (what
    the answers are judged against, seen before them)."""
    seen = lab.claim_history()
    evidence.observe("claims seen allocated", f"{len(seen)} claim(s) in the claim log")
    if unseen := [f"{name} ({uid})" for uid, name in run.started.items() if uid not in seen]:
        raise ObservationFailed(
            f"the claim log has no allocation of {len(unseen)} claim(s) whose pods ran: "
            f"{', '.join(unseen[:5])}; see {lab.log_dir}/{CLAIM_LOG}"
        )
    return seen


def _judge_against_allocations(
    rule: Callable[[list[PluginCall], dict[str, list[dict]], str], list[str]],
    what: str,
    verdict: str,
    lab: Lab,
    driver: DriverUnderTest,
    run: generated.Run,
    evidence: Evidence,
) -> None:
    """_judge_recorded_calls for a rule that also needs what each claim was allocated."""
    _judge_recorded_calls(
        lambda calls: rule(calls, _claims_seen(lab, run, evidence), driver.name), what, verdict, lab, driver, run, evidence
    )


@pytest.mark.requirement("KP-03")
def test_every_device_prepared_in_the_run_is_allocated_and_resolves(
    generated_run: generated.Run, lab: Lab, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    _judge_against_allocations(
        contract.wrong_devices,
        "that answered a device wrongly",
        "NodePrepareResources answered devices the claims do not have, left out some they have, answered some twice, "
        "or with CDI devices no spec defined",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


@pytest.mark.requirement("KP-04")
def test_every_device_prepared_in_the_run_goes_only_to_its_own_requests(
    generated_run: generated.Run, lab: Lab, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    _judge_against_allocations(
        contract.wrong_requests,
        "that gave a device to requests it is not allocated for",
        "NodePrepareResources answered devices for requests they are not allocated for",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


@pytest.mark.requirement("KP-06")
def test_no_claim_unprepared_in_the_run_left_its_cdi_spec(
    generated_run: generated.Run, lab: Lab, node_files: NodeFiles, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    def left(calls: list[PluginCall]) -> list[str]:
        # The run's last unprepares have no recorded call after them: the nodes' specs are read
        # once the grace since the last one is over, as one more snapshot.
        last = max((c.end for c in calls if c.name == "NodeUnprepareResources"), default=None)
        if last is not None:
            time.sleep(max(0.0, contract.SPEC_GRACE_SECONDS + 1 - (datetime.now(timezone.utc) - last).total_seconds()))
        at = datetime.now(timezone.utc)
        now = {node: contract.specs_now(cdi_specs.on_node(node_files, node)) for node in {c.node for c in calls}}
        return contract.left_specs(calls, now, at)

    _judge_recorded_calls(
        left,
        "whose claim's CDI spec outlived its unprepare",
        f"claims' own CDI specs stayed on the node more than {contract.SPEC_GRACE_SECONDS}s after they were unprepared",
        lab,
        dra_driver,
        generated_run,
        evidence,
    )


# How long the driver's slices may outlive it: the kubelet deletes a deregistered driver's slices
# itself after a grace period (30 s in v1.37), which counts as the driver's slices going.
SLICES_GONE_TIMEOUT = 90


def _driver_sockets(lab: Lab, files: NodeFiles, driver: DriverUnderTest) -> dict[str, list[str]]:
    """The sockets in each node's kubelet plugin dirs (and the driver registry under the plugin
    recorder) whose path names the driver."""
    found = {}
    for node in [n.name for n in lab.nodes]:
        root = lab.node(node).kubelet_root_dir
        dirs = {f"{root}/plugins_registry", lab.registration_dir(lab.node(node)), f"{root}/plugins"}
        found[node] = sorted(
            path for d in sorted(dirs) for path, entry in files.listing(node, d).items() if entry.kind == "socket" and driver.name in path
        )
    return found


# Last in the module: the driver is uninstalled, and deployed again by the next module that needs it.
@pytest.mark.requirement("KP-11")
def test_an_uninstalled_driver_leaves_no_slices_and_no_sockets(
    lab: Lab, api, node_files: NodeFiles, deploy_driver, dra_driver: DriverUnderTest, evidence: Evidence
) -> None:
    before = _driver_sockets(lab, node_files, dra_driver)
    evidence.observe("the driver's sockets while it runs", before)
    if not any(before.values()):
        pytest.skip(
            f"no socket in the kubelet's plugin dirs names {dra_driver.name} while it runs, so dralab cannot "
            "tell which are its own to see go"
        )
    with deploy_driver.uninstalled(dra_driver.profile):
        driver_must(
            f"the pods of {dra_driver.profile.name} to be gone",
            lambda: not any(dra_driver.pods_on(api, n.name) for n in lab.nodes),
            UNPREPARE_TIMEOUT,
        )
        left = {node: paths for node, paths in _driver_sockets(lab, node_files, dra_driver).items() if paths}
        if left:
            evidence.warn(f"once uninstalled, {dra_driver.name} left sockets in the kubelet's plugin dirs: {left}")
        try:
            driver_must(
                f"the ResourceSlices of {dra_driver.name} to go",
                lambda: not observe.driver_slices(api, dra_driver.name),
                SLICES_GONE_TIMEOUT,
            )
        except DriverTimedOut:
            names = [s["metadata"]["name"] for s in observe.driver_slices(api, dra_driver.name)]
            evidence.warn(f"{SLICES_GONE_TIMEOUT}s after {dra_driver.name} was uninstalled its ResourceSlices are still published: {names}")
