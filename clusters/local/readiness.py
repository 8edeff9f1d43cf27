"""What "the lab is up" means: every kubelet node Ready, service accounts issued, Services programmed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusters.local.waits import wait_for

if TYPE_CHECKING:
    from clusters.local.cluster import LocalCluster


def wait_cluster_ready(cluster: "LocalCluster", timeout: float) -> None:
    from kubernetes import client

    core = client.CoreV1Api(cluster.api())
    components = cluster.components()
    watch = list(components.values())

    def nodes_ready() -> bool:
        ready = {n.metadata.name for n in core.list_node().items
                 if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])}
        return all(n.name in ready for n in cluster.nodes)

    wait_for(f"nodes {', '.join(n.name for n in cluster.nodes)} to be Ready", nodes_ready, timeout, watch)
    wait_for("the default ServiceAccount (controller-manager)",
             lambda: core.read_namespaced_service_account("default", "default") is not None, timeout, watch)
    for node in cluster.nodes:
        node.wait_kube_proxy(timeout)
