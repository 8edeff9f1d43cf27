"""The registration probe (drivers_under_test/cmd/dp-probe) run as a pod on a node: it registers
with the node's kubelet under any API version and resource name and prints kubelet's answer."""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client.rest import ApiException

from clusters.providers import Lab
from drivers_under_test.deploy import lab_parameters
from suites.framework import pods
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

# kubelet serves its Registration socket here whatever its --root-dir (deviceplugin/v1beta1.KubeletSocket).
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


def register(lab: Lab, api, namespace: str, pod: str, node: str, resource: str, version: str | None = None,
             devices: int = 2) -> dict[str, Any]:
    """Start the probe as pod `pod` on `node` (it keeps serving its devices until deleted); what
    kubelet answered: {"registered": bool, "answer": kubelet's error or "", ...}."""
    args = [f"--resource-name={resource}", f"--devices={devices}"] + ([f"--api-version={version}"] if version else [])
    builder = (PodBuilder(pod, image=lab_parameters(lab)["DRIVERS_IMAGE"]).on_node(node)
               .running("/usr/local/bin/dp-probe", *args)
               .with_volume({"name": "device-plugins", "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}},
                            DEVICE_PLUGIN_DIR))
    pods.create(api, namespace, builder)
    line = wait_for(f"kubelet's answer in the log of probe {pod}", lambda: next(
        (ln for ln in _log(api, namespace, pod).splitlines() if ln.startswith("{")), None), 60)
    return json.loads(line)


def _log(api, namespace: str, pod: str) -> str:
    try:
        return pods.logs(api, namespace, pod)
    except ApiException:  # the container has not started yet
        return ""
