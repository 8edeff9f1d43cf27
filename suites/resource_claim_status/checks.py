"""The ST checks of a driver under test, each a function of an observed claim: the tests call
them, and the suite's self-check calls them against the broken variants and expects failures."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
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
    # The driver's devices in its slices before the pod started: a driver may stop publishing
    # the MAC of a netdev it moved into the pod, the identity ST-02 finds its interface by.
    published: slices.Published

    def read(self) -> dict[str, Any]:
        return claims.read(self.api, self.namespace, self.claim)

    def own(self, claim: dict[str, Any]) -> set[tuple[str, str]]:
        return {(r["pool"], r["device"]) for r in claims.allocated(claim, self.driver.name)}


# The requests of the observed claim, one device each: the profile's claim config, if any, goes
# to the first (it configures one device: a network driver's interface name, say).
REQUESTS = ("dev", "more")


def start(lab: Lab, api, driver: DriverUnderTest, namespace: str, name: str, node: str | None = None, count: int = 1) -> Observed:
    """Claim `name` with `count` of REQUESTS, used by pod `name` (on `node` if given), running."""
    claims.create(api, namespace, driver.claim(name, requests=REQUESTS[:count]))
    published = slices.attributes(api, driver.name)
    pod = pods.PodBuilder(name).with_claim("c", claim=name)
    if node:
        pod.on_node(node)
    pods.create(api, namespace, pod)
    running = pods.wait_phase(api, namespace, name)
    return Observed(lab, api, driver, namespace, name, running.spec.node_name, published)  # type: ignore[arg-type]  # Running: set


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
    it) and one reporting a device's networkData for another is seen (ST-02); one where none
    has. SKIP when no node has one."""
    room = slices.require_room(api, driver.name, 1, "the driver's ST checks (a claim it prepares)")
    return min(len(REQUESTS), room.most_free)


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


DeviceKey = tuple[str, str, str | None]  # pool, device, shareID (KEP-5075: one of a device's shares)


def _device(d: dict[str, Any]) -> DeviceKey:
    """The device of a status entry or an allocation result, as the API server matches them."""
    return d["pool"], d["device"], d.get("shareID")


def _named(devices: set[DeviceKey]) -> list[str]:
    return sorted(f"{pool}/{device}" + (f" (share {share})" if share else "") for pool, device, share in devices)


def _when(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def _body(write: audit.StatusWrite) -> dict[str, Any]:
    """What a write sent, as an object ({} for a JSON patch, a list of operations)."""
    return write.body if isinstance(write.body, dict) else {}


def _claim_written(write: audit.StatusWrite, by_uid: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The logged versions of the claim `write` was sent for: by the UID its body names (an
    update's), else the claim of that namespace and name created last before the write (an
    apply names none); none if the claim log did not see it."""
    if uid := (_body(write).get("metadata") or {}).get("uid"):
        return by_uid.get(uid, [])
    at = _when(write.time)
    named = [
        seen
        for seen in by_uid.values()
        if (seen[0]["namespace"], seen[0]["name"]) == (write.namespace, write.claim) and seen[0].get("created")
        if _when(seen[0]["created"]) <= at
    ]
    return max(named, key=lambda seen: _when(seen[0]["created"]), default=[])


def _entries_sent(write: audit.StatusWrite, driver: str) -> list[dict[str, Any]]:
    """The entries of `driver` a status write sent (an update's every entry, an apply's or a
    merge patch's those it sets; a JSON patch, a list of operations, names none)."""
    return [e for e in (_body(write).get("status") or {}).get("devices") or [] if e.get("driver") == driver]


@dataclass
class OwnEntries:
    """ST-01 over a run: the entries judged in the claim log and in the driver's status writes,
    and what each entry outside its claim's allocation was."""

    in_versions: int
    in_writes: int
    problems: list[str]


def entries_outside_allocation(versions: list[dict[str, Any]], writes: list[audit.StatusWrite], driver: str) -> OwnEntries:
    """ST-01 over a run: every entry of `driver` in every claim version of the claim log
    (`versions`) must be for a device that version allocates to `driver`, and every entry of
    `driver` that the driver's status writes sent (`writes`, the audit log's, refused ones too)
    for a device some logged version of the claim written allocated to it (any of them: a write
    racing the claim's deallocation is not stale). The API server refuses an entry of a device
    the claim does not allocate (ST-03), so a claim version shows one only where it does not:
    the refused write shows what the driver sent. A write of a claim whose allocation the claim
    log did not see is not judged. A claim version's problem is named once a claim and device; a
    write's, once a write and device."""
    by_uid: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        by_uid.setdefault(v["uid"], []).append(v)
    found = OwnEntries(0, 0, [])
    seen: set[tuple[str, DeviceKey]] = set()
    for v in versions:
        own = {_device(r) for r in claims.allocated(v, driver)}
        for e in claims.device_status(v, driver):
            if (v["uid"], _device(e)) in seen:
                continue
            seen.add((v["uid"], _device(e)))
            found.in_versions += 1
            if _device(e) not in own:
                found.problems.append(
                    f"{v['start']} claim {v['namespace']}/{v['name']} ({v['uid']}), resourceVersion {v['resourceVersion']}: "
                    f"an entry of {driver} for {_named({_device(e)})[0]}, which the claim's allocation does not give it "
                    f"(its devices of {driver} in the allocation: {_named(own)})"
                )
    for w in writes:
        history = _claim_written(w, by_uid)
        if not any(claims.allocated(v) for v in history):  # its allocation not logged: nothing to judge by
            continue
        own = {_device(r) for v in history for r in claims.allocated(v, driver)}
        for e in _entries_sent(w, driver):
            found.in_writes += 1
            if _device(e) not in own:
                answer = f"refused: {w.message}" if w.refused else "accepted"
                found.problems.append(
                    f"{w.time} claim {w.namespace}/{w.claim} ({history[0]['uid']}): a status {w.verb} by {w.user} ({answer}) "
                    f"sent an entry of {driver} for {_named({_device(e)})[0]}, which the claim's allocation does not give it "
                    f"(its devices of {driver} in the allocations the claim log saw: {_named(own)})"
                )
    return found


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


def status_writes_of(lab: Lab, driver: DriverUnderTest, what_for: str) -> list[audit.StatusWrite] | None:
    """The claim status writes the driver's service accounts sent in this run, accepted or
    refused (the audit log of a local lab); None where the lab keeps no audit log."""
    if Capability.AUDIT_LOG not in lab.capabilities:
        return None
    account = f"system:serviceaccount:{driver.profile.namespace}:"
    since = lab.taken.strftime("%Y-%m-%dT%H:%M:%S")
    return [w for w in audit.status_writes(lab.audit_log(what_for)) if w.user.startswith(account) and w.time >= since]


def refused_by_the_cluster(lab: Lab, driver: DriverUnderTest) -> list[audit.StatusWrite]:
    """The driver's status writes of this run that the API server refused for a status field the
    write did not send (the audit log of a local lab; none known elsewhere): ST-09's finding, the
    cluster's fault, not the driver's."""
    return [w for w in status_writes_of(lab, driver, "ST-09's finding") or [] if w.refused_for_unsent()]


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
            f"{driver.name} wrote {claim} status.devices without the entries {refused[0]} owns as they were "
            f"(removed or changed); the API server refused it {how}: {refused[1]}{more}"
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


# What names a status entry (its driver's device, or one share of it); the rest are its fields.
IDENTITY = ("driver", "pool", "device", "shareID")


def _identity(e: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(e.get(k) for k in IDENTITY)


def _value(v: Any) -> str:
    return "absent" if v is None else json.dumps(v, sort_keys=True)


def others_changed(before: dict[str, Any], after: dict[str, Any], driver: str) -> dict[str, list[str]]:
    """By driver, each field (conditions, data, networkData: each but the entry's identity) of
    each entry of a driver other than `driver` that claim version `before` has and the next one,
    `after`, has too with another value, as `pool/device field: before -> after` (ST-08: a write
    of `driver`'s entries keeps the others' as they were)."""
    kept = {_identity(e): e for e in claims.device_status(after)}
    changed: dict[str, list[str]] = {}
    for e in claims.device_status(before):
        now = kept.get(_identity(e))
        if e["driver"] == driver or now is None:
            continue
        for name in sorted((e.keys() | now.keys()) - set(IDENTITY)):
            if e.get(name) != now.get(name):
                changed.setdefault(e["driver"], []).append(
                    f"{e['pool']}/{e['device']} {name}: {_value(e.get(name))} -> {_value(now.get(name))}"
                )
    return changed


def write_of(before: dict[str, Any], after: dict[str, Any], driver: str) -> bool:
    """Whether claim version `after`, next to `before`, is a write of `driver`'s: it kept the
    allocation (allocating or deallocating is not the driver's) and added or changed an entry of
    the driver, which no other writer does. A version that only removed the driver's entries is
    not told apart from another's write that dropped them, so it is not judged."""
    had = claims.device_status(before, driver)
    return (
        bool(claims.allocated(after))
        and claims.allocated(before) == claims.allocated(after)
        and any(e not in had for e in claims.device_status(after, driver))
    )


def others_not_kept(before: dict[str, Any], after: dict[str, Any], driver: str) -> list[str]:
    """What a write of `driver` (before -> after) did to other drivers' entries still allocated:
    each driver's removed entries, and each field it changed of the entries it kept."""
    dropped, changed = others_dropped(before, after, driver), others_changed(before, after, driver)
    return [
        *(f"removed the entries {other} owns: {devices}, still allocated" for other, devices in dropped.items()),
        *(f"changed the entries {other} owns: {'; '.join(fields)}" for other, fields in changed.items()),
    ]


def others_not_kept_over_the_run(versions: list[dict[str, Any]], driver: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    """ST-08 over a run's claim log (`versions`, in the order seen): how many writes changed
    `driver`'s entries of a claim already holding another driver's (the subject), the claim
    versions of those that removed another driver's entries (whose devices stayed allocated) or
    changed a field of one, and what each did. A write is one MODIFIED event (write_of); a claim
    listed anew after a lost watch may span several writes, so it is not judged."""
    judged, violating, problems = 0, [], []
    last: dict[str, dict[str, Any]] = {}
    for after in versions:
        before, last[after["uid"]] = last.get(after["uid"]), after
        if (
            before is None
            or after.get("event") != "MODIFIED"
            or not write_of(before, after, driver)
            or all(e["driver"] == driver for e in claims.device_status(before))
        ):
            continue
        judged += 1
        if found := others_not_kept(before, after, driver):
            violating += [before, after]
            problems += [
                f"{after['start']} claim {after['namespace']}/{after['name']} ({after['uid']}): resourceVersion "
                f"{after['resourceVersion']}, a write of {driver}'s entries, {what}"
                for what in found
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


@dataclass
class NetworkDataOverTheRun:
    """ST-02 over a run: how many devices were judged, their FAILs and WARNINGs."""

    judged: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def network_data_over_the_run(
    versions: list[dict[str, Any]], records: list[dict[str, Any]], driver: str, published: slices.Published
) -> NetworkDataOverTheRun:
    """ST-02 over a run's claim log and its generated pods' container records: the networkData of
    each device of `driver` in the last allocation of a claim a recorded pod used describes the
    device's own interface (network_data.in_pods; its MAC in the slices, `published`). Each pod is
    judged on the entry as the claim stood when its container printed its interfaces or, for a
    driver that writes it later, on its first version with networkData after that (a restart
    later in the run may give the pod other interfaces). A device with networkData in no version
    FAILs once its claim stayed allocated READY_TIMEOUT after the first of its pods printed (the
    fixed check's time); a claim gone sooner is not judged on it."""
    by_uid: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        by_uid.setdefault(v["uid"], []).append(v)
    out = NetworkDataOverTheRun()
    if not versions:
        return out
    logged_until = max(datetime.fromisoformat(v["start"]) for v in versions)
    for uid, seen in network_data.pods_of_claims(records).items():
        history = by_uid.get(uid) or []
        # The last allocation the claim had: deallocated or deleted, its last versions have none.
        last = [v for v in history if claims.allocated(v, driver)][-1:]
        if not last:
            continue
        claim = f"claim {last[0]['namespace']}/{last[0]['name']} ({uid})"
        allocated = sorted({(r["pool"], r["device"]) for r in claims.allocated(last[0], driver)})
        pods: dict[str, tuple[list[network_data.Device], network_data.Interfaces]] = {}
        for pod, (when, interfaces) in sorted(seen.items()):
            devices = [network_data.device(p, d, [published], _network_data_as_of(history, when, driver, p, d)) for p, d in allocated]
            pods[pod] = ([d for d in devices if d.network_data], interfaces)
        for name, judged in network_data.in_pods(pods, [network_data.device(p, d, [published]) for p, d in allocated]).items():
            out.judged += 1
            out.problems += [f"{claim}, device {name} of {driver}: {'; '.join(judged.wrong)}"] if judged.wrong else []
            out.warnings += [f"{claim}, device {name} of {driver}: {w}" for w in judged.left_out]
        first_pod, (when, _) = min(seen.items(), key=lambda pod: datetime.fromisoformat(pod[1][0]))
        first = datetime.fromisoformat(when)
        for pool, device in allocated:
            if any(d.name == f"{pool}/{device}" for devices, _ in pods.values() for d in devices):
                continue
            held = _allocated_until(history, driver, pool, device, first, logged_until)
            if held >= READY_TIMEOUT:
                out.judged += 1
                out.problems.append(
                    f"{claim}, device {pool}/{device} of {driver}: no networkData in status.devices, though the claim stayed "
                    f"allocated {held:.0f} s after pod {first_pod} printed its interfaces ({first:%H:%M:%S})"
                )
    return out


def _network_data_as_of(history: list[dict[str, Any]], when: str, driver: str, pool: str, device: str) -> dict[str, Any] | None:
    """The networkData of `device`'s entry in a claim's `history` as the claim stood at `when`,
    else in its first later version with networkData; None if it has none then or after."""

    def reported(v: dict[str, Any]) -> dict[str, Any] | None:
        entry = next((e for e in claims.device_status(v, driver) if (e["pool"], e["device"]) == (pool, device)), None)
        return (entry or {}).get("networkData") if network_data.reported((entry or {}).get("networkData")) else None

    at = datetime.fromisoformat(when)
    before = [v for v in history if datetime.fromisoformat(v["start"]) <= at][-1:]
    after = (reported(v) for v in history if datetime.fromisoformat(v["start"]) > at)
    return next((nd for nd in [*map(reported, before), *after] if nd), None)


def _allocated_until(history: list[dict[str, Any]], driver: str, pool: str, device: str, since: datetime, logged_until: datetime) -> float:
    """Seconds from `since` until the claim's `history` first showed `device` no longer allocated
    (deallocated, or the claim deleted), else until the claim log's last version (`logged_until`)."""
    for v in history:
        at = datetime.fromisoformat(v["start"])
        held = (pool, device) in {(r["pool"], r["device"]) for r in claims.allocated(v, driver)}
        if at > since and (v.get("event") == "DELETED" or not held):
            return (at - since).total_seconds()
    return (logged_until - since).total_seconds()


def network_data_matches_the_pod(o: Observed, ev: Evidence) -> None:  # ST-02
    """Once each device allocated to the driver has an entry with networkData (or READY_TIMEOUT
    after the pod started), each device's networkData describes its own interface in the pod."""

    def reported(claim: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any] | None]:
        entries = {(e["pool"], e["device"]): e.get("networkData") for e in claims.device_status(claim, o.driver.name)}
        return {device: entries.get(device) for device in sorted(o.own(claim))}

    def all_reported() -> dict[tuple[str, str], dict[str, Any] | None]:
        found = reported(o.read())
        return found if found and all(network_data.reported(nd) for nd in found.values()) else {}

    try:
        found = driver_must(f"networkData in the entry of each device of {o.driver.name}", all_reported, READY_TIMEOUT)
    except DriverTimedOut:  # judged on what it wrote by then
        found = reported(o.read())
    ev.add("status.devices", claims.device_status(o.read(), o.driver.name))
    now = slices.attributes(o.api, o.driver.name)
    devices = [network_data.device(pool, name, [o.published, now], nd) for (pool, name), nd in found.items()]
    network_data.matches_the_pod(devices, lambda script: pods.observe(o.lab, o.namespace, o.claim, script), ev)


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
