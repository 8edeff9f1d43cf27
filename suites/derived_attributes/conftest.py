"""Fixtures of the DA suite: the published topology on a slice-only node and a namespace whose
pods only get scheduled (slice-only nodes have no kubelet)."""

from __future__ import annotations

from typing import Iterator

import pytest

pytest.register_assert_rewrite("suites.derived_attributes.checks")

from clusters.providers import Lab  # noqa: E402
from suites.derived_attributes import topology  # noqa: E402
from suites.framework.workload import pytest_configure  # noqa: E402,F401 (--workload-image)


@pytest.fixture(scope="module")
def topology_node(lab: Lab, api) -> Iterator[str]:
    if not lab.slice_only_nodes:
        pytest.skip("the DA checks publish their devices on slice-only nodes; this lab has none")
    node = lab.slice_only_nodes[0]
    with topology.published(api, node):
        yield node
