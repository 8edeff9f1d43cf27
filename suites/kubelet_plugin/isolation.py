"""KP-04 as a predicate: a container has the CDI edits of the claims and requests it references,
and none of the edits particular to the devices it does not. Which request a device serves is the
claim's allocation's word, not the driver's answer (whose request names the kubelet trusts to
pick each container's CDI devices)."""

from __future__ import annotations

import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from suites.framework import cdi_specs, claims
from suites.framework.dra_checkpoint import PreparedClaim


@dataclass
class Edits:
    """What CDI container edits put into a container, as it can be seen from inside it."""

    env: set[str] = field(default_factory=set)  # "NAME=value"
    device_nodes: set[str] = field(default_factory=set)  # paths in the container
    mounts: set[str] = field(default_factory=set)  # container paths

    def add(self, edits: dict[str, Any]) -> None:
        self.env |= set(edits.get("env") or [])
        self.device_nodes |= {d["path"] for d in edits.get("deviceNodes") or [] if d.get("path")}
        self.mounts |= {m["containerPath"] for m in edits.get("mounts") or [] if m.get("containerPath")}

    def __bool__(self) -> bool:
        return bool(self.env or self.device_nodes or self.mounts)

    def listed(self) -> dict[str, list[str]]:
        return {"env": sorted(self.env), "device nodes": sorted(self.device_nodes), "mounts": sorted(self.mounts)}

    def minus(self, other: "Edits") -> "Edits":
        return Edits(self.env - other.env, self.device_nodes - other.device_nodes, self.mounts - other.mounts)


def ids_by_request(prepared: PreparedClaim, claim: dict[str, Any], driver: str) -> dict[str, set[str]]:
    """The CDI device IDs the driver answered for each request of the claim (by base request
    name), each device's IDs going to the request(s) the allocation gave that device."""
    results = claims.allocated(claim)
    requests: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in results:
        if r["driver"] == driver:
            requests[(r["pool"], r["device"])].add(r["request"].split("/")[0])
    out: dict[str, set[str]] = defaultdict(set)
    for d in prepared.of(driver) or ():
        for request in requests.get((d.pool, d.device), ()):
            out[request] |= set(d.cdi_ids)
    return out


def edits_of(specs: list[dict[str, Any]], ids: set[str]) -> tuple[Edits, Edits]:
    """The edits of CDI devices `ids` as the runtime applies them (their specs' and their own),
    and their own alone (what is particular to the devices)."""
    applied, own = Edits(), Edits()
    for cdi_id in ids:
        found = cdi_specs.edits(specs, cdi_id)
        if found is None:
            continue  # unresolvable: KP-03's FAIL, not this check's
        spec_level, device_level = found
        applied.add(spec_level)
        applied.add(device_level)
        own.add(device_level)
    return applied, own


def problems(container: str, seen: Edits, expected: Edits, foreign: Edits) -> list[str]:
    """What container `container` lacks of `expected` and has of `foreign` (edits particular to
    devices it does not reference, less those it gets from its own)."""
    out = []
    # Two of its devices may set one variable differently: the runtime keeps one of the values.
    values: dict[str, set[str]] = defaultdict(set)
    for entry in expected.env:
        values[entry.partition("=")[0]].add(entry)
    missing_env = sorted(k for k, entries in values.items() if not entries & seen.env)
    missing = [
        *(f"env {k}" for k in missing_env),
        *(f"device node {p}" for p in sorted(expected.device_nodes - seen.device_nodes)),
        *(f"mount {p}" for p in sorted(expected.mounts - seen.mounts)),
    ]
    if missing:
        out.append(f"container {container} lacks what the CDI devices of its claims give it: {', '.join(missing)}")
    extra = foreign.minus(expected)
    leaked = [
        *(f"env {e}" for e in sorted(extra.env & seen.env)),
        *(f"device node {p}" for p in sorted(extra.device_nodes & seen.device_nodes)),
        *(f"mount {p}" for p in sorted(extra.mounts & seen.mounts)),
    ]
    if leaked:
        out.append(f"container {container} has what only CDI devices of claims or requests it does not use give: {', '.join(leaked)}")
    return out


def parse_seen(output: str, queried_paths: list[str]) -> Edits:
    """Edits as the observation script (script()) printed them."""
    environ, mountinfo, present = (output.split(SEPARATOR) + ["", ""])[:3]
    mounts = {line.split()[4] for line in mountinfo.splitlines() if len(line.split()) > 4}
    return Edits({e for e in environ.split("\0") if e}, set(present.splitlines()) & set(queried_paths), mounts)


SEPARATOR = "\n@@@\n"


def script(paths: list[str]) -> str:
    """A shell script printing the container's environment (its first process's), its mount
    points and which of `paths` exist."""
    tests = "; ".join(f"[ -e {shlex.quote(p)} ] && echo {shlex.quote(p)}" for p in paths)
    sep = SEPARATOR.replace("\n", "\\n")
    return f"cat /proc/1/environ; printf '{sep}'; cat /proc/1/mountinfo; printf '{sep}'; {tests or ':'}; true"
