"""The calls between the kubelet and a device plugin as the recording proxy (dp-probe
--proxy-resource) printed them, one JSON line each: {"method", "request", "response", "error"},
requests and answers in protojson with the v1beta1 proto's field names. And DP-07 judged from
them: the kubelet's Allocate takes the plugin's preference when the plugin advertises
GetPreferredAllocation, and PreStartContainer is called for the allocated devices when the
plugin asks for it. Pure: probe.py starts the proxy and reads its log."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

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


def _allocation(calls: list[Call], allocated: list[str]) -> int | None:
    """The index of the kubelet's Allocate call for exactly `allocated`, if the proxy saw it."""
    want = _ids(allocated)
    for i, call in enumerate(calls):
        if call.method == ALLOCATE and any(
            _ids(r.get("devices_ids")) == want for r in (call.request or {}).get("container_requests") or []
        ):
            return i
    return None


def _pre_starts(calls: list[Call], after: int) -> list[list[str]]:
    return [_ids((c.request or {}).get("devices_ids")) for c in calls[after:] if c.method == PRE_START]


def awaited(calls: list[Call], allocated: list[str]) -> bool:
    """Everything DP-07 looks for has passed: the Allocate of `allocated` and, when the plugin
    asks for it, a PreStartContainer of them (so a wait can end before its timeout)."""
    at = _allocation(calls, allocated)
    if at is None:
        return False
    return not options(calls)[PRE_START_OPTION] or _ids(allocated) in _pre_starts(calls, at)


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what did not apply, and why
    seen: dict[str, Any] = field(default_factory=dict)  # the calls judged, for the evidence


def judge(calls: list[Call], allocated: list[str]) -> Verdict:
    """DP-07 for the container the kubelet granted `allocated` (its checkpoint's record). Raises
    ObservationFailed when the proxy did not see the kubelet's options or its Allocate of them:
    nothing to judge, not the plugin's FAIL."""
    opts = options(calls)
    at = _allocation(calls, allocated)
    if at is None:
        raise ObservationFailed(
            f"the kubelet's {ALLOCATE} of {_ids(allocated)} did not pass through the proxy; "
            f"{ALLOCATE} calls seen: {[c.request for c in calls if c.method == ALLOCATE]}"
        )
    ids = _ids(allocated)
    verdict = Verdict(seen={"options": opts, "allocated": ids})
    if opts[PREFERRED_OPTION]:
        _judge_preference(verdict, [c for c in calls[:at] if c.method == PREFERRED], ids)
    else:
        verdict.notes.append(f"the plugin does not advertise {PREFERRED_OPTION}: no preference to honour")
    if opts[PRE_START_OPTION]:
        pre_starts = _pre_starts(calls, at)
        verdict.seen["pre-start"] = pre_starts
        if ids not in pre_starts:
            verdict.violations.append(
                f"the plugin asks for {PRE_START} ({PRE_START_OPTION}), yet the kubelet did "
                f"not call it for the allocated {ids}; it called it for {pre_starts}"
            )
    else:
        verdict.notes.append(f"the plugin does not ask for {PRE_START} ({PRE_START_OPTION} false)")
    return verdict


def _judge_preference(verdict: Verdict, asked: list[Call], ids: list[str]) -> None:
    """The kubelet's last GetPreferredAllocation before its Allocate was answered and taken."""
    if not asked:
        verdict.violations.append(f"the plugin advertises {PREFERRED_OPTION}, yet the kubelet allocated {ids} without calling {PREFERRED}")
        return
    call = asked[-1]
    request = ((call.request or {}).get("container_requests") or [{}])[0]
    answers = (call.response or {}).get("container_responses") or [{}]
    preferred = _ids(answers[0].get("deviceIDs"))
    verdict.seen["preference"] = {"asked": request, "answered": preferred, "error": call.error}
    if call.error:
        verdict.violations.append(f"the plugin answered the kubelet's {PREFERRED} with an error: {call.error}")
    elif preferred != ids:
        verdict.violations.append(
            f"the kubelet allocated {ids}, the plugin preferred {preferred}" + "".join(f"; {p}" for p in _invalid(request, preferred))
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
