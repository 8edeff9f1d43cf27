"""networkData (KEP-4817's NetworkDeviceData, in status.devices and in KEP-5304's metadata file
alike) against the interface the pod sees: ST-02 and MD-16 judge it the same way.

Every field (interfaceName, ips, hardwareAddress) is optional in the API: only the fields the
driver reported are compared, and it must report at least one. The pod's interface is the one
the reported interfaceName names, else the one holding a reported IP, else the one with the
reported hardwareAddress."""

from __future__ import annotations

import ipaddress
from typing import Any, Callable

from suites.framework.evidence import Evidence
from suites.framework.netif import interface

FIELDS = ("interfaceName", "ips", "hardwareAddress")
Observe = Callable[[str], "str | None"]  # runs a script in the pod (pods.observe)


def reported(nd: dict[str, Any] | None) -> dict[str, Any]:
    """The fields of networkData the driver filled in."""
    return {k: nd[k] for k in FIELDS if nd and nd.get(k)}


def _address(cidr: str) -> str:
    """A CIDR in canonical form (the pod's `ip addr` and the API both write it so); as given if it
    does not parse, which then matches nothing."""
    try:
        return str(ipaddress.ip_interface(cidr))
    except ValueError:
        return cidr


def _ips(cidrs: list[str]) -> list[str]:
    return sorted(_address(c) for c in cidrs)


def pick(fields: dict[str, Any], interfaces: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The pod's interface the reported `fields` describe, of `interfaces` (netif.interface's)."""
    if "interfaceName" in fields:
        return next((i for i in interfaces if i["interfaceName"] == fields["interfaceName"]), None)
    if "ips" in fields:
        return next((i for i in interfaces if set(_ips(fields["ips"])) & set(i["ips"])), None)
    return next((i for i in interfaces if i["hardwareAddress"] == fields["hardwareAddress"].lower()), None)


def how_found(fields: dict[str, Any]) -> str:
    return next(f"{k} {fields[k]}" for k in FIELDS if k in fields)


def mismatches(fields: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    """How the reported `fields` differ from the interface the pod has (`seen`)."""
    found = []
    if "ips" in fields and _ips(fields["ips"]) != seen["ips"]:
        found.append(f"ips {sorted(fields['ips'])}, the pod's {seen['interfaceName']} has {seen['ips']}")
    if "hardwareAddress" in fields and fields["hardwareAddress"].lower() != seen["hardwareAddress"]:
        found.append(
            f"hardwareAddress {fields['hardwareAddress']}, the pod's {seen['interfaceName']} has {seen['hardwareAddress'] or 'none'}"
        )
    return found


def pod_interfaces(observe: Observe, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's interfaces `pick` chooses among: the named one alone when a name was reported
    (one observation), else every interface of the pod."""
    names = [fields["interfaceName"]] if "interfaceName" in fields else (observe("ls /sys/class/net") or "").split()
    return [i for i in (interface(observe, n) for n in names) if i["interfaceName"]]


def matches_the_pod(subject: str, nd: dict[str, Any] | None, observe: Observe, ev: Evidence) -> None:
    """Assert that networkData `nd` of `subject` (a device) reports something and that what it
    reports is what the pod sees."""
    fields = reported(nd)
    interfaces = pod_interfaces(observe, fields) if fields else []
    ev.add(f"{subject}: the pod's interfaces, networkData {fields}", interfaces)
    why = not_described(nd, interfaces)
    assert why is None, f"{subject}: {why}"


def not_described(nd: dict[str, Any] | None, interfaces: list[dict[str, Any]]) -> str | None:
    """Why networkData `nd` does not describe one of `interfaces` (pod_interfaces' or netif.parse's,
    a pod's), None when it does; non-canonical CIDRs in ips are a reason too."""
    fields = reported(nd)
    if not fields:
        return f"networkData {nd or '(none)'} reports none of {', '.join(FIELDS)}"
    if not_canonical := [ip for ip in fields.get("ips", []) if _address(ip) != ip]:
        return f"ips {not_canonical} are not canonical CIDRs"
    seen = pick(fields, interfaces)
    if seen is None:
        return (
            f"the pod has no interface with networkData's {how_found(fields)} (it has "
            f"{sorted(str(i['interfaceName']) for i in interfaces)})"
        )
    wrong = mismatches(fields, seen)
    return "networkData " + "; ".join(wrong) if wrong else None


Interfaces = list[dict[str, Any]]


def pods_of_claims(records: list[dict[str, Any]]) -> dict[str, dict[str, tuple[str, Interfaces]]]:
    """Claim UID: pod (namespace/name): when its first container record was taken and the
    interfaces it printed, for the container records (Lab.container_files) that printed them. The
    containers of a pod share its network namespace."""
    out: dict[str, dict[str, tuple[str, Interfaces]]] = {}
    for r in records:
        if r.get("interfaces") is None:
            continue
        for c in r["pod_claims"]:
            if c.get("uid"):
                out.setdefault(c["uid"], {}).setdefault(f"{r['namespace']}/{r['pod']}", (r["start"], r["interfaces"]))
    return out
