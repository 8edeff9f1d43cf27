"""What a cluster needs to run each spec, and which cannot run there and why.

Upstream's framework labels a spec with FeatureGate:<gate> for each gate it needs; which of
them are off by default at the version, the suite's binary says (E2ESuite.gate_defaults). A lab
dralab starts turns those on and serves the API versions upstream's own DRA kind configuration
serves. A cluster dralab does not own keeps its gates: specs needing a gate off by default SKIP
there, naming it, unless the user says the cluster has it on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from suites.upstream_dra.specs import Spec


@dataclass
class Plan:
    feature_gates: dict[str, bool] = field(default_factory=dict)
    runtime_config: dict[str, bool] = field(default_factory=dict)
    skips: dict[str, str] = field(default_factory=dict)  # spec name -> why it cannot run on this cluster

    def skip_regex(self) -> str | None:
        """The planned SKIPs by their full names (ginkgo's --skip). Anchored at the end only: the text
        ginkgo matches has more before the names it reports."""
        return "|".join(f"{re.escape(name)}$" for name in sorted(self.skips)) or None


def off_gates(spec: Spec, gate_defaults: dict[str, bool]) -> set[str]:
    return {g for g in spec.gates() if not gate_defaults.get(g, False)}


def upstream_runtime_config(kubernetes_source: Path) -> dict[str, bool]:
    """The runtimeConfig of test/e2e/dra/kind.yaml at that version: the API versions the suite's
    own CI serves (some specs use resource.k8s.io/v1beta1 and v1beta2)."""
    kind = yaml.safe_load((kubernetes_source / "test" / "e2e" / "dra" / "kind.yaml").read_text())
    return {api: str(on).lower() == "true" for api, on in (kind.get("runtimeConfig") or {}).items()}


def plan_owned(specs: list[Spec], gate_defaults: dict[str, bool], runtime_config: dict[str, bool]) -> Plan:
    """For a lab dralab starts: every gate off by default that a spec needs, on."""
    gates = {g for s in specs for g in off_gates(s, gate_defaults)}
    return Plan(feature_gates=dict.fromkeys(sorted(gates), True), runtime_config=runtime_config)


# No label says which API version a spec uses; upstream names it: "with v1beta1 API ...",
# "CRUD Tests resource.k8s.io/v1alpha3 ...".
API_IN_NAME = re.compile(r"\bwith (v\d+(?:alpha|beta)\d+) API\b|\bresource\.k8s\.io/(v\d+(?:(?:alpha|beta)\d+)?)\b")


def apis_used(spec: Spec) -> set[str]:
    return {f"resource.k8s.io/{a or b}" for a, b in API_IN_NAME.findall(spec.name)}


def plan_foreign(specs: list[Spec], gate_defaults: dict[str, bool], gates_on: set[str], served: set[str]) -> Plan:
    """For a cluster dralab does not own: specs needing a gate off by default SKIP unless it is said
    on, and those using an API version its API server does not serve (`served`, from discovery) SKIP."""
    skips = {}
    for s in specs:
        if missing := sorted(off_gates(s, gate_defaults) - gates_on):
            skips[s.name] = (
                f"needs feature gate(s) {', '.join(missing)}, off by default: dralab cannot set the gates "
                f"of a kubeconfig cluster; if they are on there, pass --gates-on {','.join(missing)}"
            )
        elif unserved := sorted(apis_used(s) - served):
            skips[s.name] = (
                f"uses {', '.join(unserved)}, which this cluster's API server does not serve "
                f"(kube-apiserver --runtime-config={','.join(f'{a}=true' for a in unserved)} serves it)"
            )
    return Plan(skips=skips)
