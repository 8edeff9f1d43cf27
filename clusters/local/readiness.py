"""What "the lab is up" means: every kubelet node Ready, service accounts issued, Services programmed."""

from __future__ import annotations

from typing import Sequence

from clusters.local.node import LocalNode
from clusters.local.supervisor import Component
from clusters.local.waits import wait_for


def wait_cluster_ready(api, nodes: Sequence[LocalNode], components: Sequence[Component], timeout: float) -> None:
    """Wait until `nodes` are Ready and the cluster serves pods; a dead component among
    `components` ends the wait at once with its log (api: a kubernetes ApiClient)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    watch = list(components)

    def nodes_ready() -> bool:
        ready = {
            n.metadata.name
            for n in core.list_node().items
            if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
        }
        return all(n.name in ready for n in nodes)

    wait_for(f"nodes {', '.join(n.name for n in nodes)} to be Ready", nodes_ready, timeout, watch)
    wait_for(
        "the default ServiceAccount (controller-manager)",
        lambda: core.read_namespaced_service_account("default", "default") is not None,
        timeout,
        watch,
    )
    for node in nodes:
        node.wait_kube_proxy(timeout)
