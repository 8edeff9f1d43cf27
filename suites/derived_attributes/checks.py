"""The DA checks: claims with derived attributes, scheduled by the real kube-scheduler; what is
asserted is the allocation it wrote into the claim's status, or the pod's scheduling events."""

from __future__ import annotations

from typing import Any

from suites.framework.evidence import Evidence
from suites.derived_attributes.gates import DERIVED, remedy
from suites.derived_attributes.topology import DERIVED_NUMA, GPU, NIC, attribute
from suites.framework import claims, pods
from suites.framework.claims import ClaimBuilder
from suites.framework.verdicts import require
from suites.framework.waits import TooSlowToJudge, WaitTimeout, wait_for

SCHEDULE_TIMEOUT = 30
# The scheduler's answer to derived attributes while its DRADerivedAttributes gate is off.
SCHEDULER_GATE_OFF = "cannot handle request with derived attributes, the feature is disabled"


def skip_if_scheduler_gate_off(events: str) -> None:
    require(
        SCHEDULER_GATE_OFF not in events,
        f"feature gate {DERIVED} is off in kube-scheduler (its event: {SCHEDULER_GATE_OFF!r})",
        remedy(DERIVED, "kube-scheduler"),
    )


GPU_1 = f"{attribute(GPU, 'index')} == 1"  # the selector of the one NUMA-1 GPU


def schedule(api, namespace: str, claim: ClaimBuilder, node: str | None, ev: Evidence) -> dict[str, Any]:
    """The claim as the scheduler allocated it for a pod on `node` (None: any node). Not allocated
    within the timeout: an AssertionError where the scheduler said why (FailedScheduling: its
    answer, the subject's FAIL), else the WaitTimeout (no answer, no verdict)."""
    try:
        allocated = pods.allocate_through(api, namespace, claim, node, pod=claim.name, timeout=SCHEDULE_TIMEOUT)
    except WaitTimeout as e:
        events = pods.events(api, namespace, claim.name)
        ev.add("pod events", events)
        skip_if_scheduler_gate_off(events)
        if "FailedScheduling" in events and not isinstance(e, TooSlowToJudge):
            raise AssertionError(f"the scheduler did not allocate claim {claim.name}: {e}") from None
        raise
    ev.add("allocation", claims.allocated(allocated))
    ev.observe("allocated", ", ".join(f"{r['request']}={r['pool']}/{r['device']}" for r in claims.allocated(allocated)))
    return allocated


def scheduling_failure(api, namespace: str, claim: ClaimBuilder, node: str | None, reason: str, ev: Evidence) -> str:
    """The pod's FailedScheduling event that contains `reason`, for a claim the scheduler must not
    allocate (AssertionError if it allocates it; a WaitTimeout if neither comes)."""
    pods.create_with_claim(api, namespace, claim, claim.name, node)

    def failed() -> str | None:
        seen = pods.events(api, namespace, claim.name)
        if allocated := claims.allocated(claims.read(api, namespace, claim.name)):
            raise AssertionError(f"the scheduler allocated {allocated} to claim {claim.name}, which it must not ({seen})")
        return next((line for line in seen.splitlines() if "FailedScheduling" in line and reason in line), None)

    try:
        event = wait_for(f"a FailedScheduling event of pod {claim.name} saying {reason!r}", failed, SCHEDULE_TIMEOUT)
    except WaitTimeout:
        if reason not in SCHEDULER_GATE_OFF:
            skip_if_scheduler_gate_off(pods.events(api, namespace, claim.name))
        raise
    finally:
        ev.add("pod events", pods.events(api, namespace, claim.name))
    ev.observe("scheduling failed", event)
    allocated = claims.allocated(claims.read(api, namespace, claim.name))
    assert not allocated, f"the scheduler failed the pod ({event}) yet allocated {allocated}"
    assert event is not None  # wait_for returns the first truthy answer
    return event


def paired(claim: dict[str, Any]) -> dict[str, str]:
    return {r["request"]: r["device"] for r in claims.allocated(claim)}


def bridged(
    name: str, gpu_expression: str, peer_expression: str, peer_class: str = NIC, derived: str = DERIVED_NUMA, match: bool = True
) -> ClaimBuilder:
    """Request `gpu` (the NUMA-1 GPU) and request `peer` (one device of `peer_class`), each
    deriving `derived` by its expression; one constraint on it, matchAttribute or distinctAttribute."""
    return (
        ClaimBuilder(name)
        .request("gpu", GPU, selector=GPU_1, derived={derived: gpu_expression})
        .request("peer", peer_class, derived={derived: peer_expression})
        .constraint(["gpu", "peer"], **{"match" if match else "distinct": derived})
    )


def numa_pair(nic_attribute: str = "numaNode") -> ClaimBuilder:
    """The NIC bridged to the NUMA-1 GPU by a derived attribute. `nic_attribute` is what the NIC
    side derives from (a wrong one makes the self-check's claim)."""
    return bridged("numa-pair", attribute(GPU, "numa"), attribute(NIC, nic_attribute))


def expect_pairing(api, namespace: str, node: str, claim: ClaimBuilder, want: dict[str, str], why: str, ev: Evidence) -> None:
    got = paired(schedule(api, namespace, claim, node, ev))
    assert got == want, f"want {want} ({why}); the scheduler paired {got}"


def derived_pairs_matching_devices(api, namespace: str, node: str, ev: Evidence, claim: ClaimBuilder | None = None) -> None:  # DA-01
    expect_pairing(api, namespace, node, claim or numa_pair(), {"gpu": "gpu-1", "peer": "nic-0"}, "gpu-1 has numa 1, nic-0 numaNode 1", ev)
