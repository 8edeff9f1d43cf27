"""MUT-01 for the DA suite: a claim whose derived expression points at the wrong attribute makes
the DA-01 check FAIL (the scheduler pairs other devices), with the allocation as evidence. The
driver variants of the other suites are judged by `dralab selfcheck`; this one breaks the claim,
not a driver."""

from __future__ import annotations

import pytest

from suites.derived_attributes import checks
from suites.framework.evidence import Evidence

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("MUT-01"), pytest.mark.usefixtures("derived_gate")]


def test_wrong_derived_expression_fails_da01(api, topology_node: str, namespace: str) -> None:
    evidence = Evidence()
    with pytest.raises(AssertionError) as failed:
        checks.derived_pairs_matching_devices(api, namespace, topology_node, evidence, checks.numa_pair(nic_attribute="index"))
    assert evidence.items, "DA-01 failed without evidence"
    assert "the scheduler paired" in str(failed.value), failed.value
