"""The kubelet's device manager checkpoint, decoded: for each pod UID, container and resource the
device IDs the kubelet granted and the plugin's answer to Allocate for them, and each resource's
healthy devices as ListAndWatch last listed them. It is any plugin's answer as the kubelet holds
it, so the checks need nothing of the plugin's own (its env var names, paths or log lines).

The format (k8s.io/kubernetes v1.37.1, pkg/kubelet/cm/devicemanager/checkpoint): JSON of
{"Data": {"PodDeviceEntries": [{PodUID, ContainerName, ResourceName, DeviceIDs: {numa: [id]},
AllocResp: base64}], "RegisteredDevices": {resource: [id]}}, "Checksum", "BootID"}, where AllocResp
is a v1beta1 ContainerAllocateResponse in protobuf (proto.Marshal, pod_devices.go)."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

# The device manager keeps its checkpoint beside kubelet.sock, at pluginapi.DevicePluginPath
# whatever the kubelet's --root-dir (manager.go: checkpointdir from the socket path).
PATH = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"

# Protobuf wire types (https://protobuf.dev/programming-guides/encoding/).
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass(frozen=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool


@dataclass(frozen=True)
class DeviceSpec:
    container_path: str
    host_path: str
    permissions: str


@dataclass
class AllocateAnswer:
    """A ContainerAllocateResponse: what the plugin told the kubelet to give the container."""

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    devices: list[DeviceSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)  # fully qualified: vendor/class=name


@dataclass
class Entry:
    pod_uid: str
    container: str
    resource: str
    devices_per_numa: dict[int, list[str]]  # -1: the plugin gave the device no NUMA node
    answer: AllocateAnswer

    @property
    def device_ids(self) -> list[str]:
        return sorted(d for ids in self.devices_per_numa.values() for d in ids)

    def as_evidence(self) -> dict:
        return {
            "pod UID": self.pod_uid,
            "container": self.container,
            "resource": self.resource,
            "device IDs by NUMA node": self.devices_per_numa,
            "Allocate answered": asdict(self.answer),
        }


@dataclass
class Checkpoint:
    entries: list[Entry]
    registered: dict[str, list[str]]  # resource -> its healthy device IDs

    def entry(self, pod_uid: str, container: str, resource: str) -> Entry | None:
        return next((e for e in self.entries if (e.pod_uid, e.container, e.resource) == (pod_uid, container, resource)), None)


def parse(text: str) -> Checkpoint:
    data = json.loads(text)["Data"]
    entries = [
        Entry(
            e["PodUID"],
            e["ContainerName"],
            e["ResourceName"],
            {int(numa): list(ids or []) for numa, ids in (e.get("DeviceIDs") or {}).items()},
            allocate_answer(base64.b64decode(e.get("AllocResp") or "")),
        )
        for e in data.get("PodDeviceEntries") or []
    ]
    return Checkpoint(entries, {r: sorted(ids or []) for r, ids in (data.get("RegisteredDevices") or {}).items()})


def allocate_answer(wire: bytes) -> AllocateAnswer:
    """Decode a ContainerAllocateResponse (deviceplugin/v1beta1 api.proto): envs = 1 (map),
    mounts = 2, devices = 3, annotations = 4 (map), cdi_devices = 5. Unknown fields are skipped,
    as protobuf does, so a newer kubelet's additions do not break the reading."""
    answer = AllocateAnswer()
    for number, value in _fields(wire):
        if number == 1:
            key, val = _map_entry(value)
            answer.envs[key] = val
        elif number == 2:
            m = _strings(value)
            answer.mounts.append(Mount(m.get(1, ""), m.get(2, ""), bool(_varints(value).get(3, 0))))
        elif number == 3:
            d = _strings(value)
            answer.devices.append(DeviceSpec(d.get(1, ""), d.get(2, ""), d.get(3, "")))
        elif number == 4:
            key, val = _map_entry(value)
            answer.annotations[key] = val
        elif number == 5:
            answer.cdi_devices.append(_strings(value).get(1, ""))
    return answer


def allocate_answer_json(message: dict[str, Any]) -> AllocateAnswer:
    """A ContainerAllocateResponse in protojson with the proto's field names, as the recording
    proxy prints it (calls.py)."""
    return AllocateAnswer(
        envs=dict(message.get("envs") or {}),
        mounts=[Mount(m.get("container_path", ""), m.get("host_path", ""), bool(m.get("read_only"))) for m in message.get("mounts") or []],
        devices=[
            DeviceSpec(d.get("container_path", ""), d.get("host_path", ""), d.get("permissions", "")) for d in message.get("devices") or []
        ],
        annotations=dict(message.get("annotations") or {}),
        cdi_devices=[c.get("name", "") for c in message.get("cdi_devices") or []],
    )


def _fields(wire: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field of a message: an int for varints, bytes for the rest."""
    at = 0
    while at < len(wire):
        key, at = _varint(wire, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            value, at = _varint(wire, at)
            yield number, value
        elif kind in (_I64, _I32):
            size = 8 if kind == _I64 else 4
            yield number, _take(wire, at, size)
            at += size
        elif kind == _LEN:
            size, at = _varint(wire, at)
            yield number, _take(wire, at, size)
            at += size
        else:  # groups (3, 4) are not in this proto
            raise ValueError(f"unexpected protobuf wire type {kind} of field {number} at byte {at}")


def _varint(wire: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(wire):
            raise ValueError("protobuf varint runs past the end of the message")
        byte = wire[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _take(wire: bytes, at: int, size: int) -> bytes:
    if at + size > len(wire):
        raise ValueError(f"protobuf field of {size} bytes at byte {at} runs past the end of the message")
    return wire[at : at + size]


def _message(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError("a varint where the proto has a message")
    return value


def _strings(value: int | bytes) -> dict[int, str]:
    """The string fields of a sub-message, by number (a repeated one keeps its last, as proto3 does for scalars)."""
    return {n: v.decode() for n, v in _fields(_message(value)) if isinstance(v, bytes)}


def _varints(value: int | bytes) -> dict[int, int]:
    return {n: v for n, v in _fields(_message(value)) if isinstance(v, int)}


def _map_entry(value: int | bytes) -> tuple[str, str]:
    """A map<string, string> entry is a message of key = 1, value = 2."""
    entry = _strings(value)
    return entry.get(1, ""), entry.get(2, "")
