"""The kubelet's DRA manager checkpoint, decoded: for each claim the kubelet has prepared on the
node, the pods using it and, per driver, the devices that driver's NodePrepareResources answered
with (pool, device, requests, CDI device IDs). It is any driver's answer as the kubelet holds it,
so the KP checks read it on every node without a recorder of the gRPC conversation.

The format (k8s.io/kubernetes v1.37.1, pkg/kubelet/cm/dra/state): a JSON object {"Data": ...,
"Checksum": ...} whose Data is the JSON of {"kind": "DRACheckpoint", "apiVersion":
"checkpoint.dra.kubelet.k8s.io/v1", "ClaimInfoStateList": [ClaimInfoState]}; fields are read by
name and unknown ones ignored, so a newer kubelet's additions do not break the reading."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from suites.framework.pods import ObservationFailed

FILE = "dra_manager_state"  # in the kubelet's root dir (pkg/kubelet/cm/dra/manager.go)
KIND = "DRACheckpoint"


@dataclass(frozen=True)
class PreparedDevice:
    """One device of a driver's NodePrepareResources answer for a claim."""

    pool: str
    device: str
    requests: tuple[str, ...]  # empty: the device serves every request of the claim
    cdi_ids: tuple[str, ...]


@dataclass(frozen=True)
class PreparedClaim:
    uid: str
    namespace: str
    name: str
    pod_uids: frozenset[str]
    devices: dict[str, tuple[PreparedDevice, ...]]  # by driver: every driver with results in the claim

    def of(self, driver: str) -> tuple[PreparedDevice, ...] | None:
        """What `driver` answered for this claim; None when it has no allocation result in it."""
        return self.devices.get(driver)


def path(kubelet_root_dir: str) -> str:
    return f"{kubelet_root_dir.rstrip('/')}/{FILE}"


def parse(text: str) -> list[PreparedClaim]:
    """The prepared claims of a checkpoint file's content."""
    try:
        outer = json.loads(text)
        data = json.loads(outer["Data"])
    except (ValueError, KeyError, TypeError) as e:
        raise ObservationFailed(f"the kubelet's DRA checkpoint does not decode ({type(e).__name__}: {e}): {text[:300]}") from e
    if data.get("kind") != KIND:
        raise ObservationFailed(f"the kubelet's DRA checkpoint is of kind {data.get('kind')!r}, not {KIND}")
    return [_claim(c) for c in data.get("ClaimInfoStateList") or []]


def _claim(raw: dict[str, Any]) -> PreparedClaim:
    pods = raw.get("PodUIDs") or {}
    return PreparedClaim(
        uid=raw.get("ClaimUID", ""),
        namespace=raw.get("Namespace", ""),
        name=raw.get("ClaimName", ""),
        # A Go sets.Set[string] marshals as a JSON object (set members as keys) or, written by an
        # older kubelet, a list.
        pod_uids=frozenset(pods if isinstance(pods, (list, dict)) else []),
        devices={
            driver: tuple(
                PreparedDevice(
                    d.get("PoolName", ""), d.get("DeviceName", ""), tuple(d.get("RequestNames") or ()), tuple(d.get("CDIDeviceIDs") or ())
                )
                for d in (state or {}).get("Devices") or []
            )
            for driver, state in (raw.get("DriverState") or {}).items()
        },
    )
