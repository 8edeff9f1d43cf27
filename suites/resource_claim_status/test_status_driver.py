"""KEP-4817 status.devices as the driver under test writes it: entries for its own allocated
devices only and never before the claim is prepared (ST-01), Ready once configured (ST-07, a
SHOULD: a WARNING), networkData that matches the pod (ST-02), no writes from its pods on other
nodes (ST-04), least-privilege RBAC (ST-06, a SHOULD: a WARNING) and the entries of another
driver of the same claim kept (ST-08)."""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from kubernetes import client

from clusters.providers import Lab
from suites.framework.evidence import Evidence
from drivers_under_test import evidence as driver_evidence
from drivers_under_test.profile import Capability
from suites.framework import claim_watch, claims, namespaces, other_driver, pods
from suites.framework.claims import ClaimBuilder
from suites.framework.pods import ObservationFailed, PrepareRefused
from suites.framework.verdicts import Blocked
from suites.framework.waits import WaitTimeout, driver_must, wait_for
from suites.framework.drivers import DriverUnderTest
from suites.resource_claim_status import checks

pytestmark = pytest.mark.e2e


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
def test_no_entries_before_the_claim_is_prepared(
    host_access: Lab, api, status_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    checks.nothing_before_prepare(host_access, api, status_driver, namespace, evidence)


@pytest.mark.requirement("ST-01")
def test_no_entry_of_the_run_appeared_before_its_claim_was_asked_to_be_prepared(
    lab: Lab, observed: checks.Observed, evidence: Evidence
) -> None:
    """ST-01 over the whole trace: every claim the run created (the generated workloads' among
    them when the KP suite ran first), not only this check's own."""
    if lab.plugin_registries is None:
        pytest.skip(f"the {lab.provider.name} provider's nodes run no plugin recorder: when prepare was asked is not known")
    checks.settled(observed, evidence)  # the subject: the observed claim's entries, in the claim log too
    uid = observed.read()["metadata"]["uid"]

    def logged() -> list[dict[str, Any]]:  # the watch writes a version moments after the API server has it
        versions = lab.claim_versions()
        return versions if any(v["uid"] == uid and claims.device_status(v, observed.driver.name) for v in versions) else []

    try:
        versions = wait_for(f"the claim log to show the entries of claim {observed.claim}", logged, 10)
    except WaitTimeout:
        raise ObservationFailed(
            f"the claim log has no version of claim {observed.namespace}/{observed.claim} with "
            f"entries of {observed.driver.name}, which its status shows: see {lab.log_dir}"
        ) from None
    calls = lab.plugin_calls()
    with_entries = {v["uid"] for v in versions if claims.device_status(v, observed.driver.name)}
    evidence.observe(
        "claims seen with entries",
        f"{len(with_entries)} claim(s) of the run with entries of "
        f"{observed.driver.name}, {len(versions)} claim version(s) in the claim log",
    )
    problems = checks.entries_before_prepare(versions, calls, observed.driver.name)
    evidence.add(
        "claim versions with entries before their prepare", [v for v in versions if any(f"({v['uid']})" in p for p in problems)][:20]
    )
    assert not problems, f"{observed.driver.name} reported status before the kubelet asked it to prepare: " + "\n".join(problems)


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


# How long the driver gets to write its entry once the pod runs, and how long dralab keeps watching
# after that for a later write.
ENTRY_TIMEOUT = 30
SETTLE = 3
POD_GONE_TIMEOUT = 90


def _others_not_kept(versions: list[dict[str, Any]], driver: str) -> list[str]:
    """What each write of `driver` (checks.write_of) did to the entries of another driver, with
    who wrote status then."""
    found = []
    for before, after in zip(versions, versions[1:]):
        if checks.write_of(before, after, driver) and (what := checks.others_not_kept(before, after, driver)):
            managers = sorted(
                {f.get("manager", "?") for f in after["metadata"].get("managedFields") or [] if f.get("subresource") == "status"}
            )
            found += [f"resourceVersion {after['metadata']['resourceVersion']} {w} (status field managers then: {managers})" for w in what]
    return found


@pytest.mark.requirement("ST-08")
def test_a_status_write_keeps_the_entries_of_other_drivers(
    lab: Lab, api, status_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    with other_driver.reference_gpu(lab, "ST-08") as other:
        (mine, theirs), node = other_driver.free_on_one_node(lab, api, (status_driver.name, other.name), "ST-08")
        claim = ClaimBuilder("shared").request("mine", status_driver.device_class).request("other", other.device_class)
        if status_driver.profile.claim_config is not None:
            claim.opaque(status_driver.name, status_driver.profile.claim_config, requests=("mine",))
        claims.create(api, namespace, claim)
        pod = pods.create_bound(api, namespace, pods.PodBuilder("shared").with_claim("c", claim="shared"), node)
        current = claims.read(api, namespace, "shared")
        watched = claim_watch.Versions(api, namespace, "shared", current["metadata"]["resourceVersion"])
        # The other driver's entry is there before either driver prepares: the driver under test
        # writes after it, whichever order the kubelet calls them in.
        theirs_entry = {
            "driver": other.name,
            "pool": theirs.pool,
            "device": theirs.name,
            "data": {"writtenBy": "dralab, as the other driver, before prepare"},
        }
        claims.allocate_by_hand(
            api,
            current,
            [
                {"request": "mine", "driver": status_driver.name, "pool": mine.pool, "device": mine.name},
                {"request": "other", "driver": other.name, "pool": theirs.pool, "device": theirs.name},
            ],
            node,
            pod,
            devices=[theirs_entry],
        )
        try:
            try:
                pods.wait_phase(api, namespace, "shared")
            except PrepareRefused as e:
                checks.fail_if_refused(str(e), status_driver, "claim shared's", "and the driver failed the prepare")
                raise Blocked("KP-03", f"the drivers did not prepare the claim this check needs: {e}") from None
            try:
                wait_for(
                    f"{status_driver.name}'s entry in claim shared",
                    lambda: claims.device_status(claims.read(api, namespace, "shared"), status_driver.name),
                    ENTRY_TIMEOUT,
                )
            except WaitTimeout:
                logs = "\n".join(text for pod in status_driver.pods_on(api, node) for _, text in driver_evidence.container_logs(api, pod))
                checks.fail_if_refused(logs, status_driver, "claim shared's", "(the driver's log)")
                pytest.skip(
                    f"{status_driver.name} wrote no status entry for its device {mine.pool}/{mine.name} of claim "
                    f"shared within {ENTRY_TIMEOUT}s of its pod running: no write of its to judge"
                )
            time.sleep(SETTLE)
        finally:
            versions = watched.stop()
            # Gone while both drivers run: each unprepares its part of the claim.
            client.CoreV1Api(api).delete_namespaced_pod("shared", namespace)
            driver_must(
                "pod shared gone, its claim unprepared by both drivers",
                lambda: not client.CoreV1Api(api).list_namespaced_pod(namespace, field_selector="metadata.name=shared").items,
                POD_GONE_TIMEOUT,
            )
    evidence.observe(
        "status.devices of claim shared, version by version",
        [{"resourceVersion": v["metadata"]["resourceVersion"], "entries": claims.device_status(v)} for v in versions],
    )
    not_kept = _others_not_kept(versions, status_driver.name)
    assert not not_kept, (
        f"a write of claim shared's status.devices by {status_driver.name} did not keep the entries {other.name} owns "
        f"as they were; the driver under test wrote status for {mine.pool}/{mine.name}:\n" + "\n".join(not_kept)
    )
