"""KEP-6080 under other feature gates (DA-08, DA-09), each on a lab of its own configuration
(clusters/lab_configurations.py), started once per run."""

from __future__ import annotations

import pytest
from kubernetes import client

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from suites.derived_attributes import checks, topology
from suites.derived_attributes.topology import GPU, NIC, attribute
from suites.framework import claims, namespaces, validation

pytestmark = pytest.mark.e2e


@pytest.mark.requirement("DA-09")
@pytest.mark.requirement("LAB-02")
def test_gate_off_in_the_api_server_drops_the_field(gates_off_lab: Lab, evidence: Evidence) -> None:
    api = gates_off_lab.api()
    with namespaces.fresh(api) as namespace:
        stored = claims.read(api, namespace, claims.create(api, namespace, checks.numa_pair()))
    evidence.observe("derivedAttributes as stored", claims.derived_attributes(stored))
    assert claims.derived_attributes(stored) == {}, "with DRADerivedAttributes off the API server kept derivedAttributes"


@pytest.mark.requirement("DA-09")
def test_gate_off_in_the_scheduler_fails_scheduling(scheduler_gate_off_lab: Lab, evidence: Evidence) -> None:
    api, node = scheduler_gate_off_lab.api(), scheduler_gate_off_lab.slice_only_nodes[0]
    with namespaces.fresh(api) as namespace, topology.published(api, node):
        claim = checks.numa_pair()
        checks.scheduling_failure(api, namespace, claim, node, checks.SCHEDULER_GATE_OFF, evidence)
        assert claims.derived_attributes(claims.read(api, namespace, claim.name)), (
            "the API server (gate on) should have kept derivedAttributes"
        )


@pytest.mark.requirement("DA-08")
def test_list_results_need_the_list_gate(scheduler_gate_off_lab: Lab, evidence: Evidence) -> None:
    api = scheduler_gate_off_lab.api()
    claim = checks.bridged("lists", f"[{attribute(GPU, 'numa')}]", f"[{attribute(NIC, 'numaNode')}]")
    rejected_for = tuple(
        validation.Cause(
            f"spec.devices.requests[{i}].exactly.derivedAttributes[0].expression",
            "FieldValueInvalid",
            "must evaluate to a primitive scalar",
        )
        for i in (0, 1)
    )
    validation.expect_answer(
        "a list result with DRAListTypeAttributes off",
        lambda: client.ResourceV1Api(api).create_namespaced_resource_claim("default", claim.build(), dry_run="All"),  # type: ignore[arg-type]  # a dict: validate_call builds the model
        rejected_for,
        evidence,
    )
