"""The device plugin probe (suites/device_plugin/probes/dp-probe) run as a pod on a node: as a plugin
it registers with the node's kubelet under any API version and resource name and prints kubelet's
answer; as a proxy it stands between the kubelet and a resource's plugin and prints every call."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.providers import Lab
from drivers_under_test.deploy import STUCK, drivers_image
from suites.device_plugin import calls
from suites.device_plugin.calls import Call
from suites.framework import pods
from suites.framework.pods import ObservationFailed, PodBuilder
from suites.framework.waits import WaitTimeout, wait_for

# kubelet serves its Registration socket here whatever its --root-dir (deviceplugin/v1beta1.KubeletSocket).
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


def _probe(lab: Lab, pod: str, node: str, *args: str) -> PodBuilder:
    return (
        PodBuilder(pod, image=drivers_image(lab))
        .on_node(node)
        .running("/usr/local/bin/dp-probe", *args)
        .with_volume({"name": "device-plugins", "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}}, DEVICE_PLUGIN_DIR)
    )


def register(
    lab: Lab, api, namespace: str, pod: str, node: str, resource: str, version: str | None = None, devices: int = 2
) -> dict[str, Any]:
    """Start the probe as pod `pod` on `node` (it keeps serving its devices until deleted); what
    kubelet answered: {"registered": bool, "answer": kubelet's error or "", ...}."""
    args = [f"--resource-name={resource}", f"--devices={devices}"] + ([f"--api-version={version}"] if version else [])
    pods.create(api, namespace, _probe(lab, pod, node, *args))
    with _probe_must_start(api, namespace, pod):
        line = wait_for(
            f"kubelet's answer in the log of probe {pod}",
            lambda: next((ln for ln in _log(api, namespace, pod).splitlines() if ln.startswith("{")), None),
            60,
        )
    assert line is not None  # wait_for returns the first truthy answer
    return json.loads(line)


def proxy(lab: Lab, api, namespace: str, pod: str, node: str, resource: str, healthy: list[str]) -> list[Call]:
    """Start the recording proxy as pod `pod` on `node`, between the kubelet and the plugin of
    `resource` (the one listing `healthy`, the kubelet's healthy devices of it), and return its
    records once it registered. ObservationFailed (the harness's ERROR, not the plugin's FAIL)
    when it cannot take the plugin's place, with what it saw."""
    pods.create(api, namespace, _probe(lab, pod, node, f"--proxy-resource={resource}", f"--proxy-devices={','.join(healthy)}").once())

    def settled() -> list[Call] | None:
        seen = recorded(api, namespace, pod)
        return seen if calls.registered(seen) or calls.setup_failure(seen) else None

    with _probe_must_start(api, namespace, pod):
        seen = wait_for(f"proxy {pod} to register in the place of {resource}'s plugin on {node}", settled, 60)
    assert seen is not None  # wait_for returns the first truthy answer
    failure = calls.setup_failure(seen)
    if failure:
        raise ObservationFailed(f"proxy {pod} on {node}: {failure}")
    return seen


def delete(api, namespace: str, pod: str, timeout: float = 60) -> None:
    """The probe's pod gone (if it was ever created)."""
    core = client.CoreV1Api(api)
    try:
        core.delete_namespaced_pod(pod, namespace)
    except ApiException as e:
        if e.status != 404:  # never created
            raise
    wait_for(
        f"pod {namespace}/{pod} gone", lambda: pod not in {p.metadata.name for p in core.list_namespaced_pod(namespace).items}, timeout
    )


def recorded(api, namespace: str, pod: str) -> list[Call]:
    """The calls proxy `pod` has recorded so far."""
    return calls.parse(_log(api, namespace, pod))


@contextlib.contextmanager
def _probe_must_start(api, namespace: str, pod: str) -> Iterator[None]:
    """A wait on the probe that times out because the probe itself never started (its image is
    missing, say) is the harness's ERROR (ObservationFailed), not a FAIL of the plugin or kubelet."""
    try:
        yield
    except WaitTimeout:
        statuses = client.CoreV1Api(api).read_namespaced_pod(pod, namespace).status.container_statuses or []
        stuck = [
            f"{c.state.waiting.reason}: {c.state.waiting.message}"
            for c in statuses
            if c.state and c.state.waiting and c.state.waiting.reason in STUCK
        ]
        if stuck:
            raise ObservationFailed(f"probe {pod} never started: {'; '.join(stuck)}") from None
        raise


def _log(api, namespace: str, pod: str) -> str:
    try:
        return pods.logs(api, namespace, pod)
    except ApiException:  # the container has not started yet
        return ""
