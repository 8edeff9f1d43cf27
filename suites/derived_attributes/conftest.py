"""Fixtures of the DA suite: the feature gates as the cluster shows them, and the published
topology on a slice-only node whose pods only get scheduled (slice-only nodes have no kubelet)."""

from __future__ import annotations

from typing import Iterator

import pytest

pytest.register_assert_rewrite("suites.derived_attributes.checks")

from clusters.providers import Lab  # noqa: E402
from suites.derived_attributes import gates, topology  # noqa: E402
from suites.framework.evidence import Evidence  # noqa: E402


@pytest.fixture(scope="session")
def cluster_gates(api) -> gates.Gates:
    return gates.Gates(api)


@pytest.fixture
def derived_gate(cluster_gates: gates.Gates, evidence: Evidence) -> None:
    """SKIP unless the API server keeps derivedAttributes (DRADerivedAttributes), observed."""
    evidence.observe(f"feature gate {gates.DERIVED}", cluster_gates.require(gates.DERIVED))


@pytest.fixture
def list_gate(derived_gate: None, cluster_gates: gates.Gates, evidence: Evidence) -> None:
    """SKIP unless the API server accepts list results (DRAListTypeAttributes), observed."""
    evidence.observe(f"feature gate {gates.LISTS}", cluster_gates.require(gates.LISTS))


@pytest.fixture(scope="module")
def topology_node(lab: Lab, api) -> Iterator[str]:
    if not lab.slice_only_nodes:
        pytest.skip("the DA checks publish their devices on slice-only nodes; this lab has none")
    node = lab.slice_only_nodes[0]
    with topology.published(api, node):
        yield node
