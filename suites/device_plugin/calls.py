"""The calls between the kubelet and a device plugin as the recording proxy (dp-probe
--proxy-resource) printed them, one JSON line each: {"method", "request", "response", "error"},
requests and answers in protojson with the v1beta1 proto's field names. And DP-07 judged from
them for every container the kubelet granted devices while the proxy recorded, each matched to its
own Allocate: the kubelet takes the plugin's preference when the plugin advertises
GetPreferredAllocation, and calls PreStartContainer for the allocated devices when the plugin
asks for it. Pure: probe.py starts the proxy and reads its log."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from suites.device_plugin.checkpoint import AllocateAnswer, allocate_answer_json
from suites.framework.pods import ObservationFailed

# The proxy's own steps, before it forwards anything.
DISCOVER, REGISTER = "Discover", "Register"
OPTIONS, PREFERRED, ALLOCATE, PRE_START = "GetDevicePluginOptions", "GetPreferredAllocation", "Allocate", "PreStartContainer"
PREFERRED_OPTION, PRE_START_OPTION = "get_preferred_allocation_available", "pre_start_required"


@dataclass(frozen=True)
class Call:
    method: str
    request: Any
    response: Any  # None when the call failed
    error: str = ""

    def as_evidence(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


def parse(log: str) -> list[Call]:
    """The proxy's records in the pod's log, in order (its klog lines on stderr are left out)."""
    found = []
    for line in log.splitlines():
        if line.startswith('{"method"'):
            record = json.loads(line)
            found.append(Call(record["method"], record.get("request"), record.get("response"), record.get("error") or ""))
    return found


def setup_failure(calls: list[Call]) -> str | None:
    """Why the proxy is not between the kubelet and the plugin, if it is not: it found no plugin
    socket listing the resource's devices (each socket it saw named with what it listed or why it
    did not answer), or the kubelet refused its registration. None once it registered."""
    for call in calls:
        if call.method == DISCOVER and call.error:
            asked, answer = call.request or {}, call.response or {}
            seen = (
                "; ".join(
                    f"{s.get('endpoint')}: " + (f"error {s['error']}" if s.get("error") else f"healthy {s.get('healthy') or []}")
                    for s in answer.get("sockets") or []
                )
                or "none"
            )
            return (
                f"the proxy found no device plugin socket of {asked.get('resource_name')} listing the kubelet's "
                f"healthy devices {asked.get('healthy')}: {call.error}. Sockets seen: {seen}"
            )
        if call.method == REGISTER and call.error:
            return f"the kubelet refused the proxy's registration: {call.error}"
    return None


def registered(calls: list[Call]) -> bool:
    return any(c.method == REGISTER and not c.error for c in calls)


def listed(calls: list[Call]) -> bool:
    """The kubelet takes the resource's devices through the proxy (a forwarded ListAndWatch answer)."""
    return any(c.method == "ListAndWatch" and c.response for c in calls)


def options(calls: list[Call]) -> dict[str, bool]:
    """The plugin's options as the kubelet acts on them: its last answer to the kubelet's own
    GetDevicePluginOptions (the kubelet asks when the proxy registers)."""
    answers = [c.response for c in calls if c.method == OPTIONS and c.response is not None]
    if not answers:
        raise ObservationFailed(f"no {OPTIONS} of the kubelet's passed through the proxy; calls seen: {[c.method for c in calls]}")
    return {k: bool(answers[-1].get(k)) for k in (PREFERRED_OPTION, PRE_START_OPTION)}


def _ids(ids: list[str] | None) -> list[str]:
    return sorted(ids or [])


@dataclass(frozen=True)
class Granted:
    """One container's devices of the resource as the kubelet's checkpoint holds them, with the
    plugin's answer it recorded for them. A list of them is in the order the kubelet admitted the
    containers, one pod after the other, its init containers first: the order of its Allocates."""

    container: str  # as the messages name it
    pod: str  # the pod's UID
    init: bool
    ids: tuple[str, ...]  # sorted
    answer: AllocateAnswer


def _reused(granted: list[Granted]) -> list[bool]:
    """Whether the kubelet took each container's devices all from those its pod's init containers
    had (the device manager's devicesToReuse): it asks no preference for them. An init container's
    devices may be reused after it, a container's are taken out of the pool."""
    pools: dict[str, set[str]] = {}
    found = []
    for g in granted:
        pool = pools.setdefault(g.pod, set())
        found.append(bool(g.ids) and set(g.ids) <= pool)
        if g.init:
            pool.update(g.ids)
        else:
            pool.difference_update(g.ids)
    return found


def _requests(calls: list[Call]) -> list[tuple[int, list[str], AllocateAnswer]]:
    """Each container request of each answered Allocate: the call's index, the devices asked for
    and the plugin's answer to it."""
    found = []
    for i, call in enumerate(calls):
        if call.method == ALLOCATE and call.response:
            asked = (call.request or {}).get("container_requests") or []
            answered = call.response.get("container_responses") or []
            found += [(i, _ids(r.get("devices_ids")), allocate_answer_json(a)) for r, a in zip(asked, answered)]
    return found


def _placed(calls: list[Call], granted: list[Granted]) -> list[int]:
    """The index of each container's Allocate in `calls`: the first container request after the
    previous container's that asks for its devices and was answered as the kubelet holds. Raises
    ObservationFailed for a container the proxy saw no such Allocate of: nothing to judge it by."""
    requests, at, found = _requests(calls), 0, []
    for g in granted:
        k = next((k for k in range(at, len(requests)) if requests[k][1:] == (list(g.ids), g.answer)), None)
        if k is None:
            raise ObservationFailed(
                f"no {ALLOCATE} through the proxy asked for the devices of {g.container}, {list(g.ids)}, and was answered as the "
                f"kubelet holds (checkpoint); {ALLOCATE} requests seen: {[ids for _, ids, _ in requests]}"
            )
        found.append(requests[k][0])
        at = k + 1
    return found


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what did not apply, and why
    seen: dict[str, Any] = field(default_factory=dict)  # the calls judged, for the evidence


def judge(calls: list[Call], granted: list[Granted]) -> Verdict:
    """DP-07 for every container of `granted` (the kubelet's checkpoint, in admission order),
    each matched to its own Allocate among the calls a proxy recorded on their node: when the
    plugin advertises GetPreferredAllocation, the kubelet's call of it since the previous Allocate
    was answered without error with exactly the devices allocated (none is asked when they all
    were the pod's init containers'); when it asks for PreStartContainer, one of exactly those
    devices follows the Allocate (each such call counted for one container only). Raises
    ObservationFailed when the proxy did not see the kubelet's options or a container's Allocate:
    nothing to judge, not the plugin's FAIL."""
    opts = options(calls)
    verdict = Verdict(seen={"options": opts, "containers": []})
    allocates = [i for i, c in enumerate(calls) if c.method == ALLOCATE]
    pre_starts = [i for i, c in enumerate(calls) if c.method == PRE_START]
    for g, at, reused in zip(granted, _placed(calls, granted), _reused(granted)):
        shown: dict[str, Any] = {"container": g.container, "allocated": list(g.ids)}
        verdict.seen["containers"].append(shown)
        if opts[PREFERRED_OPTION]:
            since = max((i for i in allocates if i < at), default=-1)
            asked = [c for c in calls[since + 1 : at] if c.method == PREFERRED]
            _judge_preference(verdict, g, asked[-1] if asked else None, reused, shown)
        if opts[PRE_START_OPTION]:
            k = next((k for k in pre_starts if k > at and _ids((calls[k].request or {}).get("devices_ids")) == list(g.ids)), None)
            shown["pre-start"] = k is not None
            if k is None:
                called = [_ids((calls[k].request or {}).get("devices_ids")) for k in pre_starts if k > at]
                verdict.violations.append(
                    f"the plugin asks for {PRE_START} ({PRE_START_OPTION}), yet the kubelet did not call it for the devices "
                    f"allocated to {g.container}, {list(g.ids)}; after their {ALLOCATE} it called it for {called}"
                )
            else:
                pre_starts.remove(k)
    if not opts[PREFERRED_OPTION]:
        verdict.notes.append(f"the plugin does not advertise {PREFERRED_OPTION}: no preference to honour")
    if not opts[PRE_START_OPTION]:
        verdict.notes.append(f"the plugin does not ask for {PRE_START} ({PRE_START_OPTION} false)")
    return verdict


def _judge_preference(verdict: Verdict, g: Granted, call: Call | None, reused: bool, shown: dict[str, Any]) -> None:
    """The kubelet's last GetPreferredAllocation before a container's Allocate was answered and taken."""
    ids = list(g.ids)
    if call is None:
        if reused:
            shown["preference"] = "none asked: the devices were its pod's init containers'"
        else:
            verdict.violations.append(
                f"the plugin advertises {PREFERRED_OPTION}, yet the kubelet allocated {ids} to {g.container} without calling {PREFERRED}"
            )
        return
    request = ((call.request or {}).get("container_requests") or [{}])[0]
    answers = (call.response or {}).get("container_responses") or [{}]
    preferred = _ids(answers[0].get("deviceIDs"))
    shown["preference"] = {"asked": request, "answered": preferred, "error": call.error}
    if call.error:
        verdict.violations.append(f"{g.container}: the plugin answered the kubelet's {PREFERRED} with an error: {call.error}")
    elif preferred != ids:
        verdict.violations.append(
            f"{g.container}: the kubelet allocated {ids}, the plugin preferred {preferred}"
            + "".join(f"; {p}" for p in _invalid(request, preferred))
        )


def _invalid(request: dict[str, Any], preferred: list[str]) -> list[str]:
    """Why a preference is not a choice the kubelet could take as it is (the kubelet then takes
    what it can of it and fills up)."""
    available, must = set(request.get("available_deviceIDs") or []), set(request.get("must_include_deviceIDs") or [])
    size = request.get("allocation_size")
    problems = []
    if not set(preferred) <= available:
        problems.append(f"the preference names {sorted(set(preferred) - available)}, not among the available {sorted(available)}")
    if len(preferred) != size:
        problems.append(f"the preference has {len(preferred)} devices, the kubelet asked for {size}")
    if not must <= set(preferred):
        problems.append(f"the preference leaves out the must-include {sorted(must - set(preferred))}")
    return problems
