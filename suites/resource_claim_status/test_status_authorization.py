"""KEP-4817 authorization of status.devices writes (ST-04), cell by cell, each asserted from the
API server's real answer to a real identity: service-account tokens from the TokenRequest API,
bound to a pod on the claim's node, on the other node or to no pod; and the kubelet's own
credentials. Each cell grants its own service account exactly what the cell says."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.providers import Capability, Lab
from suites.framework.evidence import Evidence
from suites.framework import claims, identities, pods, spec_drift
from suites.framework.spec_drift import Drift
from suites.framework.waits import wait_for
from suites.resource_claim_status.conftest import DRIVER_A, DRIVER_B, PublishedOnly, allocated_claim, entry, published

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("ST-04")]

ASSOCIATED = ["associated-node:update", "associated-node:patch"]
ARBITRARY = ["arbitrary-node:update", "arbitrary-node:patch"]


@dataclass(frozen=True)
class Cell:
    driver_verbs: list[str]  # on resourceclaims/driver, resourceName DRIVER_A
    token: str  # "claim's node" | "other node" | "no pod"
    writes: str  # "A entry" | "B entry" | "A entry by patch" | "reservedFor"
    allowed: bool
    binding: bool = False  # update|patch on resourceclaims/binding
    extra_rules: list[dict[str, Any]] = field(default_factory=list)


CELLS = {
    "associated-node, token of the claim's node, own entry": Cell(ASSOCIATED, "claim's node", "A entry", True),
    "associated-node, token of the other node": Cell(ASSOCIATED, "other node", "A entry", False),
    "associated-node, token bound to no pod": Cell(ASSOCIATED, "no pod", "A entry", False),
    "arbitrary-node, token bound to no pod": Cell(ARBITRARY, "no pod", "A entry", True),
    "arbitrary-node, token of the other node": Cell(ARBITRARY, "other node", "A entry", True),
    "permission for driver A, entry of driver B": Cell(ASSOCIATED, "claim's node", "B entry", False),
    "associated-node:patch, written by patch": Cell(["associated-node:patch"], "claim's node", "A entry by patch", True),
    "associated-node:patch only, written by update": Cell(["associated-node:patch"], "claim's node", "A entry", False),
    "status update but no driver permission": Cell([], "claim's node", "A entry", False),
    "driver permission, reservedFor without binding": Cell(ASSOCIATED, "claim's node", "reservedFor", False),
    "driver permission and binding, reservedFor": Cell(ASSOCIATED, "claim's node", "reservedFor", True, binding=True),
    "the KEP's drivers/update-device-status permission": Cell(
        [],
        "claim's node",
        "A entry",
        False,
        extra_rules=[
            {"apiGroups": ["resource.k8s.io"], "resources": ["drivers"], "resourceNames": [DRIVER_A], "verbs": ["update-device-status"]}
        ],
    ),
}


def _bind_role(api, namespace: str, name: str, rules: list[dict[str, Any]], subjects: list[dict[str, Any]]) -> None:
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})  # type: ignore[arg-type]  # a dict: validate_call builds the model
    rbac.create_namespaced_role_binding(
        namespace,
        {  # type: ignore[arg-type]  # a dict: validate_call builds the model
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subjects,
        },
    )


def _wait_rbac_in_effect(as_identity: client.ApiClient, namespace: str) -> None:
    """RBAC is read from an informer: wait until the identity's status-update permission is visible."""
    wait_for(
        "the identity's RBAC in effect",
        lambda: (
            client.AuthorizationV1Api(as_identity)
            .create_self_subject_access_review(
                {  # type: ignore[arg-type]  # a dict: validate_call builds the model
                    "spec": {
                        "resourceAttributes": {
                            "group": "resource.k8s.io",
                            "resource": "resourceclaims",
                            "subresource": "status",
                            "verb": "update",
                            "namespace": namespace,
                        }
                    }
                }
            )
            .status.allowed
        ),
        10,
    )


def _grant(api, namespace: str, name: str, cell: Cell, cleanup: list[Callable[[], object]]) -> None:
    rules = [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["update", "patch"]},
        *cell.extra_rules,
    ]
    if cell.driver_verbs:
        rules.append(
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims/driver"],
                "resourceNames": [DRIVER_A],
                "verbs": cell.driver_verbs,
            }
        )
    subjects = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    _bind_role(api, namespace, name, rules, subjects)
    rbac = client.RbacAuthorizationV1Api(api)
    if cell.binding:  # checked at cluster scope (no namespace): a Role cannot grant it
        cluster_name = f"{namespace}-{name}-binding"
        rbac.create_cluster_role(
            {  # type: ignore[arg-type]  # a dict: validate_call builds the model
                "metadata": {"name": cluster_name},
                "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/binding"], "verbs": ["update", "patch"]}],
            }
        )
        rbac.create_cluster_role_binding(
            {  # type: ignore[arg-type]  # a dict: validate_call builds the model
                "metadata": {"name": cluster_name},
                "subjects": subjects,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
            }
        )
        cleanup.append(lambda: (rbac.delete_cluster_role_binding(cluster_name), rbac.delete_cluster_role(cluster_name)))


def _identity(api, lab: Lab, namespace: str, name: str, node: str | None) -> client.ApiClient:
    """A client acting as service account `name`, its token bound to a pod on `node` (or to none)."""
    client.CoreV1Api(api).create_namespaced_service_account(namespace, {"metadata": {"name": name}})  # type: ignore[arg-type]  # a dict: validate_call builds the model
    holder = None
    if node is not None:  # bound to the node directly: this pod only carries the identity
        pod = pods.PodBuilder(f"{name}-token").build()
        pod["spec"].update(serviceAccountName=name, nodeName=node, tolerations=[{"operator": "Exists"}])
        client.CoreV1Api(api).create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]  # a dict: validate_call builds the model
        holder = client.CoreV1Api(api).read_namespaced_pod(f"{name}-token", namespace)
    return identities.acting_as(lab.kubeconfig, identities.token(api, namespace, name, holder))


def _attempt(as_identity: client.ApiClient, claim: dict[str, Any], writes: str) -> str:
    """Make the write; "allowed", or "denied: <the API server's message>"."""
    stamp = {"data": {"attempt": uuid.uuid4().hex}}  # every attempt changes the entry
    try:
        if writes == "A entry by patch":
            meta = claim["metadata"]
            client.CustomObjectsApi(as_identity).patch_namespaced_custom_object_status(
                "resource.k8s.io",
                "v1",
                meta["namespace"],
                "resourceclaims",
                meta["name"],
                {"status": {"devices": [entry(claim, DRIVER_A, **stamp)]}},
                _content_type="application/merge-patch+json",
            )
        elif writes == "reservedFor":
            phantom = {"resource": "pods", "name": "phantom", "uid": str(uuid.uuid4())}
            claims.write_status(
                as_identity, claim, claim["status"].get("devices", []), reservedFor=[*claim["status"]["reservedFor"], phantom]
            )
        else:
            driver = DRIVER_A if writes == "A entry" else DRIVER_B
            claims.write_status(as_identity, claim, [entry(claim, driver, **stamp)])
        return "allowed"
    except ApiException as e:
        if (why := claims.refusal(e)) is None:
            raise
        return f"denied: {why}"


@pytest.fixture
def cluster_objects() -> Iterator[list[Callable[[], object]]]:
    """Deleters of the cluster-scoped objects a cell creates, run after it."""
    deleters: list[Callable[[], object]] = []
    yield deleters
    for delete in deleters:
        delete()


@pytest.mark.parametrize("cell", CELLS, ids=list(CELLS))
def test_authorization_cell(
    cell: str,
    lab: Lab,
    api,
    published_only: PublishedOnly,
    holders_namespace: str,
    cluster_objects: list[Callable[[], object]],
    evidence: Evidence,
    request,
) -> None:
    spec = CELLS[cell]
    claim_node, other_node = published_only.nodes
    allocated_claim(api, holders_namespace, "authz", claim_node)
    _grant(api, holders_namespace, "writer", spec, cluster_objects)
    node = {"claim's node": claim_node, "other node": other_node, "no pod": None}[spec.token]
    as_writer = _identity(api, lab, holders_namespace, "writer", node)
    user = identities.who_am_i(as_writer)
    evidence.add("identity", user)
    _wait_rbac_in_effect(as_writer, holders_namespace)
    answer = _attempt(as_writer, claims.read(api, holders_namespace, "authz"), spec.writes)
    evidence.add("answer", answer)
    assert answer.startswith("allowed" if spec.allowed else "denied"), (
        f"{cell}: want {'allowed' if spec.allowed else 'denied'}, the API server {answer}"
    )
    if spec.extra_rules:
        spec_drift.record(
            request,
            Drift(
                "KEP-4817",
                "status write permission",
                "verb update-device-status on resource drivers (resourceName: the driver)",
                f"that permission does not authorize the write ({answer[:120]}); shipped "
                "clusters check associated-node:/arbitrary-node: verbs on resourceclaims/driver",
            ),
        )
    assert node is None or user["extra"].get("authentication.kubernetes.io/node-name") == [node], (
        f"the token does not carry node {node}: {user}"
    )


def test_authorization_cell_kubelet_of_the_claims_node(
    lab: Lab, api, published_only: PublishedOnly, holders_namespace: str, evidence: Evidence
) -> None:
    """The kubelet's own identity is not "associated", even with associated-node: granted to it."""
    lab.require(Capability.HOST_ACCESS, "writing as the node's kubelet (its credentials)")
    node = lab.nodes[0].name
    with published(api, [node]):
        _kubelet_writes(lab, api, node, holders_namespace, evidence)


def _kubelet_writes(lab: Lab, api, node: str, holders_namespace: str, evidence: Evidence) -> None:
    allocated_claim(api, holders_namespace, "authz-kubelet", node)
    rules = [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["update", "patch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"], "resourceNames": [DRIVER_A], "verbs": ASSOCIATED},
    ]
    _bind_role(
        api,
        holders_namespace,
        "kubelet-writer",
        rules,
        [{"kind": "User", "name": f"system:node:{node}", "apiGroup": "rbac.authorization.k8s.io"}],
    )
    as_kubelet = identities.acting_as(lab.node(node).kubelet_kubeconfig)
    evidence.add("identity", identities.who_am_i(as_kubelet))
    _wait_rbac_in_effect(as_kubelet, holders_namespace)
    answer = _attempt(as_kubelet, claims.read(api, holders_namespace, "authz-kubelet"), "A entry")
    evidence.add("answer", answer)
    assert answer.startswith("denied"), f"the kubelet of {node} wrote driver {DRIVER_A}'s entry: {answer}"
