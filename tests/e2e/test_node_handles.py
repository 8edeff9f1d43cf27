"""Node handles of the local provider: restarting a node's kubelet and containerd, as restart tests do."""

from __future__ import annotations

import pytest
from kubernetes import client

from clusters.providers import Lab
from suites.framework import pods
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e


def node_ready(api, name: str) -> bool:
    node = client.CoreV1Api(api).read_node(name)
    return {c.type: c.status for c in node.status.conditions}.get("Ready") == "True"


@pytest.mark.requirement("LAB-02")
def test_restarting_kubelet_and_containerd_keeps_running_pods(local_only: Lab, api, namespace: str) -> None:
    node = local_only.local_node(local_only.nodes[0].name)
    pod = pods.run(api, namespace, PodBuilder("survivor").on_node(node.name))
    old_kubelet, old_containerd = node.component("kubelet").pid, node.component("containerd").pid

    node.restart_containerd()
    node.restart_kubelet()

    assert node.component("kubelet").pid != old_kubelet and node.component("kubelet").alive()
    assert node.component("containerd").pid != old_containerd and node.component("containerd").alive()
    wait_for(f"{node.name} Ready after the restarts", lambda: node_ready(api, node.name), 60)
    # The kubelet must also be serving again (exec goes API server -> kubelet -> containerd).
    result = wait_for(
        "exec into the pod through the restarted kubelet and containerd",
        lambda: (r := pods.exec_in(local_only, namespace, "survivor", "echo", "alive")).returncode == 0 and r,
        60,
    )
    assert result.stdout.strip() == "alive"
    after = client.CoreV1Api(api).read_namespaced_pod("survivor", namespace)
    assert after.metadata.uid == pod.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0, "the container was restarted"
