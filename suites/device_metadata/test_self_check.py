"""MUT-01 for the MD suite: each broken variant of the reference drivers makes the checks of the
promise it breaks FAIL (an AssertionError with evidence, never a lab error)."""

from __future__ import annotations

from typing import Callable

import pytest

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from suites.device_metadata import checks, scenario
from suites.device_metadata.scenario import Scenario
from suites.framework import namespaces, self_check, spec_drift
from suites.framework.spec_drift import Drift

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("MUT-01")]

Check = Callable[[Scenario, Evidence], object]
READER: dict[str, Check] = {  # on the full metadata reader (scenario.FULL: every request a check reads)
    "MD-01": checks.file_at_shipped_path, "MD-02": checks.content, "MD-03": checks.attributes_typed_and_agree,
    "MD-04": checks.isolation, "MD-06": checks.several_devices_in_one_file, "MD-11": checks.read_only_and_modes,
}
SINGLE: dict[str, Check] = {"MD-14": checks.cleanup}
DEFERRED: dict[str, Check] = {"MD-16": checks.deferred_network_data, "MD-17": checks.update_generation}

# variant -> the MD checks it must fail (the table in the closing note of the MD issue)
EXPECTED_FAILURES = {
    ("gpu", "wrong-path"): ["MD-01"],
    ("gpu", "drop-device"): ["MD-02", "MD-06"],
    ("gpu", "attribute-mismatch"): ["MD-03"],
    ("gpu", "leak-other-request"): ["MD-04"],
    ("gpu", "writable-mount"): ["MD-11"],
    ("gpu", "leave-files"): ["MD-14"],
    ("net", "networkdata-mismatch"): ["MD-16"],
    ("net", "stale-generation"): ["MD-17"],
    ("net", "foreign-device"): ["MD-17"],
}


@pytest.mark.parametrize("profile,variant", EXPECTED_FAILURES, ids=[f"{p}:{v}" for p, v in EXPECTED_FAILURES])
def test_variant_fails_the_checks_it_breaks(lab: Lab, api, node_files, deploy_driver, request, profile: str,
                                            variant: str) -> None:
    driver = self_check.broken_reference_driver(request, deploy_driver, profile, variant)
    failures = {}
    with namespaces.fresh(api, prefix="mut") as ns:
        scenarios: dict[str, Scenario] = {}  # one of each kind per variant, shared by its checks

        def observe(kind: str) -> Scenario:
            if kind not in scenarios:
                scenarios[kind] = {
                    "reader": lambda: scenario.metadata_reader(lab, api, node_files, driver, ns, scenario.FULL),
                    "single": lambda: scenario.single(lab, api, node_files, driver, ns, "single"),
                    "deferred": lambda: scenario.single(lab, api, node_files, driver, ns, "deferred",
                                                        checks.copy_at_start(driver.name, "deferred")),
                }[kind]()
            return scenarios[kind]

        for requirement in EXPECTED_FAILURES[(profile, variant)]:
            kind = "reader" if requirement in READER else "single" if requirement in SINGLE else "deferred"
            check = {**READER, **SINGLE, **DEFERRED}[requirement]
            failures[requirement] = self_check.must_fail(requirement, lambda ev: check(observe(kind), ev))
    print(f"{profile}:{variant} ->", failures)
    if variant == "foreign-device":  # what shipped UpdateRequestMetadata let through
        spec_drift.record(request, Drift(
            "KEP-5304", "no ownership check on updates",
            "UpdateRequestMetadata refuses devices the calling driver did not prepare for the request",
            f"an update listing a VF the claim was not given was written: {failures['MD-17']}"))
