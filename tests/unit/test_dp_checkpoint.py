"""The kubelet's device manager checkpoint decoded as the device plugin checks read it: every pod's
Allocate answer (protobuf) and the healthy devices per resource. The checkpoint below was written
by Go with the upstream types (k8s.io/kubelet v0.37.1 deviceplugin/v1beta1 ContainerAllocateResponse
through proto.Marshal, as pod_devices.go does; the checkpoint struct's JSON as checkpoint.go's)."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from suites.device_plugin import checkpoint, observations
from suites.device_plugin.checkpoint import AllocateAnswer, DeviceSpec, Mount
from suites.framework.pods import ObservationFailed

RECORDED = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"0b3c6a4e-1111-4d2a-9e7b-5f00c0ffee01","ContainerName":"m'
    'ain","ResourceName":"vendor.example/gpu","DeviceIDs":{"0":["GPU-aaaa"],"1":["GPU-bbbb"]},"AllocR'
    'esp":"CisKFlZFTkRPUl9WSVNJQkxFX0RFVklDRVMSEUdQVS1hYWFhLEdQVS1iYmJiChgKC1ZFTkRPUl9NT0RFEglleGNsdX'
    "NpdmUSPgoUL3J1bi92ZW5kb3IvR1BVLWFhYWESJC9zeXMvZGV2aWNlcy9wY2kwMDAwOjAwLzAwMDA6MDE6MDAuMBgBEiIKDy"
    "9vcHQvdmVuZG9yL2xpYhIPL3Vzci9saWIvdmVuZG9yGh0KDC9kZXYvdmVuZG9yMBIJL2Rldi9udWxsGgJydxocCgwvZGV2L3"
    "ZlbmRvcjESCS9kZXYvemVybxoBciItChh2ZW5kb3IuZXhhbXBsZS9hbGxvY2F0ZWQSEUdQVS1hYWFhLEdQVS1iYmJiKh0KG3"
    'ZlbmRvci5leGFtcGxlL2dwdT1HUFUtYWFhYQ=="},{"PodUID":"0b3c6a4e-1111-4d2a-9e7b-5f00c0ffee01","Conta'
    'inerName":"sidecar","ResourceName":"vendor.example/nic","DeviceIDs":{"-1":["nic-3"]},"AllocResp"'
    ':""}],"RegisteredDevices":{"vendor.example/gpu":["GPU-aaaa","GPU-bbbb","GPU-cccc"],"vendor.examp'
    'le/nic":["nic-3"]}},"Checksum":1234567890,"BootID":"5f2c8a4e-0000-4c1e-8d52-2a1d0c0ffee0"}'
)
POD = "0b3c6a4e-1111-4d2a-9e7b-5f00c0ffee01"


def test_every_entry_and_the_healthy_devices_are_read() -> None:
    held = checkpoint.parse(RECORDED)
    assert [(e.pod_uid, e.container, e.resource) for e in held.entries] == [
        (POD, "main", "vendor.example/gpu"),
        (POD, "sidecar", "vendor.example/nic"),
    ]
    assert held.registered == {"vendor.example/gpu": ["GPU-aaaa", "GPU-bbbb", "GPU-cccc"], "vendor.example/nic": ["nic-3"]}


def test_the_allocate_answer_is_decoded_whole() -> None:
    entry = checkpoint.parse(RECORDED).entry(POD, "main", "vendor.example/gpu")
    assert entry is not None
    assert entry.devices_per_numa == {0: ["GPU-aaaa"], 1: ["GPU-bbbb"]}
    assert entry.device_ids == ["GPU-aaaa", "GPU-bbbb"]
    assert entry.answer == AllocateAnswer(
        envs={"VENDOR_VISIBLE_DEVICES": "GPU-aaaa,GPU-bbbb", "VENDOR_MODE": "exclusive"},
        mounts=[
            Mount("/run/vendor/GPU-aaaa", "/sys/devices/pci0000:00/0000:01:00.0", True),
            Mount("/opt/vendor/lib", "/usr/lib/vendor", False),
        ],
        devices=[DeviceSpec("/dev/vendor0", "/dev/null", "rw"), DeviceSpec("/dev/vendor1", "/dev/zero", "r")],
        annotations={"vendor.example/allocated": "GPU-aaaa,GPU-bbbb"},
        cdi_devices=["vendor.example/gpu=GPU-aaaa"],
    )


# The same answer as the recording proxy prints it (protojson, the proto's field names, unpopulated fields too).
PRINTED = {
    "envs": {"VENDOR_MODE": "exclusive", "VENDOR_VISIBLE_DEVICES": "GPU-aaaa,GPU-bbbb"},
    "mounts": [
        {"container_path": "/run/vendor/GPU-aaaa", "host_path": "/sys/devices/pci0000:00/0000:01:00.0", "read_only": True},
        {"container_path": "/opt/vendor/lib", "host_path": "/usr/lib/vendor", "read_only": False},
    ],
    "devices": [
        {"container_path": "/dev/vendor0", "host_path": "/dev/null", "permissions": "rw"},
        {"container_path": "/dev/vendor1", "host_path": "/dev/zero", "permissions": "r"},
    ],
    "annotations": {"vendor.example/allocated": "GPU-aaaa,GPU-bbbb"},
    "cdi_devices": [{"name": "vendor.example/gpu=GPU-aaaa"}],
}


def test_the_answer_the_proxy_printed_is_the_one_the_kubelet_recorded() -> None:
    entry = checkpoint.parse(RECORDED).entry(POD, "main", "vendor.example/gpu")
    assert entry is not None and checkpoint.allocate_answer_json(PRINTED) == entry.answer
    empty = {"envs": {}, "mounts": [], "devices": [], "annotations": {}, "cdi_devices": []}
    assert checkpoint.allocate_answer_json(empty) == AllocateAnswer() == checkpoint.allocate_answer_json({})


def test_an_empty_answer_and_devices_without_numa_node() -> None:
    entry = checkpoint.parse(RECORDED).entry(POD, "sidecar", "vendor.example/nic")
    assert entry is not None and entry.answer == AllocateAnswer() and entry.devices_per_numa == {-1: ["nic-3"]}


def test_another_pod_container_or_resource_has_no_entry() -> None:
    held = checkpoint.parse(RECORDED)
    assert held.entry("other", "main", "vendor.example/gpu") is None
    assert held.entry(POD, "sidecar", "vendor.example/gpu") is None


def _wire() -> bytes:
    return base64.b64decode(json.loads(RECORDED)["Data"]["PodDeviceEntries"][0]["AllocResp"])


def test_fields_a_newer_kubelet_adds_are_skipped() -> None:
    # field 9 varint 150, field 10 of 3 bytes, field 11 fixed64, field 12 fixed32
    extra = bytes([9 << 3, 0x96, 0x01, (10 << 3) | 2, 3]) + b"abc" + bytes([(11 << 3) | 1]) + bytes(8) + bytes([(12 << 3) | 5]) + bytes(4)
    assert checkpoint.allocate_answer(_wire() + extra) == checkpoint.allocate_answer(_wire())


@pytest.mark.parametrize("cut", [1, 7, 40])
def test_a_truncated_answer_is_an_error_not_an_empty_one(cut: int) -> None:
    with pytest.raises(ValueError, match="past the end"):
        checkpoint.allocate_answer(_wire()[:-cut])


class _Files:
    """NodeFiles as far as the checkpoint readers use it."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def read(self, node: str, path: str) -> str | None:
        assert path == "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
        return self.text


def _pod(uid: str) -> SimpleNamespace:
    return SimpleNamespace(
        metadata=SimpleNamespace(uid=uid, namespace="ns", name="two"),
        spec=SimpleNamespace(node_name="node-1", containers=[SimpleNamespace(name="main")]),
    )


def test_the_pods_entry_is_its_subject_seen() -> None:
    entry = observations.allocation_of(_Files(RECORDED), _pod(POD), "vendor.example/gpu")  # type: ignore[arg-type]  # stand-ins for the NodeFiles and the V1Pod
    assert entry.device_ids == ["GPU-aaaa", "GPU-bbbb"]


def test_no_entry_or_no_checkpoint_is_an_observation_failure_never_an_empty_answer() -> None:
    with pytest.raises(ObservationFailed, match="no entry for pod ns/two .* resource vendor.example/gpu"):
        observations.allocation_of(_Files(RECORDED), _pod("other"), "vendor.example/gpu")  # type: ignore[arg-type]  # stand-ins for the NodeFiles and the V1Pod
    with pytest.raises(ObservationFailed, match="node-1 has no device manager checkpoint"):
        observations.allocation_of(_Files(None), _pod(POD), "vendor.example/gpu")  # type: ignore[arg-type]  # stand-ins for the NodeFiles and the V1Pod
