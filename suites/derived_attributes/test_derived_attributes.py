"""KEP-6080 derived attributes against the running kube-scheduler (DA-*), on devices the checks
publish on a slice-only node (topology.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from clusters.pytest_plugin import Evidence
from suites.derived_attributes import checks
from suites.derived_attributes.topology import DERIVED_NUMA, GPU, NIC, numa_of
from suites.framework import validation
from suites.framework.claims import ClaimBuilder

pytestmark = pytest.mark.e2e


@pytest.mark.requirement("DA-01")
def test_derived_attribute_pairs_devices_of_two_drivers(api, topology_node: str, namespace: str,
                                                        evidence: Evidence) -> None:
    checks.derived_pairs_matching_devices(api, namespace, topology_node, evidence)


@pytest.mark.requirement("DA-03")
def test_distinct_attribute_over_a_derived_key(api, topology_node: str, namespace: str, evidence: Evidence) -> None:
    claim = (ClaimBuilder("distinct")
             .request("gpus", GPU, count=1, derived={DERIVED_NUMA: numa_of(GPU, "numa")})
             .request("nics", NIC, count=1, derived={DERIVED_NUMA: numa_of(NIC, "numaNode")})
             .constraint(["gpus", "nics"], distinct=DERIVED_NUMA))
    allocated = checks.schedule(api, namespace, claim, topology_node, evidence)
    numa = {"gpu-0": 0, "gpu-1": 1, "nic-0": 1, "nic-1": 0}
    got = checks.paired(allocated)
    assert numa[got["gpus"]] != numa[got["nics"]], f"distinctAttribute {DERIVED_NUMA} allocated one NUMA node: {got}"


def _derived(n: int, prefix: str = "derived.dralab.dev/d") -> dict[str, str]:
    return {f"{prefix}{i}": numa_of(GPU, "numa") for i in range(n)}


def _claim(derived: dict[str, str], constrained: list[str] | None = None) -> dict[str, Any]:
    claim = ClaimBuilder("invalid").request("gpu", GPU, derived=derived)
    for name in derived if constrained is None else constrained:
        claim.constraint(["gpu"], match=name)
    return claim.build()


def _duplicate_names() -> dict[str, Any]:
    body = _claim({DERIVED_NUMA: numa_of(GPU, "numa")})
    body["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"] *= 2
    return body


# (case, claim, accepted?)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("a fully qualified name", _claim({DERIVED_NUMA: numa_of(GPU, "numa")}), True),
    ("a bare name", _claim({"numa": numa_of(GPU, "numa")}), False),
    ("a derived attribute no constraint references", _claim({DERIVED_NUMA: numa_of(GPU, "numa")}, []), False),
    ("32 derived attributes", _claim(_derived(32)), True),
    ("33 derived attributes", _claim(_derived(33)), False),
    ("duplicate names", _duplicate_names(), False),
    ("a compile error", _claim({DERIVED_NUMA: "device.attributes[["}), False),
    ("a map result", _claim({DERIVED_NUMA: '{"a": 1}'}), False),
    ("a double result", _claim({DERIVED_NUMA: "1.5"}), False),
    ("an expression of 10 Ki", _claim({DERIVED_NUMA: "1" + " " * (10 * 1024 - 1)}), True),
    ("an expression over 10 Ki", _claim({DERIVED_NUMA: "1" + " " * (10 * 1024)}), False),
]


@pytest.mark.requirement("DA-07")
@pytest.mark.parametrize("case,body,accepted", CASES, ids=[c[0] for c in CASES])
def test_api_server_validation(api, namespace: str, evidence: Evidence, case: str, body: dict[str, Any],
                               accepted: bool) -> None:
    evidence.add("derived attributes", body["spec"]["devices"]["requests"][0]["exactly"].get("derivedAttributes"))
    # Dry run: the claim is validated, never stored.
    validation.expect_answer(case, lambda: client.ResourceV1Api(api).create_namespaced_resource_claim(
        namespace, body, dry_run="All"), accepted, evidence)
