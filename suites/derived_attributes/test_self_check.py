"""MUT-01 for the DA suite: a claim whose derived expression points at the wrong attribute makes
the DA-01 check FAIL (the scheduler pairs other devices), with the allocation as evidence."""

from __future__ import annotations

import pytest

from suites.derived_attributes import checks
from suites.framework import self_check

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("MUT-01"), pytest.mark.usefixtures("derived_gate")]


def test_wrong_derived_expression_fails_da01(api, topology_node: str, namespace: str) -> None:
    failure = self_check.must_fail("DA-01", lambda ev: checks.derived_pairs_matching_devices(
        api, namespace, topology_node, ev, checks.numa_pair(nic_attribute="index")))
    assert "the scheduler paired" in failure, failure
