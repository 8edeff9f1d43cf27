"""Reading KEP-5304 device metadata files as a workload does (dralab's own reader).

A file is a JSON stream: the same DeviceMetadata once per API version the driver enabled, in
its order. A reader takes the first object whose version it knows. `problems` applies the
v1beta1 validation rules (MD-19): the declarative rules of
k8s.io/dynamic-resource-allocation/api/metadata/v1beta1, including the DeviceAttribute union
and the NetworkDeviceData limits it reuses from resource.k8s.io/v1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GROUP = "metadata.resource.k8s.io"
V1BETA1, V1ALPHA1 = f"{GROUP}/v1beta1", f"{GROUP}/v1alpha1"
KNOWN_VERSIONS = (V1BETA1, V1ALPHA1)  # newest first
KIND = "DeviceMetadata"

ATTRIBUTE_FIELDS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
MAX_ATTRIBUTES = 32
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # k8s-short-name
DNS_SUBDOMAIN_CASELESS = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class MetadataError(ValueError):
    """The file is not a readable metadata stream."""


@dataclass(frozen=True)
class MetadataStream:
    objects: tuple[dict[str, Any], ...]

    @property
    def versions(self) -> list[str]:
        return [o.get("apiVersion", "") for o in self.objects]

    def first_known(self) -> dict[str, Any]:
        """What a reader that knows v1beta1 and v1alpha1 uses: the first object of a known version."""
        for obj in self.objects:
            if obj.get("apiVersion") in KNOWN_VERSIONS:
                return obj
        raise MetadataError(f"no object of a known version ({', '.join(KNOWN_VERSIONS)}); found {self.versions}")

    def of_version(self, version: str) -> dict[str, Any] | None:
        return next((o for o in self.objects if o.get("apiVersion") == version), None)


def parse_stream(text: str) -> MetadataStream:
    decoder, pos = json.JSONDecoder(), 0
    objects: list[dict[str, Any]] = []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise MetadataError(f"not a JSON stream: {e} (after {len(objects)} complete object(s))") from None
        if not isinstance(obj, dict):
            raise MetadataError(f"object {len(objects) + 1} of the stream is a {type(obj).__name__}, not an object")
        objects.append(obj)
    if not objects:
        raise MetadataError("empty file")
    return MetadataStream(tuple(objects))


def read_file(path: Path) -> MetadataStream:
    return parse_stream(path.read_text())


def _pool_name_problems(pool: str) -> list[str]:
    if not pool or len(pool) > 253:
        return ["must be 1 to 253 characters"]
    return [f"part {part!r} is not a DNS subdomain" for part in pool.split("/") if not DNS_SUBDOMAIN.match(part)]


def _attribute_problems(path: str, attributes: Any) -> list[str]:
    if not isinstance(attributes, dict):
        return [f"{path}: must be a map"]
    problems = []
    if len(attributes) > MAX_ATTRIBUTES:
        problems.append(f"{path}: {len(attributes)} attributes, at most {MAX_ATTRIBUTES}")
    for name, value in attributes.items():
        set_fields = [f for f in ATTRIBUTE_FIELDS if isinstance(value, dict) and value.get(f) is not None]
        unknown = sorted(set(value) - set(ATTRIBUTE_FIELDS)) if isinstance(value, dict) else []
        if len(set_fields) != 1:
            problems.append(f"{path}[{name}]: exactly one of {', '.join(ATTRIBUTE_FIELDS)} must be set, got {set_fields or 'none'}")
        if unknown:
            problems.append(f"{path}[{name}]: unknown fields {unknown}")
    return problems


def _network_problems(path: str, nd: Any) -> list[str]:
    if not isinstance(nd, dict):
        return [f"{path}: must be an object"]
    problems = []
    if len(nd.get("interfaceName", "").encode()) > 256:
        problems.append(f"{path}.interfaceName: longer than 256 bytes")
    ips = nd.get("ips") or []
    if len(ips) > 16:
        problems.append(f"{path}.ips: {len(ips)} entries, at most 16")
    if len(set(ips)) != len(ips):
        problems.append(f"{path}.ips: duplicate entries {sorted({i for i in ips if ips.count(i) > 1})}")
    if len(nd.get("hardwareAddress", "").encode()) > 128:
        problems.append(f"{path}.hardwareAddress: longer than 128 bytes")
    return problems


def problems(obj: dict[str, Any]) -> list[str]:
    """Every violation of the v1beta1 rules in one decoded object, as 'field.path: message'."""
    out = []
    if obj.get("kind") != KIND:
        out.append(f"kind: {obj.get('kind')!r}, want {KIND}")
    if obj.get("apiVersion") not in KNOWN_VERSIONS:
        out.append(f"apiVersion: {obj.get('apiVersion')!r} is not a metadata version")
    meta = obj.get("metadata") or {}
    for key in ("name", "namespace", "uid"):
        if not meta.get(key):
            out.append(f"metadata.{key}: required")
    claim_name = obj.get("podClaimName")
    if claim_name is not None and not DNS_LABEL.match(claim_name):
        out.append(f"podClaimName: {claim_name!r} is not a DNS label")
    for i, request in enumerate(obj.get("requests") or []):
        rpath = f"requests[{i}]"
        if not request.get("name"):
            out.append(f"{rpath}.name: required")
        for j, device in enumerate(request.get("devices") or []):
            dpath = f"{rpath}.devices[{j}]"
            driver, pool, name = device.get("driver", ""), device.get("pool", ""), device.get("name", "")
            if not driver or len(driver) > 63 or not DNS_SUBDOMAIN_CASELESS.match(driver):
                out.append(f"{dpath}.driver: {driver!r} must be a DNS subdomain of at most 63 characters")
            out += [f"{dpath}.pool: {pool!r} {p}" for p in _pool_name_problems(pool)]
            if not DNS_LABEL.match(name):
                out.append(f"{dpath}.name: {name!r} is not a DNS label")
            if "attributes" in device:
                out += _attribute_problems(f"{dpath}.attributes", device["attributes"])
            if "networkData" in device:
                out += _network_problems(f"{dpath}.networkData", device["networkData"])
    return out


# What a container prints of the metadata files it sees (every file under `root`), each after a
# header line, then an end line: a workload's log tells what it found at its start.
_HEADER, _END = "==> ", "==> end of metadata files"


def dump_command(root: str) -> str:
    """Shell commands printing every file under `root` with its path (none if `root` is missing)."""
    return f'for f in $(find {root} -type f 2>/dev/null | sort); do echo "{_HEADER}$f"; cat "$f"; echo; done; echo "{_END}"'


def parse_dump(log: str) -> dict[str, str] | None:
    """Path: content of each file a dump_command printed; None if its end is not in `log` yet."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in log.splitlines():
        if line == _END:
            return {path: "\n".join(lines).rstrip("\n") for path, lines in files.items()}
        if line.startswith(_HEADER):
            current = files.setdefault(line[len(_HEADER) :], [])
        elif current is not None:
            current.append(line)
    return None
