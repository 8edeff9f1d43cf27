"""KEP-4817 status.devices as the driver under test writes it: entries for its own allocated
devices only, Ready once configured and never before the claim is prepared (ST-01), networkData
that matches the pod (ST-02), no writes from its pods on other nodes (ST-04) and least-privilege
RBAC (ST-06, a warning)."""

from __future__ import annotations

import warnings
from typing import Iterator

import pytest
from kubernetes import client

from clusters.providers import Lab
from clusters.pytest_plugin import Evidence
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


def _may(api, user: str, groups: list[str], verb: str, driver: str) -> bool:
    review = client.AuthorizationV1Api(api).create_subject_access_review({"spec": {
        "user": user, "groups": groups, "resourceAttributes": {
            "group": "resource.k8s.io", "resource": "resourceclaims", "subresource": "driver", "name": driver,
            "verb": verb, "namespace": "any-namespace"}}})
    return review.status.allowed


@pytest.mark.requirement("ST-06")
def test_rbac_grants_associated_node_not_arbitrary_node(api, status_driver: DriverUnderTest, evidence: Evidence,
                                                        request) -> None:
    apps = client.AppsV1Api(api)
    daemonsets = apps.list_namespaced_daemon_set(status_driver.profile.namespace).items
    assert daemonsets, f"driver profile {status_driver.profile.name} runs no DaemonSet: no per-node component to review"
    found = {}
    for ds in daemonsets:
        sa = ds.spec.template.spec.service_account_name or "default"
        ns = ds.metadata.namespace
        user, groups = f"system:serviceaccount:{ns}:{sa}", ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        found[user] = {verb: _may(api, user, groups, verb, status_driver.name)
                       for verb in ("associated-node:update", "associated-node:patch",
                                    "arbitrary-node:update", "arbitrary-node:patch")}
    evidence.add("SubjectAccessReview answers on resourceclaims/driver", found)
    for user, verbs in found.items():
        assert verbs["associated-node:update"] or verbs["associated-node:patch"], \
            f"{user} runs per node and may not write its driver's status at all (no associated-node: verb)"
        broad = [v for v, allowed in verbs.items() if allowed and v.startswith("arbitrary-node:")]
        if broad:
            message = f"{user} runs per node yet holds {broad} on resourceclaims/driver {status_driver.name}: " \
                      "associated-node: is enough and keeps a node from writing other nodes' claims"
            request.node.user_properties.append(("least_privilege_warning", message))
            warnings.warn(LeastPrivilegeWarning(message))
