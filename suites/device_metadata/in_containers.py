"""The MD rules over every container the run saw (MUT-03): what the generated workloads' containers
found under the metadata root at their start (Lab.container_files, in the trace), judged against
the claims' allocations as the claim log saw them. A container has a file of the driver for each
request of it that it uses (MD-01 for a claim referenced by name, MD-08 for one made from a
template), none for any other request (MD-04), and each file lists exactly the devices the
allocation gives the driver for that request, in a metadata object of that claim (MD-02), each
with networkData that describes the interface a pod of the claim has (MD-16, deferred metadata:
what the containers printed of their interfaces at their start), with typed attributes that
agree with those its ResourceSlice publishes (MD-03), every object valid v1beta1 (MD-19)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from suites.framework import claims, metadata_file, metadata_paths, slices
from suites.framework.metadata_file import MetadataError, parse_stream
from suites.resource_claim_status import network_data

RULES = ("MD-01", "MD-02", "MD-03", "MD-04", "MD-08", "MD-16", "MD-19")
# MD-16's WARNINGs: networkData fields a device left out though its interface has a value for them.
NETWORK_DATA_LEFT_OUT = "MD-16 fields left out"
ATTRIBUTE_TYPES = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")


def attribute_problems(device: dict[str, Any], published: slices.Published, driver: str) -> list[str]:
    """How a device of a metadata file breaks MD-03: an attribute that is not one typed value, or
    whose value differs from its device's in the slices (`published`; both sides qualified:
    "index" in one and "<driver>/index" in the other are one attribute)."""
    in_slice = slices.qualified(published.get((device.get("pool", ""), device.get("name", "")), {}), driver)
    found = []
    for name, value in (device.get("attributes") or {}).items():
        if not (isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ATTRIBUTE_TYPES):
            found.append(f"{device.get('name')} attribute {name}: {value} is not one typed value")
        elif (want := in_slice.get(slices.qualified_name(name, driver))) is not None and value != want:
            found.append(f"{device.get('name')} attribute {name}: file {value}, slice {want}")
    return found


def attributes_seen(records: list[dict[str, Any]], driver: str) -> int:
    """How many attributes the devices of `driver` carry in the readable files of `driver` the
    containers of `records` saw (MD-03's subject)."""
    count = 0
    for record in records:
        for path, text in record["files"].items():
            if path.endswith(f"/{driver}-metadata.json"):
                try:
                    devices = parse_stream(text).first_known()["requests"][0].get("devices") or []
                except (MetadataError, KeyError, IndexError):
                    continue  # MD-02's
                count += sum(len(d.get("attributes") or {}) for d in devices if d.get("driver") == driver)
    return count


@dataclass(frozen=True)
class Expected:
    """A file a container must have: its claim (UID, name) and request, and the devices
    (pool, name) the allocation gives the driver for that request."""

    uid: str
    claim: str
    request: str
    template: bool
    devices: tuple[tuple[str, str], ...]


def expected(record: dict[str, Any], allocated: dict[str, dict[str, Any]], driver: str) -> dict[str, Expected] | None:
    """Path: the file the container of `record` must have of `driver`, for each request of the
    driver in the claims it uses (`allocated`: the claim log's last version of each allocated
    claim, by UID); None if the allocation of a claim it uses is not known."""
    used = claims.results_used(record, allocated, driver)
    if used is None:
        return None
    devices: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)  # (pod claim name, request) -> devices
    refs = {}
    for ref, r in used:
        devices[(ref["name"], claims.base_request(r["request"]))].add((r["pool"], r["device"]))
        refs[ref["name"]] = ref
    files: dict[str, Expected] = {}
    for (ref_name, request), found in devices.items():
        ref = refs[ref_name]
        name = ref["name"] if ref["template"] else ref["claim"]
        files[metadata_paths.in_container(name, request, driver, ref["template"])] = Expected(
            ref["uid"], ref["claim"], request, ref["template"], tuple(sorted(found))
        )
    return files


def problems(
    records: list[dict[str, Any]],
    allocated: dict[str, dict[str, Any]],
    driver: str,
    deferred: bool = False,
    published: slices.Published | None = None,
) -> dict[str, list[str]]:
    """Each violation of MD-01, MD-02, MD-04, MD-08, MD-19, MD-03 (with the slices' attributes,
    `published`) and, for a driver of deferred metadata, MD-16 (each device's own interface found
    by the MACs `published` gives it) over `records`, by requirement, and the networkData fields
    left out (NETWORK_DATA_LEFT_OUT, MD-16's WARNINGs); a container whose claims' allocations are
    unknown is left out (see judged)."""
    found: dict[str, list[str]] = {r: [] for r in (*RULES, NETWORK_DATA_LEFT_OUT)}
    suffix = f"/{driver}-metadata.json"
    pods = network_data.pods_of_claims(records)
    for record in records:
        want = expected(record, allocated, driver)
        if want is None:
            continue
        where = f"container {record['container']} of pod {record['namespace']}/{record['pod']} on {record['node']}"
        seen = {path: text for path, text in record["files"].items() if path.endswith(suffix)}
        for path, e in sorted(want.items()):
            if path not in seen:
                found["MD-08" if e.template else "MD-01"].append(
                    f"{where} uses request {e.request} of claim {e.claim} but has no file at {path} "
                    f"(its files of {driver}: {sorted(seen) or 'none'})"
                )
            elif why := _content_problem(seen[path], e, driver):
                found["MD-02"].append(f"{where}: {path}: {why}")
            else:
                stream = parse_stream(seen[path])
                devices = [d for d in stream.first_known()["requests"][0].get("devices") or [] if d.get("driver") == driver]
                found["MD-19"] += [
                    f"{where}: {path}: {obj.get('apiVersion')}: {p}" for obj in stream.objects for p in metadata_file.problems(obj)
                ]
                if published is not None:
                    found["MD-03"] += [f"{where}: {path}: {p}" for d in devices for p in attribute_problems(d, published, driver)]
                if deferred:
                    claim_devices = [(r["pool"], r["device"]) for r in claims.allocated(allocated[e.uid], driver)]
                    wrong, left_out = _network_problems(devices, pods.get(e.uid) or {}, claim_devices, published or {})
                    found["MD-16"] += [f"{where}: {path}: {why}" for why in wrong]
                    found[NETWORK_DATA_LEFT_OUT] += [f"{where}: {path}: {why}" for why in left_out]
        for path in sorted(set(seen) - set(want)):
            found["MD-04"].append(
                f"{where} has {path}, a request it does not use (it uses {record['uses']}; "
                f"its files of {driver} should be {sorted(want) or 'none'})"
            )
    return found


def judged(records: list[dict[str, Any]], allocated: dict[str, dict[str, Any]], driver: str) -> list[dict[str, Any]]:
    """The records whose containers use a request of `driver` and whose claims' allocations are known."""
    return [r for r in records if expected(r, allocated, driver)]


def _content_problem(text: str, e: Expected, driver: str) -> str | None:
    try:
        obj = parse_stream(text).first_known()
    except MetadataError as err:
        return f"not a readable metadata stream: {err}"
    if (obj.get("metadata") or {}).get("uid") != e.uid:
        return f"metadata of claim UID {(obj.get('metadata') or {}).get('uid')}, want {e.uid} (claim {e.claim})"
    requests = obj.get("requests") or []
    if [claims.base_request(r.get("name", "")) for r in requests] != [e.request]:
        return f"requests {[r.get('name') for r in requests]}, want exactly [{e.request!r}]"
    listed = tuple(sorted((d.get("pool"), d.get("name")) for d in requests[0].get("devices") or [] if d.get("driver") == driver))
    others = [d for d in requests[0].get("devices") or [] if d.get("driver") != driver]
    if listed != e.devices or others:
        return (
            f"lists devices {list(listed)}{f' and {len(others)} of other drivers' if others else ''}; the allocation "
            f"gives {driver} {list(e.devices)} for request {e.request}"
        )
    return None


def _network_problems(
    devices: list[dict[str, Any]],
    pods: dict[str, tuple[str, network_data.Interfaces]],
    claim_devices: list[tuple[str, str]],
    published: slices.Published,
) -> tuple[list[str], list[str]]:
    """What the driver's `devices` of a file (read at a container's start, its content otherwise
    right) got wrong in networkData, and what they left out, against their own interfaces in
    the claim's `pods` (pod: when, interfaces; network_data.in_pods), the claim's other devices
    (`claim_devices`) owning theirs."""
    wrong = [
        f"device {d.get('pool')}/{d.get('name')} has no networkData at the container's start"
        for d in devices
        if not network_data.reported(d.get("networkData"))
    ]
    judged = [
        network_data.device(d["pool"], d["name"], [published], d["networkData"])
        for d in devices
        if network_data.reported(d.get("networkData"))
    ]
    if not judged or not pods:
        return wrong, []
    others = [network_data.device(pool, name, [published]) for pool, name in claim_devices]
    found = network_data.in_pods({pod: (judged, interfaces) for pod, (_, interfaces) in pods.items()}, others)
    wrong += [f"device {name}: {'; '.join(j.wrong)}" for name, j in found.items() if j.wrong]
    return wrong, [f"device {name}: {why}" for name, j in found.items() for why in j.left_out]
