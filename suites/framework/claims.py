"""ResourceClaims as tests write them: requests by device class, opaque driver config; and
reading back what the scheduler allocated and what drivers reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client


@dataclass
class ClaimBuilder:
    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    config: list[dict[str, Any]] = field(default_factory=list)

    def request(self, name: str, device_class: str, count: int = 1) -> "ClaimBuilder":
        self.requests.append({"name": name, "exactly": {"deviceClassName": device_class, "count": count}})
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
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": self.name}, "spec": {"devices": devices}}


def create(api: client.ApiClient, namespace: str, claim: ClaimBuilder) -> str:
    client.ResourceV1Api(api).create_namespaced_resource_claim(namespace, claim.build())
    return claim.name


def read(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The claim as plain JSON (status fields newer than the client's models stay intact)."""
    return client.CustomObjectsApi(api).get_namespaced_custom_object(
        "resource.k8s.io", "v1", namespace, "resourceclaims", name)


def allocated(claim: dict[str, Any], driver: str | None = None) -> list[dict[str, Any]]:
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    return [r for r in results if driver is None or r["driver"] == driver]


def device_status(claim: dict[str, Any], driver: str | None = None) -> list[dict[str, Any]]:
    return [d for d in (claim.get("status") or {}).get("devices", []) if driver is None or d["driver"] == driver]
