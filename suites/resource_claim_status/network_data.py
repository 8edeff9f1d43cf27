"""networkData (KEP-4817's NetworkDeviceData, in status.devices and in KEP-5304's metadata file
alike) against the interface the pod sees: ST-02 and MD-16 judge it the same way.

Each device is held to its own interface in the pod: the one showing a MAC address that the
device's ResourceSlice publishes among its attributes (its identity, whatever name the driver
reports). A device whose MAC the pod shows on no interface (a claim's config may set another) is
held to the interface its networkData names (else holds a reported IP, else has the reported
MAC), unless that interface is another device's. Every field the API names is compared with
that interface: interfaceName, ips as a set both ways (canonical CIDRs), hardwareAddress
case-insensitively. Each field is optional in the API: one left out where the interface has a
value is a WARNING; one present and wrong, networkData that reports no field, and two devices
that report one interface are FAILs."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from suites.framework import slices
from suites.framework.evidence import Evidence
from suites.framework.netif import parse

FIELDS = ("interfaceName", "ips", "hardwareAddress")
Observe = Callable[[str], "str | None"]  # runs a script in the pod (pods.observe)
Interfaces = list[dict[str, Any]]  # netif.parse's
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}", re.IGNORECASE)


@dataclass(frozen=True)
class Device:
    """A device whose networkData is judged: `name` (pool/device) as messages say it, the MACs
    its slice publishes (its identity in the pod), and its networkData."""

    name: str
    macs: frozenset[str]
    network_data: dict[str, Any] | None = None


@dataclass
class Judged:
    """What a device's networkData got wrong (a FAIL) and what it left out (a WARNING)."""

    wrong: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def macs(attributes: dict[str, Any]) -> frozenset[str]:
    """The MAC addresses among a device's attributes in its slice, whatever their names
    (macAddress, dra.net/mac), lower case."""
    values = (v.get("string") for v in attributes.values() if isinstance(v, dict))
    return frozenset(v.lower() for v in values if isinstance(v, str) and _MAC.fullmatch(v))


def device(pool: str, name: str, published: Sequence[slices.Published], network_data: dict[str, Any] | None = None) -> Device:
    """Device `pool`/`name` with the MACs the slices publish for it in any of `published` (the
    slices as seen at several times: a driver may drop the MAC of a netdev it moved into a pod)."""
    found = frozenset().union(*(macs(p.get((pool, name), {})) for p in published))
    return Device(f"{pool}/{name}", found, network_data)


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


def pick(fields: dict[str, Any], interfaces: Interfaces) -> dict[str, Any] | None:
    """The pod's interface the reported `fields` describe, of `interfaces`."""
    if "interfaceName" in fields:
        return next((i for i in interfaces if i["interfaceName"] == fields["interfaceName"]), None)
    if "ips" in fields:
        return next((i for i in interfaces if set(_ips(fields["ips"])) & set(_ips(i["ips"]))), None)
    return next((i for i in interfaces if i["hardwareAddress"] == fields["hardwareAddress"].lower()), None)


def how_found(fields: dict[str, Any]) -> str:
    return next(f"{k} {fields[k]}" for k in FIELDS if k in fields)


def _by_mac(d: Device, interfaces: Interfaces) -> dict[str, Any] | None:
    """The pod's interface with a MAC the device's slice publishes."""
    return next((i for i in interfaces if i["hardwareAddress"] and i["hardwareAddress"].lower() in d.macs), None)


def _own(d: Device, fields: dict[str, Any], interfaces: Interfaces, owners: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    """The device's own interface and how messages name it, or None and why it has none: the
    one with its MAC, else the one networkData describes unless it is another device's
    (`owners`: interface name -> the device whose MAC it shows)."""
    if (mine := _by_mac(d, interfaces)) is not None:
        return mine, f"the pod's {mine['interfaceName']} (MAC {mine['hardwareAddress']}, which its slice publishes)"
    told = pick(fields, interfaces)
    if told is None:
        return None, (
            f"the pod has no interface with networkData's {how_found(fields)} (it has "
            f"{sorted(str(i['interfaceName']) for i in interfaces)}), nor one with a MAC its slice publishes "
            f"({', '.join(sorted(d.macs)) or 'none'})"
        )
    if (other := owners.get(told["interfaceName"], d.name)) != d.name:
        return None, (
            f"networkData's {how_found(fields)} describes the pod's {told['interfaceName']}, the interface of "
            f"device {other} (MAC {told['hardwareAddress']}, which {other}'s slice publishes)"
        )
    return told, f"the pod's {told['interfaceName']}"


def _compare(fields: dict[str, Any], own: dict[str, Any], label: str, out: Judged) -> None:
    """Each field the API names against the device's own interface (`label` names it)."""
    if not_canonical := [ip for ip in fields.get("ips", []) if _address(ip) != ip]:
        out.wrong.append(f"ips {not_canonical} are not canonical CIDRs")
    want = {"interfaceName": own["interfaceName"], "ips": _ips(own["ips"]), "hardwareAddress": own["hardwareAddress"].lower()}
    got = {
        "interfaceName": fields.get("interfaceName"),
        "ips": _ips(fields["ips"]) if "ips" in fields else None,
        "hardwareAddress": fields["hardwareAddress"].lower() if "hardwareAddress" in fields else None,
    }
    for name in FIELDS:
        if got[name] is None:
            if want[name]:
                out.left_out.append(f"networkData reports no {name}; {label} has {want[name]}")
        elif got[name] != want[name]:
            out.wrong.append(f"networkData {name} {fields[name]}, {label} has {want[name] or 'none'}{_set_difference(name, got, want)}")


def _set_difference(name: str, got: dict[str, Any], want: dict[str, Any]) -> str:
    """For ips: which are missing and which are extra."""
    if name != "ips":
        return ""
    missing, extra = sorted(set(want["ips"]) - set(got["ips"])), sorted(set(got["ips"]) - set(want["ips"]))
    return f" (missing {missing or 'none'}, extra {extra or 'none'})"


def judge(devices: Sequence[Device], interfaces: Interfaces, others: Sequence[Device] = ()) -> dict[str, Judged]:
    """Device name: how its networkData describes its own interface among the pod's
    `interfaces`; `others`, devices of the same claim not judged here, own the interfaces
    showing their MACs too."""
    owners = {i["interfaceName"]: d.name for d in [*others, *devices] if (i := _by_mac(d, interfaces)) is not None}
    out: dict[str, Judged] = {}
    told: dict[str, list[str]] = {}  # interface name -> the devices whose networkData describes it
    for d in devices:
        judged = out[d.name] = Judged()
        fields = reported(d.network_data)
        if not fields:
            judged.wrong.append(f"networkData {d.network_data or '(none)'} reports none of {', '.join(FIELDS)}")
            continue
        if (described := pick(fields, interfaces)) is not None:
            told.setdefault(described["interfaceName"], []).append(d.name)
        own, label = _own(d, fields, interfaces, owners)
        if own is None:
            judged.wrong.append(label)
        else:
            _compare(fields, own, label, judged)
    for interface, names in told.items():
        # The interface's owner by MAC is right to report it; without one, none is known to be.
        for name in [n for n in names if n != owners.get(interface)] if len(names) > 1 else []:
            out[name].wrong.append(f"devices {', '.join(sorted(names))} all report the pod's {interface}")
    return out


def in_pods(pods: dict[str, tuple[list[Device], Interfaces]], others: Sequence[Device] = ()) -> dict[str, Judged]:
    """Device name: how its networkData describes its own interface, for a claim's `pods` (pod:
    its devices, with networkData as of that pod, and its interfaces). A device is judged in
    the pod whose interfaces show its MAC; one whose MAC no pod shows must be described in some
    pod (a VF is in one pod's network namespace, whoever shares its claim), else each pod's
    reasons are its FAIL."""
    home: dict[str, str] = {}
    for pod, (devices, interfaces) in sorted(pods.items()):
        for d in devices:
            if _by_mac(d, interfaces) is not None:
                home.setdefault(d.name, pod)
    judged = {
        pod: judge([d for d in devices if home.get(d.name, pod) == pod], interfaces, [*others, *devices])
        for pod, (devices, interfaces) in sorted(pods.items())
    }
    out: dict[str, Judged] = {}
    for name in sorted({d.name for devices, _ in pods.values() for d in devices}):
        if name in home:
            out[name] = judged[home[name]][name]
            continue
        tried = {pod: j[name] for pod, j in judged.items() if name in j}
        fine = next((j for j in tried.values() if not j.wrong), None)
        out[name] = fine or Judged([f"pod {pod}: {'; '.join(j.wrong)}" for pod, j in tried.items()])
    return out


def matches_the_pod(devices: Sequence[Device], observe: Observe, ev: Evidence) -> None:
    """Assert that each device's networkData describes its own interface in the pod `observe`
    runs scripts in; WARNING for each field it leaves out."""
    listing = observe("ip addr") or ""
    interfaces = parse(listing)
    ev.observe("the pod's interfaces (ip addr)", listing or "(none)")
    ev.add("networkData judged, with the MACs each device's slice publishes", {d.name: [d.network_data, sorted(d.macs)] for d in devices})
    found = judge(devices, interfaces)
    for name, j in found.items():
        for why in j.left_out:
            ev.warn(f"{name}: {why}")
    wrong = [f"{name}: {'; '.join(j.wrong)}" for name, j in found.items() if j.wrong]
    assert not wrong, "\n".join(wrong)


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
