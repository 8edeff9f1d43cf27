"""KEP-6080 derived attributes against the running kube-scheduler (DA-*), on devices the checks
publish on a slice-only node (topology.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from suites.framework.evidence import Evidence
from suites.derived_attributes import checks
from suites.derived_attributes.topology import DERIVED_NUMA, GPU, NIC, NUMA, attribute, capacity
from suites.framework import spec_drift, validation
from suites.framework.claims import ClaimBuilder
from suites.framework.spec_drift import Drift
from suites.framework.validation import Cause

# Every check here needs the API server to keep derivedAttributes; each observes that it does.
pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("derived_gate")]


@pytest.mark.requirement("DA-01")
def test_derived_attribute_pairs_devices_of_two_drivers(api, topology_node: str, namespace: str, evidence: Evidence) -> None:
    checks.derived_pairs_matching_devices(api, namespace, topology_node, evidence)


TOPOLOGY, NUMA_NODE = attribute(GPU, "topology"), attribute(NIC, "numaNode")
TIER = f'{capacity(GPU, "memory")}.compareTo(quantity("64Gi")) >= 0 ? "large" : "small"'
# (case, GPU-side expression, peer-side expression, peer class, the peer the scheduler must pick)
EXTRACTIONS = [
    ("split() of a topology string", f'{TOPOLOGY}.split("-")[0]', f'"numa" + string({NUMA_NODE})', NIC, "nic-0"),
    ("an int cut from a topology string", f'int({TOPOLOGY}.substring(4, {TOPOLOGY}.indexOf("-")))', NUMA_NODE, NIC, "nic-0"),
    ("a bool", f"{attribute(GPU, 'numa')} == 1", f"{NUMA_NODE} == 1", NIC, "nic-0"),
    ("a semver", f'semver("1." + string({attribute(GPU, "numa")}) + ".0")', f'semver("1." + string({NUMA_NODE}) + ".0")', NIC, "nic-0"),
    ("a capacity tier ternary", TIER, TIER, GPU, "gpu-2"),
]


@pytest.mark.requirement("DA-02")
@pytest.mark.parametrize("case,gpu,peer,peer_class,want", EXTRACTIONS, ids=[c[0] for c in EXTRACTIONS])
def test_extraction_and_bucketing(
    api, topology_node: str, namespace: str, evidence: Evidence, case: str, gpu: str, peer: str, peer_class: str, want: str
) -> None:
    checks.expect_pairing(
        api,
        namespace,
        topology_node,
        checks.bridged("extract", gpu, peer, peer_class),
        {"gpu": "gpu-1", "peer": want},
        f"{case}: only {want} derives what gpu-1 derives",
        evidence,
    )


@pytest.mark.requirement("DA-03")
def test_distinct_attribute_over_a_derived_key(api, topology_node: str, namespace: str, evidence: Evidence) -> None:
    claim = (
        ClaimBuilder("distinct")
        .request("gpus", GPU, count=1, derived={DERIVED_NUMA: attribute(GPU, "numa")})
        .request("nics", NIC, count=1, derived={DERIVED_NUMA: NUMA_NODE})
        .constraint(["gpus", "nics"], distinct=DERIVED_NUMA)
    )
    got = checks.paired(checks.schedule(api, namespace, claim, topology_node, evidence))
    assert NUMA[got["gpus"]] != NUMA[got["nics"]], f"distinctAttribute {DERIVED_NUMA} allocated one NUMA node: {got}"


@pytest.mark.requirement("DA-05")
def test_derived_name_shadows_a_driver_attribute_for_its_request_only(api, topology_node: str, namespace: str, evidence: Evidence) -> None:
    # Request gpu (gpu-1, numa 1) says its da-gpu.dralab.dev/numa is 0; request peer does not
    # derive it. If the shadow held for both or for neither, no two GPUs would match.
    shadowed = f"{GPU}/numa"
    claim = (
        ClaimBuilder("shadow")
        .request("gpu", GPU, selector=checks.GPU_1, derived={shadowed: f"1 - {attribute(GPU, 'numa')}"})
        .request("peer", GPU)
        .constraint(["gpu", "peer"], match=shadowed)
    )
    got = checks.paired(checks.schedule(api, namespace, claim, topology_node, evidence))
    assert got["gpu"] == "gpu-1" and NUMA[got["peer"]] == 0, (
        f"want gpu-1 (numa 1, shadowed to 0) with a GPU of static numa 0; the scheduler paired {got}"
    )


@pytest.mark.requirement("DA-06")
def test_runtime_cel_error_fails_scheduling(
    api, topology_node: str, namespace: str, evidence: Evidence, request: pytest.FixtureRequest
) -> None:
    # nic-0, the first candidate, has no speedGbps. Were it pruned, nic-1 (numaNode 0, speed 100)
    # would pair with gpu-0 (numa 0).
    claim = (
        ClaimBuilder("runtime-error")
        .request("gpu", GPU, selector=f"{attribute(GPU, 'index')} == 0", derived={DERIVED_NUMA: attribute(GPU, "numa")})
        .request("nic", NIC, derived={DERIVED_NUMA: f"{attribute(NIC, 'speedGbps')} > 0 ? {NUMA_NODE} : -1"})
        .constraint(["gpu", "nic"], match=DERIVED_NUMA)
    )
    event = checks.scheduling_failure(api, namespace, claim, topology_node, "no such key", evidence)
    spec_drift.record(
        request,
        Drift(
            "KEP-6080",
            "runtime CEL error",
            "the device whose expression fails is pruned; allocation goes on with the others (here nic-1 would pair with gpu-0)",
            f"scheduling failed, nothing allocated: {event}",
        ),
    )


LISTS = [  # (case, GPU-side list, NIC-side list, matchAttribute?, the NIC the scheduler must pick)
    # int(): attributes are dyn to the type checker, and a list literal must not mix dyn and int.
    ("matchAttribute: non-empty intersection", f"[int({attribute(GPU, 'numa')}), 7]", f"[{NUMA_NODE}]", True, "nic-0"),
    ("distinctAttribute: disjoint sets", f"[{attribute(GPU, 'numa')}]", f"[int({NUMA_NODE}), 5]", False, "nic-1"),
]


@pytest.mark.requirement("DA-08")
@pytest.mark.usefixtures("list_gate")
@pytest.mark.parametrize("case,gpu,nic,match,want", LISTS, ids=[c[0] for c in LISTS])
def test_list_results(
    api, topology_node: str, namespace: str, evidence: Evidence, case: str, gpu: str, nic: str, match: bool, want: str
) -> None:
    checks.expect_pairing(
        api,
        namespace,
        topology_node,
        checks.bridged("lists", gpu, nic, match=match),
        {"gpu": "gpu-1", "peer": want},
        f"{case}: gpu-1 derives [1]",
        evidence,
    )


SUBREQUESTS = [  # (case, first subrequest's selector, its expression, the result the scheduler must write)
    ("the first subrequest, with its own derived attribute", None, f"1 - {NUMA_NODE}", ("nic/first", "nic-1")),
    ("the second subrequest when the first cannot be served", f"{attribute(NIC, 'index')} > 5", NUMA_NODE, ("nic/second", "nic-0")),
]


@pytest.mark.requirement("DA-10")
@pytest.mark.parametrize("case,selector,expression,want", SUBREQUESTS, ids=[c[0] for c in SUBREQUESTS])
def test_derived_attributes_on_first_available_subrequests(
    api, topology_node: str, namespace: str, evidence: Evidence, case: str, selector: str | None, expression: str, want: tuple[str, str]
) -> None:
    claim = (
        ClaimBuilder("first-available")
        .request("gpu", GPU, selector=checks.GPU_1, derived={DERIVED_NUMA: attribute(GPU, "numa")})
        .first_available(
            "nic",
            {
                "first": ClaimBuilder.exactly(NIC, selector=selector, derived={DERIVED_NUMA: expression}),
                "second": ClaimBuilder.exactly(NIC, derived={DERIVED_NUMA: NUMA_NODE}),
            },
        )
        .constraint(["gpu", "nic"], match=DERIVED_NUMA)
    )
    got = checks.paired(checks.schedule(api, namespace, claim, topology_node, evidence))
    assert got == {"gpu": "gpu-1", want[0]: want[1]}, f"{case}: want {want[0]} = {want[1]}; the scheduler wrote {got}"


def _derived(n: int, expression: str) -> dict[str, str]:
    return {f"derived.dralab.dev/d{i}": expression for i in range(n)}


def _claim(derived: dict[str, str], constrained: list[str] | None = None) -> dict[str, Any]:
    claim = ClaimBuilder("invalid").request("gpu", GPU, derived=derived)
    for name in derived if constrained is None else constrained:
        claim.constraint(["gpu"], match=name)
    return claim.build()


def _nested(n: int) -> str:
    """Two nested comprehensions over an n-element list: a static cost of about n*n."""
    items = f"[{', '.join(map(str, range(n)))}]"
    return f"{items}.all(a, {items}.all(b, a != b || a == b))"


def _duplicate_names() -> dict[str, Any]:
    body = _claim({DERIVED_NUMA: attribute(GPU, "numa")})
    body["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"] *= 2
    return body


DERIVED = "spec.devices.requests[0].exactly.derivedAttributes"
EXPRESSION = f"{DERIVED}[0].expression"
NOT_QUALIFIED = "a fully qualified name must be"
OVER_COST = "too complex, exceeds cost limit"
OVER_CLAIM_COST = "total cost of derived attribute CEL expressions in the claim exceeds cost limit"
NOT_SCALAR = "must evaluate to a primitive scalar"

# (case, claim, the causes it is rejected for: none if accepted)
CASES: list[tuple[str, dict[str, Any], tuple[Cause, ...]]] = [
    ("a fully qualified name", _claim({DERIVED_NUMA: attribute(GPU, "numa")}), ()),
    # The constraint naming it is invalid for the same reason.
    (
        "a bare name",
        _claim({"numa": attribute(GPU, "numa")}),
        (
            Cause(f"{DERIVED}[0].name", "FieldValueInvalid", NOT_QUALIFIED),
            Cause("spec.devices.constraints[0].matchAttribute", "FieldValueInvalid", NOT_QUALIFIED),
        ),
    ),
    (
        "a derived attribute no constraint references",
        _claim({DERIVED_NUMA: attribute(GPU, "numa")}, []),
        (Cause(f"{DERIVED}[0].name", "FieldValueInvalid", "must be referenced by at least one matchAttribute or distinctAttribute"),),
    ),
    ("32 derived attributes", _claim(_derived(32, attribute(GPU, "numa"))), ()),
    # Each derived attribute needs a constraint, and constraints have the same limit of 32.
    (
        "33 derived attributes",
        _claim(_derived(33, attribute(GPU, "numa"))),
        (
            Cause(DERIVED, "FieldValueTooMany", "must have at most 32"),
            Cause("spec.devices.constraints", "FieldValueTooMany", "must have at most 32"),
        ),
    ),
    ("duplicate names", _duplicate_names(), (Cause(f"{DERIVED}[1]", "FieldValueDuplicate", DERIVED_NUMA),)),
    ("a compile error", _claim({DERIVED_NUMA: "device.attributes[["}), (Cause(EXPRESSION, "FieldValueInvalid", "compilation failed"),)),
    ("a map result", _claim({DERIVED_NUMA: '{"a": 1}'}), (Cause(EXPRESSION, "FieldValueInvalid", NOT_SCALAR),)),
    ("a double result", _claim({DERIVED_NUMA: "1.5"}), (Cause(EXPRESSION, "FieldValueInvalid", NOT_SCALAR),)),
    ("an expression of 10 Ki", _claim({DERIVED_NUMA: "1" + " " * (10 * 1024 - 1)}), ()),
    (
        "an expression over 10 Ki",
        _claim({DERIVED_NUMA: "1" + " " * (10 * 1024)}),
        (Cause(EXPRESSION, "FieldValueTooLong", "may not be more than 10240 bytes"),),
    ),
    # The static cost caps: 1,000,000 per expression and for all of a claim's expressions together;
    # one expression over the first is over the second too.
    ("an expression under the cost cap", _claim({DERIVED_NUMA: _nested(300)}), ()),
    (
        "an expression over the cost cap",
        _claim({DERIVED_NUMA: _nested(400)}),
        (Cause(EXPRESSION, "FieldValueForbidden", OVER_COST), Cause("spec.devices", "FieldValueForbidden", OVER_CLAIM_COST)),
    ),
    (
        "two expressions under the cap, together over the claim's cap",
        _claim(_derived(2, _nested(300))),
        (Cause("spec.devices", "FieldValueForbidden", OVER_CLAIM_COST),),
    ),
    # Shipped finding: a string function on a split() element is estimated over the cap.
    (
        "substring() of a split() element",
        _claim({DERIVED_NUMA: f'{TOPOLOGY}.split("-")[0].substring(4)'}),
        (Cause(EXPRESSION, "FieldValueForbidden", OVER_COST), Cause("spec.devices", "FieldValueForbidden", OVER_CLAIM_COST)),
    ),
]


@pytest.mark.requirement("DA-07")
@pytest.mark.parametrize("case,body,rejected_for", CASES, ids=[c[0] for c in CASES])
def test_api_server_validation(
    api, namespace: str, evidence: Evidence, case: str, body: dict[str, Any], rejected_for: tuple[Cause, ...]
) -> None:
    evidence.add("derived attributes", body["spec"]["devices"]["requests"][0]["exactly"].get("derivedAttributes"))
    # Dry run: the claim is validated, never stored.
    validation.expect_answer(
        case,
        lambda: client.ResourceV1Api(api).create_namespaced_resource_claim(namespace, body, dry_run="All"),  # type: ignore[arg-type]  # a dict: validate_call builds the model
        rejected_for,
        evidence,
    )
