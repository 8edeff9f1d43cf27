"""KP-13 as a predicate: a container using a CPU driver's devices runs only on CPUs of the devices
allocated for the claims and requests it uses, as many as its allocation consumed of their CPU
capacity (all of a device's without one), and on none that a container of another claim running
beside it on the node holds. Which
CPUs a device stands for is what its attribute names (the profile's cpuDevices) as the node's
topology lists them; what a container runs on is the Cpus_allowed_list it printed at its start."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Callable

from kubernetes.utils import parse_quantity

from drivers_under_test.profile import CpuDevices, CpuScope
from fake_hardware.profile import cpu_ids
from fake_hardware.system_tree import cpu_list
from suites.framework import claims, slices

# What a generated container prints of its CPUs (before the other dumps: a metadata file's dump
# takes every line after its header).
_LINE = "Cpus_allowed_list:"


def dump_command() -> str:
    return f"grep '^{_LINE}' /proc/self/status"


def parse_dump(log: str) -> list[int] | None:
    """The CPUs a dump_command printed in `log`; None if it printed none."""
    line = next((line for line in log.splitlines() if line.startswith(_LINE)), None)
    if line is None:
        return None
    listed = line[len(_LINE) :].strip()
    return cpu_ids(listed) if listed else []


@dataclass(frozen=True)
class Topology:
    """A node's CPUs as its tree lists them: the NUMA node and the socket of each."""

    numa: dict[int, int]
    socket: dict[int, int]

    def of(self, scope: CpuScope, value: int) -> set[int]:
        if scope is CpuScope.CPU:
            return {value} if value in self.socket else set()
        return {c for c, v in (self.numa if scope is CpuScope.NUMA_NODE else self.socket).items() if v == value}


def device_cpus(attributes: dict[str, Any], declared: CpuDevices, topology: Topology, driver: str) -> set[int] | None:
    """The CPUs that the first declared attribute a device of `driver` publishes (`attributes` by
    qualified name) names; None for none."""
    for name, scope in declared.attributes.items():
        value = attributes.get(slices.qualified_name(name, driver))
        if value is not None and isinstance(value.get("int"), int):
            return topology.of(scope, value["int"])
    return None


def _container(record: dict[str, Any]) -> str:
    return f"{record['namespace']}/{record['pod']}/{record['container']}"


def _consumed(result: dict[str, Any], capacity: str | None) -> int | None:
    quantity = (result.get("consumedCapacity") or {}).get(capacity) if capacity else None
    return None if quantity is None else int(parse_quantity(quantity))


@dataclass
class Judged:
    """A container judged: what it runs on, what its allocation gives it."""

    record: dict[str, Any]
    seen: set[int]
    allowed: set[int]  # the CPUs of its devices
    count: int  # how many of them it gets
    uids: frozenset[str]  # its claims of the driver

    def shown(self) -> dict[str, Any]:
        return {
            "container": _container(self.record),
            "node": self.record["node"],
            "runs on": cpu_list(sorted(self.seen)),
            "its devices' CPUs": cpu_list(sorted(self.allowed)),
            "CPUs its allocation gives": self.count,
        }


def judged(
    records: list[dict[str, Any]],
    allocated: dict[str, dict[str, Any]],
    published: slices.Published,  # qualified names
    declared: CpuDevices,
    topology: Callable[[str], Topology],
    driver: str,
) -> tuple[list[Judged], list[str], list[str]]:
    """The containers the run saw using devices of `driver` that printed their CPUs, each with what
    its allocation gives it; the problems of the devices they use (one publishing none of the
    declared attributes); and the containers left unjudged because a device of theirs is no longer
    published (what it stood for is not known)."""
    out, problems, unknown = [], [], []
    for r in records:
        used = claims.results_used(r, allocated, driver)
        if not used or r.get("cpus") is None:
            continue
        allowed, count = set(), 0
        for ref, result in used:
            attributes = published.get((result["pool"], result["device"]))
            if attributes is None:
                unknown.append(f"{_container(r)} (device {result['pool']}/{result['device']})")
                break
            cpus = device_cpus(attributes, declared, topology(r["node"]), driver)
            if cpus is None:
                problems.append(
                    f"device {result['pool']}/{result['device']} of claim {ref['claim']} publishes none of "
                    f"{', '.join(declared.attributes)}, which tell the CPUs a device of {driver} stands for (the profile's cpuDevices)"
                )
                break
            allowed |= cpus
            consumed = _consumed(result, declared.capacity)
            count += len(cpus) if consumed is None else consumed
        else:
            out.append(Judged(r, set(r["cpus"]), allowed, count, frozenset(ref["uid"] for ref, _ in used)))
    return out, sorted(set(problems)), unknown


def problems(containers: list[Judged]) -> list[str]:
    """Each container on CPUs outside its devices' or on another number than its allocation gives;
    each pair of containers of different claims that ran side by side on one node (observed in one
    batch, init containers aside: they had ended) sharing CPUs."""
    out = []
    for j in containers:
        where = f"container {_container(j.record)} on {j.record['node']}"
        if extra := j.seen - j.allowed:
            out.append(
                f"{where} runs on CPUs {cpu_list(sorted(extra))}, which are not of the devices allocated for the "
                f"claims and requests it uses ({cpu_list(sorted(j.allowed)) or 'none'})"
            )
        elif len(j.seen) != j.count:
            out.append(f"{where} runs on {len(j.seen)} CPU(s) ({cpu_list(sorted(j.seen))}); its allocation gives it {j.count}")
    side_by_side = [j for j in containers if not j.record.get("init") and j.record.get("batch")]
    for a, b in combinations(side_by_side, 2):
        if (a.record["batch"], a.record["node"]) != (b.record["batch"], b.record["node"]) or a.uids & b.uids:
            continue
        if shared := a.seen & b.seen:
            out.append(
                f"containers {_container(a.record)} and "
                f"{b.record['pod']}/{b.record['container']}, of different claims, ran side by side on {a.record['node']} "
                f"sharing CPUs {cpu_list(sorted(shared))}"
            )
    return out


def published_attributes(devices: list[slices.Device]) -> slices.Published:
    return {(d.pool, d.name): slices.qualified(d.attributes, d.driver) for d in devices}
