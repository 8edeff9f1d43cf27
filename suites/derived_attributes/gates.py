"""The KEP-6080 feature gates as the cluster shows them, never as dralab configured them: the API
server's by what it does with a dry-run claim (a field dropped on create, a list result
refused), the scheduler's by its own answer to a claim (checks.SCHEDULER_GATE_OFF)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from suites.derived_attributes.topology import DERIVED_NUMA, GPU, attribute
from suites.framework import claims
from suites.framework.claims import ClaimBuilder
from suites.framework.verdicts import require
from suites.framework.validation import causes

DERIVED, LISTS = "DRADerivedAttributes", "DRAListTypeAttributes"
NOT_SCALAR = "must evaluate to a primitive scalar"  # the API server's refusal of a list without DRAListTypeAttributes
PROBE_NAMESPACE = "default"  # dry runs store nothing; every cluster has it


def remedy(gate: str, components: str = "kube-apiserver and kube-scheduler") -> str:
    return f"turn it on with --feature-gates={gate}=true on {components} (a local lab: dralab up --feature-gates {gate}=true)"


def _dry_run(api: Any, expression: str) -> dict[str, Any]:
    """The claim as the API server would store it (raw JSON: the client's models may lack alpha fields)."""
    claim = ClaimBuilder("dralab-gate-probe").request("r", GPU, derived={DERIVED_NUMA: expression}).constraint(["r"], match=DERIVED_NUMA)
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        "resource.k8s.io", "v1", PROBE_NAMESPACE, "resourceclaims", claim.build(), dry_run="All"
    )


@dataclass
class Gates:
    api: Any
    _seen: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def _derived(self) -> tuple[bool, str]:
        kept = bool(claims.derived_attributes(_dry_run(self.api, attribute(GPU, "numa"))))
        return kept, f"a dry-run claim with derivedAttributes came back {'with' if kept else 'without'} them"

    def _lists(self) -> tuple[bool, str]:
        try:
            _dry_run(self.api, f"[{attribute(GPU, 'numa')}]")
        except ApiException as e:
            said = [c.get("message", "") for c in causes(e)] if e.status == 422 else []
            if not any(NOT_SCALAR in m for m in said):
                raise
            return False, f"a dry-run claim deriving a list was refused: {'; '.join(said)}"
        return True, "a dry-run claim deriving a list was accepted"

    def require(self, gate: str) -> str:
        """What the API server showed of `gate`; SKIP naming it when it is off."""
        if gate not in self._seen:
            if gate == LISTS:
                self.require(DERIVED)  # a list result means nothing while the field itself is dropped
            self._seen[gate] = {DERIVED: self._derived, LISTS: self._lists}[gate]()
        on, how = self._seen[gate]
        require(on, f"feature gate {gate} is off in the API server ({how})", remedy(gate))
        return how
