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
    return {k: nd[k] for k in FIELDS if (nd or {}).get(k)}


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
        found.append(f"hardwareAddress {fields['hardwareAddress']}, the pod's {seen['interfaceName']} has "
                     f"{seen['hardwareAddress'] or 'none'}")
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
    assert fields, f"{subject}: networkData {nd or '(none)'} reports none of {', '.join(FIELDS)}"
    interfaces = pod_interfaces(observe, fields)
    ev.add(f"{subject}: the pod's interfaces, networkData {fields}", interfaces)
    seen = pick(fields, interfaces)
    assert seen is not None, f"{subject}: the pod has no interface with networkData's {how_found(fields)}"
    wrong = mismatches(fields, seen)
    assert not wrong, f"{subject}: networkData " + "; ".join(wrong)
