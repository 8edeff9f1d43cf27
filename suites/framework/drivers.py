"""The driver under test as the suites see it: its profile, name and device class, and SKIP
for what it does not claim."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from basics.errors import HarnessError
from drivers_under_test.deploy import PROFILE_LABEL
from drivers_under_test.profile import Capability, DriverProfile
from suites.framework.claims import ClaimBuilder
from suites.framework.waits import driver_must


@dataclass(frozen=True)
class DriverUnderTest:
    profile: DriverProfile
    variant: str | None = None

    @property
    def name(self) -> str:
        return self.profile.drivers[0]

    @property
    def resource(self) -> str:
        """The extended resource a device plugin profile advertises."""
        return self.profile.extended_resources[0]

    @property
    def device_class(self) -> str:
        if not self.profile.device_classes:
            pytest.skip(f"driver profile {self.profile.name} names no device class to request its devices with")
        return self.profile.device_classes[0]

    def claim(self, name: str, count: int = 1, requests: tuple[str, ...] = ("dev",)) -> ClaimBuilder:
        """A claim with requests (one `dev`) for `count` devices each, with the profile's claim
        config, if any, on the first request (it configures one device: an interface name, say)."""
        claim = ClaimBuilder(name)
        for request in requests:
            claim.request(request, self.device_class, count=count)
        if self.profile.claim_config is not None:
            claim.opaque(self.name, self.profile.claim_config, requests=requests[:1])
        return claim

    def has(self, capability: Capability) -> bool:
        return self.profile.has(capability)

    def requires(self, *capabilities: Capability) -> None:
        missing = [c.value for c in capabilities if not self.profile.has(c)]
        if missing:
            pytest.skip(f"driver profile {self.profile.name} does not claim {', '.join(missing)}")

    def requires_dra(self) -> None:
        """SKIP a check of the DRA kubelet-plugin contract for a profile that names no DRA driver."""
        if not self.profile.drivers:
            pytest.skip(f"driver profile {self.profile.name} names no DRA driver (a device plugin only)")

    def requires_hardware(self, why: str) -> None:
        """SKIP a check that works on dralab's emulated hardware when the profile needs none."""
        if not self.profile.needs_hardware:
            pytest.skip(
                f"driver profile {self.profile.name} has hardware: none, and {why}: name the hardware "
                "profile the driver runs on in its profile to run this check"
            )

    def pods_on(self, api: client.ApiClient, node: str) -> list[Any]:
        """The driver's pods (of its profile's deployment) on `node`: V1Pods, typed Any as their
        metadata (name, namespace, uid) is Optional in the client though the API server sets it."""
        return (
            client.CoreV1Api(api)
            .list_namespaced_pod(
                self.profile.namespace, label_selector=f"{PROFILE_LABEL}={self.profile.name}", field_selector=f"spec.nodeName={node}"
            )
            .items
        )

    def restart_on(self, api: client.ApiClient, node: str, timeout: float = 90) -> None:
        """Delete the driver's pods on `node` and wait until their replacements are ready (the
        driver's to do)."""
        core = client.CoreV1Api(api)
        old = {p.metadata.uid for p in self.pods_on(api, node)}
        if not old:
            raise HarnessError(f"no pod of driver profile {self.profile.name} on {node} to restart (DEP-01 judges where it runs)")
        for pod in self.pods_on(api, node):
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace)

        def replaced() -> list[str]:
            pods = self.pods_on(api, node)
            ready = [
                p.metadata.name
                for p in pods
                if p.metadata.uid not in old and p.status.container_statuses and all(c.ready for c in p.status.container_statuses)
            ]
            return ready if len(ready) == len(old) and len(pods) == len(old) else []

        driver_must(f"{len(old)} new ready pod(s) of {self.profile.name} on {node}", replaced, timeout)
