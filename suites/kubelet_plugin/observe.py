"""What the KP checks read from the cluster and the nodes: the driver's ResourceSlices once they
settle, and per node the kubelet's DRA checkpoint with the CDI specs as they stand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.providers import Lab
from suites.framework import cdi_specs, claims, dra_checkpoint
from suites.framework.dra_checkpoint import PreparedClaim
from suites.framework.node_files import NodeFiles
from suites.framework.pods import ObservationFailed
from suites.framework.waits import driver_must
from suites.kubelet_plugin import contract

# Slices are read until two reads this far apart agree: a driver republishing (a new generation)
# is judged on what it settles on, not on a read in the middle of the update.
SETTLE = 3


def driver_slices(api: client.ApiClient, driver: str) -> list[dict[str, Any]]:
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
    return [s for s in items if s["spec"]["driver"] == driver]


def settled_slices(api: client.ApiClient, driver: str, timeout: float = 60) -> list[dict[str, Any]]:
    """The driver's slices once two looks SETTLE apart see the same versions: the driver's to
    publish, and to stop rewriting."""
    seen: list[list[tuple[str, str]]] = []

    def same_twice() -> list[dict[str, Any]] | None:
        slices = driver_slices(api, driver)
        versions = sorted((s["metadata"]["name"], s["metadata"]["resourceVersion"]) for s in slices)
        settled = bool(seen) and seen[-1] == versions
        seen.append(versions)
        return slices if settled else None

    return driver_must(f"the ResourceSlices of {driver} to settle", same_twice, timeout, interval=SETTLE)


@dataclass(frozen=True)
class NodePool:
    """A pool of the driver's that is local to one node, with the device names it publishes."""

    node: str
    pool: str
    devices: frozenset[str]


def node_pools(slices: list[dict[str, Any]]) -> list[NodePool]:
    """The driver's node-local pools (the slices of their newest generation), by node then pool name."""
    pools = [
        NodePool(
            node, pool, frozenset(d["name"] for s in current if s["spec"].get("nodeName") == node for d in s["spec"].get("devices") or [])
        )
        for pool, current in contract.current_pools(slices).items()
        for node in {s["spec"]["nodeName"] for s in current if s["spec"].get("nodeName")}
    ]
    return sorted(pools, key=lambda p: (p.node, p.pool))


def node_names(api: client.ApiClient) -> set[str]:
    return {n.metadata.name for n in client.CoreV1Api(api).list_node().items}  # type: ignore[misc]  # a listed node has a name


@dataclass
class NodeState:
    """A node's prepared claims (as the kubelet holds them in its checkpoint) and CDI specs, read together."""

    node: str
    checkpoint: str  # the kubelet's DRA checkpoint file on the node
    prepared: list[PreparedClaim]
    specs: dict[str, dict[str, Any]]

    def running_claim(self, uid: str, namespace: str, claim: str, pod: str) -> PreparedClaim:
        """Claim `namespace/claim` (`uid`) of running pod `namespace/pod` as the kubelet holds it.
        The kubelet writes its checkpoint, not the driver: a running pod's claim missing from it
        is nothing the driver did, and leaves the check nothing to judge (ObservationFailed, an
        ERROR, never the driver's FAIL)."""
        found = next((c for c in self.prepared if c.uid == uid), None)
        if found is None:
            raise ObservationFailed(
                f"claim {namespace}/{claim} ({uid}) of running pod {namespace}/{pod} is not in {self.node}'s "
                f"kubelet DRA checkpoint {self.checkpoint}"
            )
        return found


def _checkpoint(lab: Lab, node: str) -> str:
    return dra_checkpoint.path(lab.node(node).kubelet_root_dir)


def prepared_claims(files: NodeFiles, lab: Lab, node: str) -> list[PreparedClaim]:
    where = _checkpoint(lab, node)
    text = files.read(node, where)
    if text is None:
        raise ObservationFailed(f"{node} has no kubelet DRA checkpoint at {where}")
    return dra_checkpoint.parse(text)


def node_state(files: NodeFiles, lab: Lab, node: str) -> NodeState:
    """The claims prepared on the node before and still after its CDI specs were read: a claim
    unprepared meanwhile may have lost its spec legitimately, one prepared meanwhile may be
    missing from the read of the specs."""
    before = {c.uid for c in prepared_claims(files, lab, node)}
    specs = cdi_specs.on_node(files, node)
    return NodeState(node, _checkpoint(lab, node), [c for c in prepared_claims(files, lab, node) if c.uid in before], specs)


def _claim_of(api: client.ApiClient, prepared: PreparedClaim) -> dict[str, Any] | None:
    """The claim as the API server has it now; None if it is gone or is another object by now."""
    try:
        claim = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "resource.k8s.io", "v1", prepared.namespace, "resourceclaims", prepared.name
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    return claim if claim["metadata"]["uid"] == prepared.uid else None


def allocation_of(api: client.ApiClient, lab: Lab, prepared: PreparedClaim) -> list[dict[str, Any]]:
    """The allocation results of a claim the kubelet holds as prepared: as the API server has
    them, the same as at its prepare while a pod uses it; once the claim is gone or deallocated
    (its last pod deleting), as the claim log last saw them; none where neither knows them."""
    if results := claims.allocated(_claim_of(api, prepared)):
        return results
    versions = lab.claim_history().get(prepared.uid, [])
    return next((found for v in reversed(versions) if (found := claims.allocated(v))), [])
