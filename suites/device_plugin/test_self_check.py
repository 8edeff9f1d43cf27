"""MUT-01 for the device plugin suite: the variant that never reports a device unhealthy makes
DP-03 FAIL, naming the device that stayed in allocatable, with the kubelet's healthy devices and
the plugin's log as evidence."""

from __future__ import annotations

import re

import pytest

from clusters.providers import Lab
from suites.device_plugin import checks
from suites.framework import self_check
from suites.framework.node_files import NodeFiles

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("MUT-01")]


def test_never_unhealthy_fails_dp03(request: pytest.FixtureRequest, deploy_driver, local_only: Lab, api,
                                    node_files: NodeFiles) -> None:
    broken = self_check.broken_reference_driver(request, deploy_driver, "fake-gpu-plugin", "never-unhealthy")
    node = local_only.nodes[0].name
    failure = self_check.must_fail("DP-03", lambda ev: checks.health_follows_the_hardware(
        local_only, api, node_files, broken, node, ev))
    # The violation: the faulted device is still counted, allocatable one above what it should be.
    counted = re.search(r"marked unhealthy .*, yet \S+ allocatable \S+ stayed (\d+) \(want (\d+)\)", failure)
    assert counted and int(counted[1]) == int(counted[2]) + 1, failure
