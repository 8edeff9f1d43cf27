"""KP-10's observations: the two ways a driver may tell of a device's fault, in the status of the
pods using it (the KEP-4680 health stream, as the kubelet shows it) or in its slice (the device
withdrawn or tainted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client

from suites.kubelet_plugin import contract, observe


def published(api: client.ApiClient, driver: str, pool: str, name: str) -> dict[str, Any] | None:
    """The device as the driver's slices of its pool's newest generation publish it, None if they do not."""
    current = contract.current_pools(observe.driver_slices(api, driver)).get(pool, [])
    return next((d for s in current for d in s["spec"].get("devices") or [] if d["name"] == name), None)


@dataclass(frozen=True)
class Seen:
    """A device's health as a pod using it and the driver's slices show it."""

    in_pod: tuple[str | None, ...]  # health of the claim's resources in the pod's allocatedResourcesStatus (Optional there)
    in_slice: str  # "published", "tainted" or "withdrawn"

    def unhealthy(self) -> str | None:
        """How the fault shows, None if it does not."""
        if "Unhealthy" in self.in_pod:
            return "the pod's allocatedResourcesStatus says Unhealthy"
        return None if self.in_slice == "published" else f"the device is {self.in_slice} in the slice"

    def healthy(self, stream: bool) -> bool:
        """Shown healthy again: published untainted and, where the pod was told, Healthy there."""
        return self.in_slice == "published" and (
            bool(self.in_pod) and set(self.in_pod) == {"Healthy"} if stream else "Unhealthy" not in self.in_pod
        )


def seen(api: client.ApiClient, driver: str, namespace: str, pod: str, pod_claim: str, pool: str, name: str) -> Seen:
    statuses = client.CoreV1Api(api).read_namespaced_pod(pod, namespace).status.container_statuses or []
    health = tuple(
        r.health
        for c in statuses
        for s in c.allocated_resources_status or []
        if s.name.split("/")[0] == f"claim:{pod_claim}"
        for r in s.resources or []
    )
    device = published(api, driver, pool, name)
    state = "withdrawn" if device is None else "tainted" if device.get("taints") else "published"
    return Seen(health, state)
