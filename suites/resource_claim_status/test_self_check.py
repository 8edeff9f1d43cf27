"""MUT-01 for the ST suite: each broken status variant of the reference drivers makes the checks
of the promise it breaks FAIL (an AssertionError with evidence, never a lab error)."""

from __future__ import annotations

from typing import Callable

import pytest

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from suites.framework import namespaces, self_check
from suites.resource_claim_status import checks

pytestmark = [pytest.mark.e2e, pytest.mark.requirement("MUT-01")]

# requirement -> check on a running claim of the variant (the ST-01 "before prepare" check sets up its own)
ON_CLAIM: dict[str, Callable[[checks.Observed, Evidence], None]] = {
    "ST-01": checks.own_entries, "ST-07": checks.entries_ready, "ST-02": checks.network_data_matches_the_pod,
    "ST-04": checks.other_nodes_driver_refused,
}

# variant -> the ST checks it must fail, by name (ST-07 is a SHOULD: its check fails, the verdict is a WARNING)
EXPECTED_FAILURES: dict[tuple[str, str], list[str]] = {
    ("gpu", "no-ready-condition"): ["ST-07"],
    ("gpu", "status-other-node"): ["ST-01 before prepare", "ST-04"],
    ("net", "networkdata-mismatch"): ["ST-02"],
    ("net", "status-other-node"): ["ST-01 before prepare", "ST-04"],
}


@pytest.mark.parametrize("profile,variant", EXPECTED_FAILURES, ids=[f"{p}:{v}" for p, v in EXPECTED_FAILURES])
def test_variant_fails_the_checks_it_breaks(local_only: Lab, api, deploy_driver, request, profile: str,
                                            variant: str) -> None:
    driver = self_check.broken_reference_driver(request, deploy_driver, profile, variant)
    failures = {}
    with namespaces.fresh(api, prefix="mut-st") as ns:
        observed: list[checks.Observed] = []

        def run(name: str, evidence: Evidence) -> None:
            if name == "ST-01 before prepare":
                checks.nothing_before_prepare(local_only, api, driver, ns, evidence)
                return
            if not observed:
                observed.append(checks.start(local_only, api, driver, ns, "variant"))
            ON_CLAIM[name.split()[0]](observed[0], evidence)

        for name in EXPECTED_FAILURES[(profile, variant)]:
            failures[name] = self_check.must_fail(name, lambda ev: run(name, ev))
    if variant == "status-other-node":  # ST-06 is a warning, not a failure: it must be raised
        warned = checks.broader_than_associated_node(api, driver, Evidence())
        assert warned, "ST-06 raised no least-privilege warning for a per-node driver holding arbitrary-node:"
        failures["ST-06 (warning)"] = warned[0]
    print(f"{profile}:{variant} ->", failures)
