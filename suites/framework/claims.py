"""ResourceClaims as tests write them: requests by device class, opaque driver config; and
reading back what the scheduler allocated and what drivers reported."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kubernetes import client
from kubernetes.client.rest import ApiException

from suites.framework.waits import wait_for


@dataclass
class ClaimBuilder:
    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    config: list[dict[str, Any]] = field(default_factory=list)
    constraints: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def exactly(device_class: str, count: int = 1, selector: str | None = None, derived: dict[str, str] | None = None) -> dict[str, Any]:
        """What a request (or a firstAvailable subrequest) asks for: `count` devices of the class;
        `selector` is a CEL expression, `derived` maps derived attribute names to their CEL
        expressions (KEP-6080)."""
        exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
        if selector:
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        if derived:
            exactly["derivedAttributes"] = [{"name": n, "expression": e} for n, e in derived.items()]
        return exactly

    def request(
        self, name: str, device_class: str, count: int = 1, selector: str | None = None, derived: dict[str, str] | None = None
    ) -> "ClaimBuilder":
        self.requests.append({"name": name, "exactly": self.exactly(device_class, count, selector, derived)})
        return self

    def first_available(self, name: str, subrequests: dict[str, dict[str, Any]]) -> "ClaimBuilder":
        """A request served by the first of its subrequests (name -> ClaimBuilder.exactly(...)) that can be."""
        self.requests.append({"name": name, "firstAvailable": [{"name": n, **e} for n, e in subrequests.items()]})
        return self

    def constraint(self, requests: list[str], match: str | None = None, distinct: str | None = None) -> "ClaimBuilder":
        entry: dict[str, Any] = {"requests": requests}
        if match:
            entry["matchAttribute"] = match
        if distinct:
            entry["distinctAttribute"] = distinct
        self.constraints.append(entry)
        return self

    def opaque(self, driver: str, parameters: dict[str, Any], requests: tuple[str, ...] = ()) -> "ClaimBuilder":
        entry: dict[str, Any] = {"opaque": {"driver": driver, "parameters": parameters}}
        if requests:
            entry["requests"] = list(requests)
        self.config.append(entry)
        return self

    def build(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"requests": self.requests}
        if self.config:
            devices["config"] = self.config
        if self.constraints:
            devices["constraints"] = self.constraints
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": self.name}, "spec": {"devices": devices}}


def create(api: client.ApiClient, namespace: str, claim: ClaimBuilder) -> str:
    client.ResourceV1Api(api).create_namespaced_resource_claim(namespace, claim.build())  # type: ignore[arg-type]  # a dict: validate_call builds the model
    return claim.name


def delete(api: client.ApiClient, namespace: str, name: str, timeout: float = 30) -> None:
    """Delete the claim and wait until it is gone (its name is free again)."""
    client.ResourceV1Api(api).delete_namespaced_resource_claim(name, namespace)

    def gone() -> bool:
        try:
            read(api, namespace, name)
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        return False

    wait_for(f"claim {namespace}/{name} deleted", gone, timeout)


def read(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The claim as plain JSON (status fields newer than the client's models stay intact)."""
    return client.CustomObjectsApi(api).get_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaims", name)


def listed(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """Every claim in the namespace, as plain JSON."""
    return client.CustomObjectsApi(api).list_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaims")["items"]


def listed_everywhere(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every claim of the cluster, as plain JSON."""
    return client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")["items"]


def read_when(api: client.ApiClient, namespace: str, name: str, condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The claim if it meets `condition` now, else None (for wait_for)."""
    claim = read(api, namespace, name)
    return claim if condition(claim) else None


def derived_attributes(claim: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """request name -> its derivedAttributes as stored (requests without any are left out)."""
    return {
        r["name"]: r["exactly"]["derivedAttributes"]
        for r in claim["spec"]["devices"]["requests"]
        if "derivedAttributes" in r.get("exactly", {})
    }


def allocated(claim: dict[str, Any] | None, driver: str | None = None) -> list[dict[str, Any]]:
    """A claim's (or a claim log record's) allocation results, of `driver` if given; none while it
    is not allocated, or for no claim."""
    results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [r for r in results if driver is None or r["driver"] == driver]


def results_used(
    record: dict[str, Any], by_uid: dict[str, dict[str, Any]], driver: str
) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
    """(the pod's claim reference, allocation result) of each device of `driver` that the container
    of `record` (Lab.container_files) uses: of the claims it names, the requests it names (all
    without one). `by_uid`: each allocated claim by UID, as the claim log last saw it; None if
    the allocation of a claim it uses is not known."""
    pod_claims = {c["name"]: c for c in record["pod_claims"]}
    used = []
    for use in record["uses"]:
        ref = pod_claims.get(use["name"])
        claim = by_uid.get((ref or {}).get("uid") or "")
        if claim is None or ref is None:  # no ref: no claim either
            return None
        used += [(ref, r) for r in allocated(claim, driver) if use.get("request") in (None, base_request(r["request"]))]
    return used


def base_request(request: str) -> str:
    """A result's request without its subrequest (`gpu/big` is of request `gpu`)."""
    return request.split("/", 1)[0]


def device_status(claim: dict[str, Any], driver: str | None = None) -> list[dict[str, Any]]:
    return [d for d in (claim.get("status") or {}).get("devices", []) if driver is None or d["driver"] == driver]


def write_status(api: client.ApiClient, claim: dict[str, Any], devices: list[dict[str, Any]], **status_changes: Any) -> dict[str, Any]:
    """Replace status.devices (and any other status fields given) of `claim` (as read) with an
    update of the status subresource, made as `api` acts; ApiException if refused."""
    meta = claim["metadata"]
    body = {**claim, "status": {**(claim.get("status") or {}), "devices": devices, **status_changes}}
    return client.CustomObjectsApi(api).replace_namespaced_custom_object_status(
        "resource.k8s.io", "v1", meta["namespace"], "resourceclaims", meta["name"], body
    )


def allocate_by_hand(
    api: client.ApiClient,
    claim: dict[str, Any],
    results: list[dict[str, Any]],
    node: str,
    pod: client.V1Pod,
    devices: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Write `results` as the claim's (as read) allocation on `node`, reserved for `pod`, as the
    scheduler writes one (its classes' and its own configs copied in), with status entries
    `devices` (as their drivers would write them): for allocations the scheduler never makes, such
    as a device no slice publishes, or a status written before any driver prepares the claim, to a
    pod bound by spec.nodeName."""
    config = []
    for request in claim["spec"]["devices"]["requests"]:
        device_class = (request.get("exactly") or {}).get("deviceClassName")
        if device_class:
            spec = client.CustomObjectsApi(api).get_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", device_class)["spec"]
            config += [{"source": "FromClass", "requests": [request["name"]], **c} for c in spec.get("config") or []]
    config += [{"source": "FromClaim", **c} for c in claim["spec"]["devices"].get("config") or []]
    node_selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return write_status(
        api,
        claim,
        list(devices),
        allocation={"devices": {"results": results, "config": config}, "nodeSelector": node_selector},
        reservedFor=[{"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid}],
    )


def apply_status(api: client.ApiClient, namespace: str, name: str, devices: list[dict[str, Any]], manager: str) -> dict[str, Any]:
    """Server-side apply of status.devices entries as field manager `manager`."""
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "status": {"devices": devices}}
    return client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        "resource.k8s.io",
        "v1",
        namespace,
        "resourceclaims",
        name,
        body,
        field_manager=manager,
        force=True,
        _content_type="application/apply-patch+yaml",
    )


def refusal(e: ApiException) -> str | None:
    """Why the API server refused a status write for lack of permission; None for other errors.
    RBAC answers 403 Forbidden; the per-driver check of status.devices (resourceclaims/driver)
    answers 422 Invalid with a FieldValueForbidden cause."""
    body = json.loads(e.body or "{}")
    if e.status == 403:
        return f"403 {body.get('message', e.reason)}"
    causes = (body.get("details") or {}).get("causes") or []
    if e.status == 422 and any(c.get("reason") == "FieldValueForbidden" for c in causes):
        return f"422 {body.get('message')}"
    return None
