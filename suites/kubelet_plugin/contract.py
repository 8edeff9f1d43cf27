"""The KP rules as predicates over what a run observed: the driver's ResourceSlices (KP-02), the
kubelet's record of the driver's prepare answers and the node's CDI specs (KP-03, KP-06), every
call between the kubelets and the driver the plugin recorder saw (KP-03, KP-05). Each returns
the violations it found, so a check states every one at once, with what it saw."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterator

from clusters.plugin_calls import CDISpec, PluginCall
from suites.framework import cdi_specs, claims
from suites.framework.dra_checkpoint import PreparedClaim


def _pool(slice_: dict[str, Any]) -> str:
    return slice_["spec"]["pool"]["name"]


def current_pools(slices: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each pool's slices of its newest generation, by pool name, sorted: slices of older
    generations are on their way out (the API reference: consumers ignore them)."""
    by_pool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in slices:
        by_pool[_pool(s)].append(s)
    current = {}
    for pool, members in sorted(by_pool.items()):
        newest = max(s["spec"]["pool"]["generation"] for s in members)
        current[pool] = [s for s in members if s["spec"]["pool"]["generation"] == newest]
    return current


def slice_problems(slices: list[dict[str, Any]], nodes: set[str]) -> list[str]:
    """KP-02 over one driver's ResourceSlices: within each pool, the slices of its newest
    generation are as many as each says (resourceSliceCount), device names are unique across
    them, and a node-local slice names an existing node, the same for the whole pool."""
    problems = []
    for pool, current in current_pools(slices).items():
        newest = current[0]["spec"]["pool"]["generation"]
        counts = {s["spec"]["pool"]["resourceSliceCount"] for s in current}
        if counts != {len(current)}:
            problems.append(
                f"pool {pool!r} generation {newest}: {len(current)} slice(s) "
                f"({', '.join(sorted(s['metadata']['name'] for s in current))}) say resourceSliceCount "
                f"{sorted(counts)}"
            )
        names = Counter(d["name"] for s in current for d in s["spec"].get("devices") or [])
        twice = sorted(n for n, c in names.items() if c > 1)
        if twice:
            problems.append(
                f"pool {pool!r} generation {newest}: device name(s) {twice} appear more than once "
                "across its slices (names must be unique within a pool)"
            )
        on = {s["spec"].get("nodeName") for s in current if s["spec"].get("nodeName")}
        if len(on) > 1:
            problems.append(f"pool {pool!r}: its slices name different nodes {sorted(on)}")
        if on - nodes:
            problems.append(f"pool {pool!r}: its slices name node(s) {sorted(on - nodes)}, which do not exist")
    return problems


DeviceKey = tuple[str, str]  # (pool, device): what identifies a device of a driver in a claim
Result = tuple[str, str, str]  # (request, pool, device) of an allocation result, as a message lists it


def _mismatch(
    answered: Counter[DeviceKey], results: list[dict[str, Any]], driver: str
) -> tuple[list[Result], list[DeviceKey], list[DeviceKey]]:
    """KP-03's "exactly the devices allocated to this driver": the answer's devices, counted,
    against the claim's allocation results of `driver`. Returns the results left out ((request,
    pool, device) of each, the last ones of a device allocated several times, as shares), the
    devices answered that the allocation does not give the driver, and those answered more often
    than allocated (more than once where the allocation is not known). The request names a
    device is answered with are KP-04's: the request here names the result, it does not match it."""
    mine = [r for r in results if r.get("driver") == driver]
    allocated = Counter((r["pool"], r["device"]) for r in mine)
    left: list[Result] = []
    for key, n in allocated.items():
        if (short := n - answered[key]) > 0:
            left += [(r["request"], r["pool"], r["device"]) for r in mine if (r["pool"], r["device"]) == key][-short:]
    foreign = sorted(k for k in answered if results and not allocated[k])
    twice = sorted(k for k, n in answered.items() if n > max(allocated[k], 1))
    return sorted(left), foreign, twice


def mismatch_problems(
    where: str, answered: Counter[DeviceKey], results: list[dict[str, Any]], driver: str, left_out: bool = True
) -> list[str]:
    """_mismatch's findings as violations, each naming `where` (the claim and its answer); devices
    left out only with `left_out`."""
    left, foreign, twice = _mismatch(answered, results, driver)
    gives = sorted({(r["pool"], r["device"]) for r in results if r.get("driver") == driver})
    problems = []
    if foreign:
        problems.append(f"{where}: answered device(s) {foreign}, which its allocation does not give {driver} (it gives {gives})")
    if twice:
        problems.append(f"{where}: answered device(s) {twice} more than once, more often than its allocation gives them")
    if left and left_out:
        problems.append(
            f"{where}: left out device(s) {left} (request, pool, device) that its allocation gives {driver} "
            f"(it answered {sorted(answered)})"
        )
    return problems


def prepare_problems(
    prepared: PreparedClaim, results: list[dict[str, Any]], driver: str, specs: dict[str, dict[str, Any]], complete: bool
) -> list[str]:
    """KP-03 for one claim the kubelet holds as prepared by `driver` on a node: the devices the
    driver answered with are those allocated to it in the claim (`results`, none if not known),
    and each CDI device ID it answered resolves in a CDI spec on that node. The kubelet's record
    is a set: it records the claim before the call (with no device), and adds the answer's devices
    again when it prepares the claim again after a restart; so each device is judged answered or
    not, a device left out only where the record is `complete` (a running pod uses the claim:
    its prepare succeeded), and devices answered twice over the run (wrong_devices). CDI devices
    are resolved only where `complete` too: a claim no running pod uses may be in its unprepare,
    its spec gone before the kubelet drops its record (wrong_devices resolves every answer
    against the specs as it went back)."""
    answer = prepared.of(driver) or ()
    where = f"claim {prepared.namespace}/{prepared.name} ({prepared.uid}), as the kubelet holds its NodePrepareResources answer"
    answered = Counter({(d.pool, d.device) for d in answer})
    once = list({(r.get("driver"), r["pool"], r["device"]): r for r in results}.values())  # each device once, as the record
    problems = mismatch_problems(where, answered, once, driver, left_out=complete)
    for d in answer if complete else ():
        for cdi_id in d.cdi_ids:
            if cdi_specs.defining(specs, cdi_id) is None:
                problems.append(
                    f"{where}: device {d.pool}/{d.device} was answered with CDI device {cdi_id!r}, which "
                    f"no CDI spec on the node defines (specs read: {sorted(specs) or 'none'})"
                )
    return problems


def per_claim_specs(prepared: PreparedClaim, driver: str, specs: dict[str, dict[str, Any]]) -> list[str]:
    """The CDI spec files that are this claim's own: they define a CDI device the driver answered
    for it and name the claim's UID (in the file name or content). Specs shared by claims (one
    per device, defined once for the node) are not per-claim state and may stay."""
    ids = {cdi_id for d in prepared.of(driver) or () for cdi_id in d.cdi_ids}
    defining = {path for cdi_id in ids if (path := cdi_specs.defining(specs, cdi_id)) is not None}
    return sorted(p for p in defining if prepared.uid in p or prepared.uid in repr(specs[p]))


def calls_to(calls: list[PluginCall], driver: str) -> list[PluginCall]:
    """The calls to `driver`'s sockets: a registration socket is the driver's once its GetInfo
    answered the driver's name (a socket of that name made anew may be another's)."""
    owner: dict[tuple[str, str], str | None] = {}
    mine = []
    for c in calls:
        if c.method == "socket created":
            owner[(c.node, c.socket)] = None
        elif c.name == "GetInfo" and c.response:
            owner[(c.node, c.socket)] = c.response.get("name")
        if owner.get((c.node, c.socket)) == driver:
            mine.append(c)
    return mine


def first_prepares(calls: list[PluginCall]) -> dict[str, PluginCall]:
    """The first NodePrepareResources (by start) each claim UID was given in, answered or not."""
    first: dict[str, PluginCall] = {}
    for c in calls:
        if c.name == "NodePrepareResources":
            for claim in (c.request or {}).get("claims") or []:
                if (uid := claim.get("uid")) not in first or c.start < first[uid].start:
                    first[uid] = c
    return first


def _device_key(d: dict[str, Any]) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    return (
        d.get("pool_name", ""),
        d.get("device_name", ""),
        tuple(sorted(d.get("request_names") or [])),
        tuple(sorted(d.get("cdi_device_ids") or [])),
    )


def _named(claim: dict[str, Any]) -> str:
    return f"{claim.get('namespace')}/{claim.get('name')} ({claim.get('uid')})"


def _where(c: PluginCall, claim: dict[str, Any]) -> str:
    return f"on {c.node} at {c.start:%H:%M:%S.%f}: {c.name} of claim {_named(claim)}"


def unanswered_claims(calls: list[PluginCall]) -> list[str]:
    """KP-03 over every NodePrepareResources the kubelets made to the driver: a call that
    succeeded answers each claim it was given, with devices or an error of its own."""
    problems = []
    for c in calls:
        if c.name != "NodePrepareResources" or c.error or c.stream:
            continue
        answers = (c.response or {}).get("claims") or {}
        for claim in (c.request or {}).get("claims") or []:
            if claim.get("uid") not in answers:
                problems.append(
                    f"{_where(c, claim)}: the answer has no entry for it (it answered "
                    f"{sorted(answers) or 'no claim'} of {len((c.request or {}).get('claims') or [])} asked)"
                )
    return problems


def changed_answers(calls: list[PluginCall]) -> list[str]:
    """KP-05 over every NodePrepareResources the kubelets made to the driver: a claim prepared
    again on a node (no unprepare of it in between) is answered with the same devices."""
    prepared: dict[tuple[str, str], tuple[PluginCall, list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]]] = {}
    problems = []
    for c in calls:
        if c.stream or c.error:
            continue
        asked = (c.request or {}).get("claims") or []
        if c.name == "NodeUnprepareResources":
            for claim in asked:
                prepared.pop((c.node, claim.get("uid")), None)
            continue
        if c.name != "NodePrepareResources":
            continue
        answers = (c.response or {}).get("claims") or {}
        for claim in asked:
            answer, key = answers.get(claim.get("uid")), (c.node, claim.get("uid"))
            if answer is None or answer.get("error"):
                continue
            devices = sorted(_device_key(d) for d in answer.get("devices") or [])
            if key in prepared and prepared[key][1] != devices:
                first, before = prepared[key]
                problems.append(f"{_where(c, claim)}: answered {devices}, where its prepare at {first.start:%H:%M:%S.%f} answered {before}")
                continue
            prepared.setdefault(key, (c, devices))
    return problems


# The gRPC codes of a call that ended before the driver answered it: its socket gone (a restart,
# an uninstall), the kubelet gone or giving up (a restart, a lab too slow). The lab's, not the driver's.
NOT_ANSWERED = ("Unavailable", "Canceled", "DeadlineExceeded")


def failed_unprepares(calls: list[PluginCall]) -> list[str]:
    """KP-05 over every NodeUnprepareResources of the run, the kubelets' and dra-probe's: each claim
    it was given is answered, without an error (unpreparing a claim the driver holds nothing for,
    or has unprepared already, succeeds), and the call itself succeeds unless it ended before the
    driver answered (NOT_ANSWERED; the recorder's own errors have no gRPC code)."""
    problems = []
    for c in calls:
        if c.name != "NodeUnprepareResources" or c.stream:
            continue
        asked = (c.request or {}).get("claims") or []
        if c.error:
            code = re.search(r"code = (\w+)", c.error)
            if code and code.group(1) not in NOT_ANSWERED:
                problems.append(
                    f"on {c.node} at {c.start:%H:%M:%S.%f}: NodeUnprepareResources of claim(s) "
                    f"{', '.join(_named(claim) for claim in asked)} failed as a whole: {c.error!r}"
                )
            continue
        answers = (c.response or {}).get("claims") or {}
        for claim in asked:
            answer = answers.get(claim.get("uid"))
            if answer is None:
                problems.append(f"{_where(c, claim)}: the answer has no entry for it, which the kubelet takes as not unprepared")
            elif answer.get("error"):
                problems.append(f"{_where(c, claim)} answered the error {answer['error']!r}")
    return problems


def _prepared_devices(calls: list[PluginCall]) -> Iterator[tuple[PluginCall, dict[str, Any], list[dict[str, Any]]]]:
    """(call, claim as asked, its answered devices) of every claim a successful
    NodePrepareResources answered without an error."""
    for c in calls:
        if c.name != "NodePrepareResources" or c.error or c.stream:
            continue
        answers = (c.response or {}).get("claims") or {}
        for claim in (c.request or {}).get("claims") or []:
            answer = answers.get(claim.get("uid"))
            if answer is not None and not answer.get("error"):
                yield c, claim, answer.get("devices") or []


def _seen_at(version: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(version["start"])


def results_at(versions: list[dict[str, Any]], when: datetime) -> list[dict[str, Any]]:
    """A claim's allocation results at `when`, from its versions in the claim log (in the order
    seen): those of the last version seen by then or, where it has none (the log's watch saw the
    allocation a moment after the kubelet called, or the claim deallocated and allocated anew),
    those of the next version seen with an allocation; none if the log saw none."""
    before = [v for v in versions if _seen_at(v) <= when]
    if before and (results := claims.allocated(before[-1])):
        return results
    return next((found for v in versions if _seen_at(v) > when and (found := claims.allocated(v))), [])


def _prepared_against_allocation(
    calls: list[PluginCall], history: dict[str, list[dict[str, Any]]]
) -> Iterator[tuple[PluginCall, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]:
    """_prepared_devices with the claim's allocation results at the call (none if the claim log
    did not see it allocated)."""
    for c, claim, devices in _prepared_devices(calls):
        yield c, claim, devices, results_at(history.get(claim.get("uid", ""), []), c.start)


def wrong_devices(calls: list[PluginCall], history: dict[str, list[dict[str, Any]]], driver: str) -> list[str]:
    """KP-03 over every answer the driver gave to a prepare in the run, re-prepares included: its
    devices are exactly those allocated to it in that claim (`history`: the claim log's versions
    of each claim by UID, read at the call), each as often as allocated, and each of its CDI device
    IDs is defined by a CDI spec on the node when the answer went back (the recorder's snapshot
    of the runtime's CDI directories)."""
    problems = []
    for c, claim, devices, results in _prepared_against_allocation(calls, history):
        where = _where(c, claim)
        problems += mismatch_problems(where, Counter((d.get("pool_name", ""), d.get("device_name", "")) for d in devices), results, driver)
        if c.cdi is None:
            continue
        for d in devices:
            for cdi_id in d.get("cdi_device_ids") or []:
                if not any(spec.defines(cdi_id) for spec in c.cdi.values()):
                    problems.append(
                        f"{where}: device {d.get('pool_name')}/{d.get('device_name')} was answered with CDI "
                        f"device {cdi_id!r}, which no CDI spec on the node defined as the answer went back "
                        f"(specs: {sorted(c.cdi) or 'none'})"
                    )
    return problems


def _base(request: str) -> str:
    """A subrequest's request: "gpu" of "gpu/large"."""
    return request.split("/", 1)[0]


def wrong_requests(calls: list[PluginCall], history: dict[str, list[dict[str, Any]]], driver: str) -> list[str]:
    """KP-04 over every claim the driver prepared in the run: the kubelet gives a container that
    references a request the CDI devices answered with that request's name, and those answered
    with no name to every container of the claim. So each name a device is answered with is a
    request (or its base request) the allocation (at the call, from `history`) gives that device,
    and a device answered with no name is allocated to every request of the claim."""
    problems = []
    for c, claim, devices, results in _prepared_against_allocation(calls, history):
        if not results:
            continue
        requests = {_base(r["request"]) for r in results}
        for d in devices:
            key = (d.get("pool_name", ""), d.get("device_name", ""))
            given = {_base(r["request"]) for r in results if r.get("driver") == driver and (r["pool"], r["device"]) == key}
            if not given:
                continue  # not allocated to it at all: KP-03's
            names = d.get("request_names") or []
            wrong = sorted({n for n in names if _base(n) not in given})
            if wrong:
                problems.append(
                    f"{_where(c, claim)}: device {key[0]}/{key[1]} was answered for request(s) {wrong}, "
                    f"but is allocated for {sorted(given)}: containers that use {wrong} get its CDI devices"
                )
            elif not names and requests - given:
                problems.append(
                    f"{_where(c, claim)}: device {key[0]}/{key[1]} was answered with no request names, "
                    f"which gives it to every request of the claim {sorted(requests)}, but it is allocated "
                    f"for {sorted(given)} only: containers that use {sorted(requests - given)} get its CDI devices"
                )
    return problems


# How long after a successful unprepare a claim's own CDI spec may stay (as the fixed KP-06 check
# allows a driver that cleans up after answering), before a later snapshot showing it is a FAIL.
SPEC_GRACE_SECONDS = 10


def specs_now(specs: dict[str, dict[str, Any]]) -> dict[str, CDISpec]:
    """A node's CDI specs as read now (cdi_specs.on_node), as a recorded snapshot holds them."""
    return {
        path: CDISpec(kind=spec.get("kind", ""), devices=tuple(d.get("name", "") for d in spec.get("devices") or []))
        for path, spec in specs.items()
    }


def left_specs(calls: list[PluginCall], now: dict[str, dict[str, CDISpec]] | None = None, at: datetime | None = None) -> list[str]:
    """KP-06 over every claim unprepared in the run: its own CDI spec files (at its prepare: a spec
    that defined a CDI device answered for it and named it) are gone from the node in every
    snapshot taken more than SPEC_GRACE_SECONDS after the unprepare succeeded, until the claim is
    prepared there again. The snapshots are those the recorder took with each call, then `now`
    (each node's specs read `at` the end of the run): the run's last unprepares have no call after them."""
    own: dict[tuple[str, str], tuple[dict[str, set[str]], dict[str, Any]]] = {}  # (node, uid) -> ({path: ids}, claim)
    unprepared: dict[tuple[str, str], PluginCall] = {}
    problems = []
    for c in sorted((c for c in calls if not c.stream and not c.error), key=lambda c: c.end):
        answers = (c.response or {}).get("claims") or {}
        if c.name == "NodePrepareResources":
            for _, claim, devices in _prepared_devices([c]):
                key = (c.node, claim.get("uid", ""))
                unprepared.pop(key, None)
                ids = {i for d in devices for i in d.get("cdi_device_ids") or []}
                paths = {p: {i for i in ids if s.defines(i)} for p, s in (c.cdi or {}).items() if key[1] in s.claims}
                own[key] = ({p: i for p, i in paths.items() if i}, claim)
        elif c.name == "NodeUnprepareResources":
            for claim in (c.request or {}).get("claims") or []:
                key = (c.node, claim.get("uid", ""))
                if key in own and not (answers.get(key[1]) or {}).get("error"):
                    unprepared[key] = c
        if c.cdi is None:
            continue
        for key, un in list(unprepared.items()):
            if key[0] != c.node or (c.end - un.end).total_seconds() <= SPEC_GRACE_SECONDS:
                continue
            problems += _still_there(key, own[key], un, c.cdi, f"{c.end:%H:%M:%S.%f}")
            del unprepared[key]  # judged once, on the first snapshot past the grace
    if now is not None and at is not None:
        for key, un in unprepared.items():
            if key[0] in now and (at - un.end).total_seconds() > SPEC_GRACE_SECONDS:
                problems += _still_there(key, own[key], un, now[key[0]], f"{at:%H:%M:%S.%f}, the end of the run")
    return problems


def _still_there(
    key: tuple[str, str], own: tuple[dict[str, set[str]], dict[str, Any]], unprepare: PluginCall, snapshot: dict[str, CDISpec], when: str
) -> list[str]:
    """The claim's own specs (path: its CDI IDs) a snapshot past the grace still holds, as a problem."""
    (node, uid), (paths, claim) = key, own
    left = sorted(p for p, ids in paths.items() if p in snapshot and any(snapshot[p].defines(i) for i in ids))
    return (
        [
            f"on {node}: claim {claim.get('namespace')}/{claim.get('name')} ({uid}), unprepared at "
            f"{unprepare.end:%H:%M:%S.%f}: its CDI spec(s) {left} were still on the node at {when}"
        ]
        if left
        else []
    )


STANDARD = "resource.kubernetes.io/"
PCI_BUS_ID, PCIE_ROOT, NUMA_NODE = (STANDARD + a for a in ("pciBusID", "pcieRoot", "numaNode"))


@dataclass(frozen=True)
class PciDevice:
    """A PCI function as its node's sysfs shows it."""

    bdf: str
    root: str  # pci<domain>:<bus>, the Root Complex above it
    numa: int  # -1: no NUMA affinity
    uuid: str | None = None  # a GPU's


def _own_device(device: dict[str, Any], pci: dict[str, PciDevice]) -> PciDevice | None:
    """The PCI function a published device stands for: by its UUID first (a wrong pciBusID must not
    make it another device), then its pciBusID, then any of its string values that is an address."""
    attrs = device.get("attributes") or {}
    values = sorted(v["string"] for v in attrs.values() if isinstance(v.get("string"), str))
    by_uuid = {p.uuid: p for p in pci.values() if p.uuid}
    bus_id = (attrs.get(PCI_BUS_ID) or {}).get("string")
    by_value = next((by_uuid[v] for v in values if v in by_uuid), None) or pci.get(bus_id or "")
    return by_value or next((pci[v] for v in values if v in pci), None)


def standard_attribute_problems(
    slices: list[dict[str, Any]], pci: Callable[[str], dict[str, PciDevice]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """KP-12 over one driver's current slices: each node-local device publishing a standard
    attribute, against the PCI function it stands for on its node (`pci(node)`, BDF -> device).
    Returns what was judged (device, its values, the function it was matched to) and the violations."""
    judged, problems = [], []
    for pool, current in current_pools(slices).items():
        for s in current:
            for d in s["spec"].get("devices") or []:
                attrs = d.get("attributes") or {}
                std = {k: attrs[k] for k in (PCI_BUS_ID, PCIE_ROOT, NUMA_NODE) if k in attrs}
                node = d.get("nodeName") or s["spec"].get("nodeName")
                if not std or not node:
                    continue  # a device reachable from several nodes has no one sysfs entry to hold it to
                where = f"device {pool}/{d['name']} on {node}"
                functions = pci(node)
                own = _own_device(d, functions)
                judged.append({"device": f"{pool}/{d['name']}", "node": node, "published": std, "pci function": own and own.bdf})
                if own is None:
                    bus_id = std.get(PCI_BUS_ID)
                    problems.append(
                        f"{where} publishes {PCI_BUS_ID} {bus_id}, which is no PCI function of the node "
                        f"(it has {', '.join(sorted(functions))})"
                        if bus_id
                        else f"{where} publishes {sorted(std)} but names no PCI function of the node "
                        "(no pciBusID, UUID or address among its values)"
                    )
                    continue
                problems += [f"{where} (PCI function {own.bdf}): {p}" for p in _standard_value_problems(std, own)]
    return judged, problems


def _standard_value_problems(std: dict[str, dict[str, Any]], own: PciDevice) -> list[str]:
    problems = []
    if PCI_BUS_ID in std and std[PCI_BUS_ID] != {"string": own.bdf}:
        problems.append(f"{PCI_BUS_ID} is {std[PCI_BUS_ID]}, expected {{'string': {own.bdf!r}}}")
    if PCIE_ROOT in std and std[PCIE_ROOT] != {"string": own.root}:
        problems.append(f"{PCIE_ROOT} is {std[PCIE_ROOT]}, expected {{'string': {own.root!r}}} (the Root Complex its sysfs entry is under)")
    if NUMA_NODE in std:
        value = std[NUMA_NODE]
        if own.numa < 0:
            problems.append(f"{NUMA_NODE} is {value}, but its numa_node is -1: a device with no NUMA affinity publishes none")
        elif value != {"int": own.numa} and (value.get("ints") or [None])[0] != own.numa:
            problems.append(f"{NUMA_NODE} is {value}, expected {{'int': {own.numa}}} or ints starting with {own.numa}, its numa_node")
    return problems
