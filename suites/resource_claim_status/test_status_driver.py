"""KEP-4817 status.devices as the driver under test writes it: entries for its own allocated
devices only, Ready once configured and never before the claim is prepared (ST-01), networkData
that matches the pod (ST-02), no writes from its pods on other nodes (ST-04) and least-privilege
RBAC (ST-06, a warning)."""

from __future__ import annotations

import warnings
from typing import Iterator

import pytest

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from drivers_under_test.profile import Capability
from suites.framework import namespaces
from suites.framework.drivers import DriverUnderTest
from suites.resource_claim_status import checks

pytestmark = pytest.mark.e2e


class LeastPrivilegeWarning(UserWarning):
    """ST-06: the driver holds a permission its per-node component does not need."""


@pytest.fixture(scope="module")
def status_driver(driver: DriverUnderTest) -> DriverUnderTest:
    driver.requires(Capability.DEVICE_STATUS)
    return driver


@pytest.fixture(scope="module")
def observed(lab: Lab, api, status_driver: DriverUnderTest) -> Iterator[checks.Observed]:
    with namespaces.fresh(api, prefix="st") as ns:
        yield checks.start(lab, api, status_driver, ns, "status")


@pytest.mark.requirement("ST-01")
def test_entries_for_own_allocated_devices_ready_once_configured(observed: checks.Observed, evidence: Evidence) -> None:
    checks.own_entries_ready(observed, evidence)


@pytest.mark.requirement("ST-01")
def test_no_entries_before_the_claim_is_prepared(local_only: Lab, api, status_driver: DriverUnderTest, namespace: str,
                                                 evidence: Evidence) -> None:
    checks.nothing_before_prepare(local_only, api, status_driver, namespace, evidence)


@pytest.mark.requirement("ST-02")
def test_network_data_matches_the_interface_in_the_pod(observed: checks.Observed, evidence: Evidence) -> None:
    observed.driver.requires(Capability.NETWORK_DATA)
    checks.network_data_matches_the_pod(observed, evidence)


@pytest.mark.requirement("ST-04")
def test_the_drivers_pod_on_another_node_may_not_write(observed: checks.Observed, evidence: Evidence) -> None:
    checks.other_nodes_driver_refused(observed, evidence)


@pytest.mark.requirement("ST-06")
def test_rbac_grants_associated_node_not_arbitrary_node(api, status_driver: DriverUnderTest, evidence: Evidence,
                                                        request) -> None:
    for message in checks.broader_than_associated_node(api, status_driver, evidence):
        request.node.user_properties.append(("least_privilege_warning", message))
        warnings.warn(LeastPrivilegeWarning(message))
