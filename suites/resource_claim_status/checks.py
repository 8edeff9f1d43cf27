"""The ST checks of a driver under test, each a function of an observed claim: the tests call
them, and the suite's self-check calls them against the broken variants and expects failures."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters import audit
from clusters.plugin_calls import PluginCall
from clusters.providers import Capability, Lab
from suites.framework.evidence import Evidence
from drivers_under_test.deploy import PROFILE_LABEL
from suites.framework import claims, identities, pods, slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.verdicts import Blocked, require
from suites.framework.waits import DriverTimedOut, WaitTimeout, driver_must, wait_for
from suites.kubelet_plugin import contract
from suites.resource_claim_status import network_data

READY_TIMEOUT = 30


@dataclass
class Observed:
    """A running pod `main` of namespace `namespace` using claim `claim` of the driver under test."""

    lab: Lab
    api: Any
    driver: DriverUnderTest
    namespace: str
    claim: str
    node: str

    def read(self) -> dict[str, Any]:
        return claims.read(self.api, self.namespace, self.claim)

    def own(self, claim: dict[str, Any]) -> set[tuple[str, str]]:
        return {(r["pool"], r["device"]) for r in claims.allocated(claim, self.driver.name)}


def start(lab: Lab, api, driver: DriverUnderTest, namespace: str, name: str, node: str | None = None, count: int = 1) -> Observed:
    claims.create(api, namespace, driver.claim(name, count))
    pod = pods.PodBuilder(name).with_claim("c", claim=name)
    if node:
        pod.on_node(node)
    pods.create(api, namespace, pod)
    running = pods.wait_phase(api, namespace, name)
    return Observed(lab, api, driver, namespace, name, running.spec.node_name)  # type: ignore[arg-type]  # Running: set


def _ready(entry: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in entry.get("conditions") or [])


def settled(o: Observed, ev: Evidence) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The claim and the driver's entries once each is Ready (or READY_TIMEOUT after the pod
    started, as they are then): the subject of ST-01 and ST-07, seen before it is judged."""

    def all_ready() -> dict[str, Any] | None:
        claim = o.read()
        entries = claims.device_status(claim, o.driver.name)
        return claim if entries and all(_ready(e) for e in entries) else None

    try:
        claim = driver_must(f"Ready entries of {o.driver.name} in status.devices", all_ready, READY_TIMEOUT)
    except DriverTimedOut:  # judged on what it wrote by then
        claim = o.read()
    assert claim is not None  # wait_for returns the first truthy answer
    entries = claims.device_status(claim, o.driver.name)
    ev.add("status.devices", claims.device_status(claim))
    ev.add("allocated to the driver", sorted(o.own(claim)))
    assert entries, (
        f"{o.driver.name} claims device-status but wrote no status.devices entry for its claim {READY_TIMEOUT} s after the pod started"
    )
    return claim, entries


def own_entries(o: Observed, ev: Evidence) -> None:  # ST-01
    claim, entries = settled(o, ev)
    written = {(e["pool"], e["device"]) for e in entries}
    assert written <= o.own(claim), f"entries for devices not allocated to {o.driver.name}: {sorted(written - o.own(claim))}"


def entries_ready(o: Observed, ev: Evidence) -> None:  # ST-07, a SHOULD
    _, entries = settled(o, ev)
    not_ready = [e["device"] for e in entries if not _ready(e)]
    # API reference, AllocatedDeviceStatus.conditions: the Ready condition "should" be True once configured.
    assert not not_ready, f"{READY_TIMEOUT} s after the pod started, no Ready=True condition on {not_ready}"


def devices_to_observe(api, driver: DriverUnderTest) -> int:
    """How many devices the claim the driver's status is observed on gets: two where a node has
    two free, so that a driver reporting only some of its devices is seen doing so (ST-01 allows
    it); one where none has, or where the profile's claim config configures one device (a
    network driver's: one interface, which two devices cannot share). SKIP when no node has one."""
    room = slices.require_room(api, driver.name, 1, "the driver's ST checks (a claim it prepares)")
    return 2 if driver.profile.claim_config is None and room.most_free >= 2 else 1


def _node_with_a_free_device(lab: Lab, api, driver: DriverUnderTest) -> str:
    """A node with a kubelet and a free device of the driver (in the lab's order); SKIP if none."""
    what = "ST-01 before prepare (a claim allocated to a node whose kubelet is stopped)"
    room = slices.require_room(api, driver.name, 1, what)
    nodes = room.nodes_with(1, [n.name for n in lab.nodes])
    require(nodes, f"no node with a kubelet has a free device of {driver.name} ({room.describe()}); {what} needs one", slices.MORE_DEVICES)
    return nodes[0]


def nothing_before_prepare(
    lab: Lab, api, driver: DriverUnderTest, namespace: str, ev: Evidence, window: float = 8
) -> None:  # ST-01, labs dralab started
    """With the node's kubelet stopped, an allocated claim is not prepared: no entry may appear.
    Once the kubelet is back, the driver prepares it and reports Ready."""
    node = lab.node(_node_with_a_free_device(lab, api, driver))
    node.stop_kubelet()
    try:
        claims.create(api, namespace, driver.claim("unprepared"))
        pods.create(api, namespace, pods.PodBuilder("unprepared").with_claim("c", claim="unprepared").on_node(node.name))
        wait_for(
            "claim unprepared allocated", lambda: claims.read_when(api, namespace, "unprepared", lambda c: bool(claims.allocated(c))), 60
        )
        try:
            early = wait_for(
                f"an entry of {driver.name} before any prepare",
                lambda: claims.device_status(claims.read(api, namespace, "unprepared"), driver.name),
                window,
            )
        except WaitTimeout:
            early = []
        ev.add(f"status.devices within {window:.0f} s of allocation, kubelet of {node.name} stopped", early)
        assert not early, (
            f"{driver.name} reported status for a claim no kubelet has prepared (allocated to "
            f"{node.name}, whose kubelet is stopped): {early}"
        )
    finally:
        node.start_kubelet()
        node.wait_kubelet()


def entries_before_prepare(versions: list[dict[str, Any]], calls: list[PluginCall], driver: str) -> list[str]:
    """ST-01 over a run's trace: every version of every claim the claim log saw (`versions`) that
    shows an entry of `driver` in status.devices must have been seen after the kubelet first asked
    the driver to prepare that claim (`calls`, as the plugin recorder saw them arrive; a version
    is logged after it was written). One violation per claim: its first such version."""
    asked = {uid: c.start for uid, c in contract.first_prepares(contract.calls_to(calls, driver)).items()}
    problems: list[str] = []
    judged: set[str] = set()
    for v in versions:
        entries = [e for e in (v.get("status") or {}).get("devices") or [] if e.get("driver") == driver]
        if not entries or v["uid"] in judged:
            continue
        judged.add(v["uid"])
        seen, first = datetime.fromisoformat(v["start"]), asked.get(v["uid"])
        if first is None or seen < first:
            when = (
                f"the first NodePrepareResources of it at {first:%H:%M:%S.%f}"
                if first
                else "any NodePrepareResources of it (none recorded)"
            )
            problems.append(
                f"{seen:%H:%M:%S.%f} claim {v['namespace']}/{v['name']} ({v['uid']}): entries of {driver} "
                f"for {sorted(e['device'] for e in entries)} in status.devices before {when}"
            )
    return problems


REFUSED_FOR = re.compile(r'"([^"]+)" is forbidden')  # the API server naming the driver an entry was refused for


def refused_for_another(said: str, driver: DriverUnderTest) -> tuple[str, str] | None:
    """The other driver and the line of the API server's refusal of a write of `driver` (by a
    service account of its namespace) that changed that driver's entries, in what was said (the
    kubelet's event, the driver's log): since 1.36 it authorizes each entry for its driver's name
    (resourceclaims/driver), so a driver without rights to another's cannot drop its entries (ST-08)."""
    account = f"system:serviceaccount:{driver.profile.namespace}:"
    for line in said.splitlines():
        other = next((name for name in REFUSED_FOR.findall(line) if name != driver.name), None)
        if other and account in line:
            return other, line.strip()
    return None


def refused_by_the_cluster(lab: Lab, driver: DriverUnderTest) -> list[audit.StatusWrite]:
    """The driver's status writes of this run that the API server refused for a status field the
    write did not send (the audit log of a local lab; none known elsewhere): ST-09's finding, the
    cluster's fault, not the driver's."""
    if Capability.AUDIT_LOG not in lab.capabilities:
        return []
    account = f"system:serviceaccount:{driver.profile.namespace}:"
    since = lab.taken.strftime("%Y-%m-%dT%H:%M:%S")
    writes = audit.status_writes(lab.audit_log("ST-09's finding"))
    return [w for w in writes if w.user.startswith(account) and w.time >= since and w.refused_for_unsent()]


def blocked_by_the_cluster(lab: Lab, driver: DriverUnderTest) -> Blocked | None:
    """BLOCKED by ST-09 for a driver ST check that failed where the cluster refused the driver's
    status writes for fields they did not send; None when it refused none."""
    refused = refused_by_the_cluster(lab, driver)
    if not refused:
        return None
    claims_named = sorted({f"{w.namespace}/{w.claim}" for w in refused})
    first = refused[0]
    log = lab.audit_log("naming the audit log")
    return Blocked(
        "ST-09",
        f"the API server refused {len(refused)} status write(s) of {driver.name} ({first.user}) to "
        f"{len(claims_named)} claim(s) ({', '.join(claims_named[:3])}) for "
        f"status.{' and status.'.join(first.refused_for_unsent())}, which the write did not send: "
        f"{first.message!r} ({first.time}, {first.verb} of {first.namespace}/{first.claim}; "
        f"the API server's audit log {log}). The cluster's fault (ST-09), so no verdict "
        "on the driver's status",
    )


def fail_if_refused(said: str, driver: DriverUnderTest, claim: str, how: str, more: str = "") -> None:
    """ST-08's FAIL when `said` holds the API server's refusal of a write of `driver` to `claim`
    (as named in the message) without another driver's entries; `how`: where it was seen."""
    if refused := refused_for_another(said, driver):
        raise AssertionError(
            f"{driver.name} wrote {claim} status.devices without the entries {refused[0]} owns; the API "
            f"server refused it {how}: {refused[1]}{more}"
        ) from None  # the caller's exception is in `said`


def others_dropped(before: dict[str, Any], after: dict[str, Any], driver: str) -> dict[str, list[str]]:
    """By driver, the entries of drivers other than `driver` that claim version `before` has and
    the next one, `after`, lacks though their devices are still allocated in it (ST-08): dropped
    by a write, not by the claim's deallocation."""
    allocated = {(r["driver"], r["pool"], r["device"]) for r in claims.allocated(after)}
    kept = {(e["driver"], e["pool"], e["device"]) for e in claims.device_status(after)}
    dropped: dict[str, list[str]] = {}
    for e in claims.device_status(before):
        key = (e["driver"], e["pool"], e["device"])
        if e["driver"] != driver and key in allocated and key not in kept:
            dropped.setdefault(e["driver"], []).append(f"{e['pool']}/{e['device']}")
    return dropped


def others_dropped_over_the_run(versions: list[dict[str, Any]], driver: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    """ST-08 over a run's claim log (`versions`, in the order seen): how many writes changed
    `driver`'s entries of a claim already holding another driver's (the subject), the claim
    versions of those that dropped another driver's entries (whose devices stayed allocated),
    and what each dropped. A write is one MODIFIED event that keeps the allocation (allocating or
    deallocating is not the driver's); a claim listed anew after a lost watch may span several
    writes, so it is not judged."""
    judged, violating, problems = 0, [], []
    last: dict[str, dict[str, Any]] = {}
    for after in versions:
        before, last[after["uid"]] = last.get(after["uid"]), after
        if (
            before is None
            or after.get("event") != "MODIFIED"
            or not claims.allocated(after)
            or claims.allocated(before) != claims.allocated(after)
            or claims.device_status(before, driver) == claims.device_status(after, driver)
            or all(e["driver"] == driver for e in claims.device_status(before))
        ):
            continue
        judged += 1
        if dropped := others_dropped(before, after, driver):
            violating += [before, after]
            problems += [
                f"{after['start']} claim {after['namespace']}/{after['name']} ({after['uid']}): resourceVersion "
                f"{after['resourceVersion']}, a write of {driver}'s entries, removed the entries {other} owns: "
                f"{devices}, still allocated"
                for other, devices in dropped.items()
            ]
    return judged, violating, problems


def not_ready_over_the_run(versions: list[dict[str, Any]], pod_versions: list[dict[str, Any]], driver: str) -> tuple[int, list[str]]:
    """ST-07 over a run's claim and pod logs: how many entries of `driver` the claims a pod of the
    run ran with (Running: their devices configured) carried (the subject), and each of them that
    never showed a Ready=True condition in any version of its claim."""
    ran = {
        (p["namespace"], name)
        for p in pod_versions
        if (p.get("status") or {}).get("phase") == "Running"
        for name in [
            *(c.get("resourceClaimName") for c in (p.get("spec") or {}).get("resourceClaims") or []),
            *(c.get("resourceClaimName") for c in p["status"].get("resourceClaimStatuses") or []),
        ]
        if name
    }
    ready: dict[tuple[str, str, str], bool] = {}  # (claim, its UID named), pool, device
    for v in versions:
        if (v["namespace"], v["name"]) in ran:
            for e in claims.device_status(v, driver):
                key = (f"{v['namespace']}/{v['name']} ({v['uid']})", e["pool"], e["device"])
                ready[key] = ready.get(key, False) or _ready(e)
    return len(ready), [
        f"claim {claim}: the entry of {driver} for {pool}/{device} never carried a Ready=True condition, though a pod ran with the claim"
        for (claim, pool, device), r in ready.items()
        if not r
    ]


def network_data_over_the_run(versions: list[dict[str, Any]], records: list[dict[str, Any]], driver: str) -> tuple[int, list[str]]:
    """ST-02 over a run's claim log and its generated pods' container records: the networkData of
    each device of `driver` in a claim a recorded pod used describes the interface some pod of
    the claim has (a VF is in one pod's network namespace, whoever shares its claim). Each pod is
    judged on the entry as the claim stood when its container printed its interfaces or, for a
    driver that writes it later, on its first version with networkData after that (a restart
    later in the run may give the pod other interfaces); a device with networkData in no
    version is not judged (a generated pod may be gone before a driver that reports later
    writes it; the fixed scenario waits for it). The devices judged and the problems."""
    by_uid: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        by_uid.setdefault(v["uid"], []).append(v)
    judged, problems = 0, []
    for uid, seen in network_data.pods_of_claims(records).items():
        history = by_uid.get(uid) or []
        # The last allocation the claim had: deallocated or deleted, its last versions have none.
        last = [v for v in history if claims.allocated(v, driver)][-1:]
        allocated = {(r["pool"], r["device"]) for v in last for r in claims.allocated(v, driver)}
        for pool, device in sorted(allocated):
            why = {
                pod: w
                for pod, (when, interfaces) in sorted(seen.items())
                if (w := _network_data_problem(history, when, driver, pool, device, interfaces)) != NOT_REPORTED
            }
            judged += bool(why)
            if why and all(why.values()):
                claim = f"{last[0]['namespace']}/{last[0]['name']} ({uid})"
                problems.append(
                    f"claim {claim}, device {pool}/{device} of {driver}: " + "; ".join(f"pod {pod}: {w}" for pod, w in why.items())
                )
    return judged, problems


NOT_REPORTED = "no networkData when its container started, nor after"


def _network_data_problem(
    history: list[dict[str, Any]], when: str, driver: str, pool: str, device: str, interfaces: list[dict[str, Any]]
) -> str | None:
    """Why the entry of `device` in a claim's `history`, as it stood at `when` (or first reported
    networkData after), does not describe `interfaces`: NOT_REPORTED if it has none; None if it
    describes them."""

    def reported(v: dict[str, Any]) -> dict[str, Any] | None:
        entry = next((e for e in claims.device_status(v, driver) if (e["pool"], e["device"]) == (pool, device)), None)
        return (entry or {}).get("networkData") if network_data.reported((entry or {}).get("networkData")) else None

    at = datetime.fromisoformat(when)
    before = [v for v in history if datetime.fromisoformat(v["start"]) <= at][-1:]
    after = (reported(v) for v in history if datetime.fromisoformat(v["start"]) > at)
    nd = next((nd for nd in [*map(reported, before), *after] if nd), None)
    return NOT_REPORTED if nd is None else network_data.not_described(nd, interfaces)


def network_data_matches_the_pod(o: Observed, ev: Evidence) -> None:  # ST-02
    def with_network() -> list[dict[str, Any]]:
        entries = claims.device_status(o.read(), o.driver.name)
        return entries if entries and all(network_data.reported(e.get("networkData")) for e in entries) else []

    try:
        entries = driver_must(f"networkData in every entry of {o.driver.name}", with_network, READY_TIMEOUT)
    except DriverTimedOut:  # judged on what it wrote by then
        entries = claims.device_status(o.read(), o.driver.name)
    ev.add("status.devices", entries)
    assert entries, f"{o.driver.name} claims network-data but wrote no status.devices entry {READY_TIMEOUT} s after the pod started"
    for e in entries:
        network_data.matches_the_pod(
            e["device"], e.get("networkData"), lambda script: pods.observe(o.lab, o.namespace, o.claim, script), ev
        )


def other_nodes_driver_refused(o: Observed, ev: Evidence) -> None:  # ST-04, the driver's own identity
    """The driver's service account, with the token of its pod on another node, may not write
    this claim's entries of the driver."""
    core = client.CoreV1Api(o.api)
    others: list[Any] = [  # the driver's pods (their Optional metadata set), then status entries
        p
        for p in core.list_namespaced_pod(o.driver.profile.namespace, label_selector=f"{PROFILE_LABEL}={o.driver.profile.name}").items
        if p.spec.node_name != o.node
    ]
    require(
        others,
        f"no pod of {o.driver.profile.name} on a node other than {o.node}, whose token could try the write",
        "run the driver on at least two nodes",
    )
    pod = others[0]
    as_driver = identities.acting_as(o.lab.kubeconfig, identities.token(o.api, pod.metadata.namespace, pod.spec.service_account_name, pod))
    ev.add("identity", identities.who_am_i(as_driver))
    claim = o.read()
    own = sorted(o.own(claim))
    entry = {"driver": o.driver.name, "pool": own[0][0], "device": own[0][1], "data": {"probe": uuid.uuid4().hex}}
    try:
        others = [e for e in claims.device_status(claim) if (e["driver"], e["pool"], e["device"]) != (o.driver.name, *own[0])]
        claims.write_status(as_driver, claim, [*others, entry])
        answer = "allowed"
    except ApiException as e:
        if (why := claims.refusal(e)) is None:
            raise
        answer = f"denied: {why}"
    ev.add(f"write by {pod.spec.service_account_name} bound to {pod.metadata.name} on {pod.spec.node_name}", answer)
    assert answer.startswith("denied"), (
        f"the driver's service account on {pod.spec.node_name} may write status "
        f"of a claim allocated on {o.node}: it holds more than associated-node:"
    )


def _may(api, user: str, groups: list[str], verb: str, driver: str) -> bool:
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        {  # type: ignore[arg-type]  # a dict: validate_call builds the model
            "spec": {
                "user": user,
                "groups": groups,
                "resourceAttributes": {
                    "group": "resource.k8s.io",
                    "resource": "resourceclaims",
                    "subresource": "driver",
                    "name": driver,
                    "verb": verb,
                    "namespace": "any-namespace",
                },
            }
        }
    )
    return review.status.allowed


def broader_than_associated_node(api, driver: DriverUnderTest, ev: Evidence) -> list[str]:  # ST-06
    """What the driver's per-node components may do on resourceclaims/driver, as the API server
    answers SubjectAccessReviews; one message per component that holds arbitrary-node: verbs."""
    daemonsets = client.AppsV1Api(api).list_namespaced_daemon_set(driver.profile.namespace).items
    require(
        daemonsets,
        f"driver profile {driver.profile.name} runs no DaemonSet: no per-node component to review",
        "deploy the driver's kubelet plugin as a DaemonSet",
    )
    found = {}
    for ds in daemonsets:
        sa, ns = ds.spec.template.spec.service_account_name or "default", ds.metadata.namespace
        user, groups = f"system:serviceaccount:{ns}:{sa}", ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        found[user] = {
            verb: _may(api, user, groups, verb, driver.name)
            for verb in ("associated-node:update", "associated-node:patch", "arbitrary-node:update", "arbitrary-node:patch")
        }
    ev.add("SubjectAccessReview answers on resourceclaims/driver", found)
    messages = []
    for user, verbs in found.items():
        assert verbs["associated-node:update"] or verbs["associated-node:patch"], (
            f"{user} runs per node and may not write its driver's status at all (no associated-node: verb)"
        )
        broad = [v for v, allowed in verbs.items() if allowed and v.startswith("arbitrary-node:")]
        if broad:
            messages.append(
                f"{user} runs per node yet holds {broad} on resourceclaims/driver {driver.name}: "
                "associated-node: is enough and keeps a node from writing other nodes' claims"
            )
    return messages
