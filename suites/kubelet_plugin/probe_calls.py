"""KP-05's calls the kubelet does not make: dralab's probe (suites/kubelet_plugin/probes/dra-probe),
run as a pod on the node with the kubelet's root dir, finds the driver's DRA service through
plugins_registry as the kubelet does and calls NodePrepareResources again for claims the kubelet's
checkpoint holds as prepared by the driver, or NodeUnprepareResources again for a claim the
kubelet has unprepared. Idempotent means the same answer: the same devices, for the same requests,
with the same CDI device IDs as the kubelet recorded of the first call; and an unprepare of a claim
unprepared already succeeds."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from clusters.providers import Lab
from drivers_under_test.deploy import drivers_image
from suites.framework import pods
from suites.framework.dra_checkpoint import PreparedClaim, PreparedDevice
from suites.framework.pods import ObservationFailed, PodBuilder

# The probe's own deadline for the call is the kubelet's (45 s); this leaves it room to start.
PROBE_TIMEOUT = 90


def call(
    lab: Lab,
    api,
    namespace: str,
    pod: str,
    node: str,
    driver: str,
    claims: list[PreparedClaim],
    method: Literal["prepare", "unprepare"] = "prepare",
) -> dict[str, Any]:
    """The probe's JSON answer to NodePrepareResources (`method` "prepare") or
    NodeUnprepareResources ("unprepare") of `claims`: {endpoint, versions, answer: the response as
    protojson, error}. ObservationFailed (the harness's ERROR) when the probe itself does not run."""
    root = lab.node(node).kubelet_root_dir.rstrip("/")
    builder = (
        PodBuilder(pod, image=drivers_image(lab))
        .on_node(node)
        .once()
        # Through the plugin recorder's stand-in where there is one: the trace has these calls too.
        .running(
            "/usr/local/bin/dra-probe",
            f"--registry-dir={root}/plugins_registry",
            f"--driver={driver}",
            *(f"--{method}={c.namespace}/{c.name}/{c.uid}" for c in claims),
        )
        # The same path as on the node: the endpoint the driver registered is a node path.
        .with_volume({"name": "kubelet", "hostPath": {"path": root, "type": "Directory"}}, root)
    )
    pods.create(api, namespace, builder)
    done = pods.wait_phase(api, namespace, pod, ("Succeeded", "Failed"), PROBE_TIMEOUT)
    out = pods.logs(api, namespace, pod)
    line = next((ln for ln in out.splitlines() if ln.startswith("{")), None)
    if done.status.phase != "Succeeded" or line is None:
        raise ObservationFailed(f"probe {pod} on {node} ended {done.status.phase} without an answer: {out[-2000:]}")
    return json.loads(line)


def _answered(device: dict[str, Any]) -> PreparedDevice:
    return PreparedDevice(
        device.get("poolName", ""),
        device.get("deviceName", ""),
        tuple(device.get("requestNames") or ()),
        tuple(device.get("cdiDeviceIds") or ()),
    )


def _same_whatever_order(devices: Iterable[PreparedDevice]) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """Devices as comparable values: the order of devices, requests and CDI IDs is no difference."""
    return sorted((d.pool, d.device, tuple(sorted(d.requests)), tuple(sorted(d.cdi_ids))) for d in devices)


def prepare_problems(first: list[PreparedClaim], driver: str, answer: dict[str, Any]) -> list[str]:
    """How the answer to the second call differs from the kubelet's record of the first, per claim."""
    found = (answer.get("answer") or {}).get("claims") or {}
    out = []
    for claim in first:
        what = f"claim {claim.namespace}/{claim.name} ({claim.uid})"
        got = found.get(claim.uid)
        if got is None:
            out.append(f"{what}: the second NodePrepareResources left it unanswered")
        elif got.get("error"):
            out.append(f"{what}: the second NodePrepareResources answered the error {got['error']!r}, the first prepared it")
        else:
            again = [_answered(d) for d in got.get("devices") or []]
            before = list(claim.of(driver) or ())
            if _same_whatever_order(again) != _same_whatever_order(before):
                out.append(f"{what}: the second NodePrepareResources answered {again}, the first (as the kubelet recorded it) {before}")
    return out


def unprepare_problems(claims: list[PreparedClaim], answer: dict[str, Any]) -> list[str]:
    """What the answer to an unprepare of claims the kubelet has unprepared already says against
    "unpreparing a claim that is not prepared succeeds", per claim."""
    found = (answer.get("answer") or {}).get("claims") or {}
    out = []
    for claim in claims:
        what = f"claim {claim.namespace}/{claim.name} ({claim.uid}), unprepared by the kubelet already"
        if claim.uid not in found:
            out.append(f"{what}: NodeUnprepareResources of it again left it unanswered")
        elif error := (found[claim.uid] or {}).get("error"):
            out.append(f"{what}: NodeUnprepareResources of it again answered the error {error!r}")
    return out
