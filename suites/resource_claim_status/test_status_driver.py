"""KEP-4817 status.devices as the driver under test writes it: entries for its own allocated
devices only and never before the claim is prepared (ST-01), Ready once configured (ST-07, a
SHOULD: a WARNING), networkData that matches the pod (ST-02), no writes from its pods on other
nodes (ST-04) and least-privilege RBAC (ST-06, a SHOULD: a WARNING)."""

from __future__ import annotations

from typing import Iterator

import pytest

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from drivers_under_test.profile import Capability
from suites.framework import namespaces
from suites.framework.drivers import DriverUnderTest
from suites.resource_claim_status import checks

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def status_driver(driver: DriverUnderTest) -> DriverUnderTest:
    driver.requires(Capability.DEVICE_STATUS)
    return driver


@pytest.fixture(scope="module")
def observed(lab: Lab, api, status_driver: DriverUnderTest) -> Iterator[checks.Observed]:
    with namespaces.fresh(api, prefix="st") as ns:
        yield checks.start(lab, api, status_driver, ns, "status", count=checks.devices_to_observe(api, status_driver))


@pytest.mark.requirement("ST-01")
def test_entries_only_for_own_allocated_devices(observed: checks.Observed, evidence: Evidence) -> None:
    checks.own_entries(observed, evidence)


@pytest.mark.requirement("ST-07")
def test_entries_ready_once_configured(observed: checks.Observed, evidence: Evidence) -> None:
    checks.entries_ready(observed, evidence)


@pytest.mark.requirement("ST-01")
def test_no_entries_before_the_claim_is_prepared(host_access: Lab, api, status_driver: DriverUnderTest, namespace: str,
                                                 evidence: Evidence) -> None:
    checks.nothing_before_prepare(host_access, api, status_driver, namespace, evidence)


@pytest.mark.requirement("ST-02")
def test_network_data_matches_the_interface_in_the_pod(observed: checks.Observed, evidence: Evidence) -> None:
    observed.driver.requires(Capability.NETWORK_DATA)
    checks.network_data_matches_the_pod(observed, evidence)


@pytest.mark.requirement("ST-04")
def test_the_drivers_pod_on_another_node_may_not_write(observed: checks.Observed, evidence: Evidence) -> None:
    checks.other_nodes_driver_refused(observed, evidence)


@pytest.mark.requirement("ST-06")
def test_rbac_grants_associated_node_not_arbitrary_node(api, status_driver: DriverUnderTest, evidence: Evidence) -> None:
    for message in checks.broader_than_associated_node(api, status_driver, evidence):
        evidence.warn(message)
