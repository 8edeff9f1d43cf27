"""The DA checks: claims with derived attributes, scheduled by the real kube-scheduler; what is
asserted is the allocation it wrote into the claim's status."""

from __future__ import annotations

from typing import Any

from clusters.pytest_plugin import Evidence
from suites.derived_attributes.topology import DERIVED_NUMA, GPU, NIC, numa_of
from suites.framework import claims, pods
from suites.framework.claims import ClaimBuilder

SCHEDULE_TIMEOUT = 30


def schedule(api, namespace: str, claim: ClaimBuilder, node: str, ev: Evidence) -> dict[str, Any]:
    """The claim as the scheduler allocated it for a pod on `node` (AssertionError with the pod's
    events if it did not within the timeout)."""
    try:
        allocated = pods.allocate_through(api, namespace, claim, node, pod=claim.name, timeout=SCHEDULE_TIMEOUT)
    except AssertionError:
        ev.add("pod events", pods.events(api, namespace, claim.name))
        raise
    ev.add("allocation", claims.allocated(allocated))
    return allocated


def paired(claim: dict[str, Any]) -> dict[str, str]:
    return {r["request"]: r["device"] for r in claims.allocated(claim)}


def numa_pair(nic_attribute: str = "numaNode") -> ClaimBuilder:
    """GPU request limited to the NUMA-1 GPU; NIC request bridged to it by a derived attribute.
    `nic_attribute` is what the NIC side derives from (a wrong one makes the self-check's claim)."""
    return (ClaimBuilder("numa-pair")
            .request("gpu", GPU, selector=f"{numa_of(GPU, 'numa')} == 1", derived={DERIVED_NUMA: numa_of(GPU, "numa")})
            .request("nic", NIC, derived={DERIVED_NUMA: numa_of(NIC, nic_attribute)})
            .constraint(["gpu", "nic"], match=DERIVED_NUMA))


def derived_pairs_matching_devices(api, namespace: str, node: str, ev: Evidence,
                                   claim: ClaimBuilder | None = None) -> None:  # DA-01
    allocated = schedule(api, namespace, claim or numa_pair(), node, ev)
    assert paired(allocated) == {"gpu": "gpu-1", "nic": "nic-0"}, \
        f"want gpu-1 (numa 1) with nic-0 (numaNode 1); the scheduler paired {paired(allocated)}"
