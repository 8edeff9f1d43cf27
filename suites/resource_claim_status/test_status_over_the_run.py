"""ST-01, ST-08 and ST-07 over every claim the run saw: each entry of the driver, in each claim
version and in each status write it sent, is for a device its claim allocates to it; each write
of the driver's status.devices entries into a claim that already held another driver's keeps
them, each field as it was, judged on the claim log (the generated
workloads' claims of two drivers among them, drawn by the first check that asks for them),
after the other tests (over_the_run); a generated pod whose prepare failed because the API
server refused such a write FAILs it too; each entry of a claim a pod ran with becomes Ready
(a SHOULD: a WARNING); and the networkData of each device of a claim a generated pod used
describes the device's own interface in the pod (the interfaces its containers printed at their
start), there 30 s after the pod printed them at the latest."""

from __future__ import annotations

from typing import Callable

import pytest

from clusters.providers import Lab
from drivers_under_test.profile import Capability
from suites.framework import claims, nri, slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.kubelet_plugin import generated
from suites.resource_claim_status import checks

pytestmark = [pytest.mark.e2e, pytest.mark.over_the_run]


@pytest.mark.requirement("ST-08")
def test_no_status_write_of_the_run_dropped_the_entries_of_another_driver(
    lab: Lab, status_driver: DriverUnderTest, generated_workloads: Callable[[DriverUnderTest], generated.Run], evidence: Evidence
) -> None:
    run = generated_workloads(status_driver)
    if run.failure:
        checks.fail_if_refused(
            run.failure.text, status_driver, "a claim's", "and the driver failed the prepare of a generated pod", f"\n\n{run.failure.text}"
        )
    versions = lab.claim_versions()
    judged, violating, problems = checks.others_not_kept_over_the_run(versions, status_driver.name)
    evidence.observe(
        "writes judged",
        f"{judged} write(s) of {status_driver.name}'s entries into a claim holding another "
        f"driver's, in {len(versions)} claim version(s) of {len({v['uid'] for v in versions})} "
        f"claim(s); the generated workloads' second driver: {run.second_driver}",
    )
    if not judged:
        pytest.skip(
            f"no write of {status_driver.name}'s status entries into a claim already holding another driver's "
            f"was seen (seed {run.seed}; the generated claims of two drivers: {run.second_driver}): the fixed "
            "ST-08 scenario judges its own claim"
        )
    evidence.add(
        "status.devices before and after each violating write",
        [
            {"claim": f"{v['namespace']}/{v['name']}", "resourceVersion": v["resourceVersion"], "devices": claims.device_status(v)}
            for v in violating
        ][:20],
    )
    assert not problems, f"writes of {status_driver.name}'s status removed or changed other drivers' entries:\n" + "\n".join(problems)


@pytest.mark.requirement("ST-01")
def test_every_entry_the_driver_wrote_in_the_run_is_for_a_device_its_claim_allocates_it(
    lab: Lab, status_driver: DriverUnderTest, generated_workloads: Callable[[DriverUnderTest], generated.Run], evidence: Evidence
) -> None:
    run = generated_workloads(status_driver)
    versions = lab.claim_versions()
    writes = checks.status_writes_of(lab, status_driver, "judging the driver's status writes")
    found = checks.entries_outside_allocation(versions, writes or [], status_driver.name)
    evidence.observe(
        "entries judged",
        f"{found.in_versions} entry(ies) of {status_driver.name} in {len(versions)} claim version(s) of "
        f"{len({v['uid'] for v in versions})} claim(s); "
        + (
            f"{found.in_writes} entry(ies) sent in {len(writes)} status write(s) of its service accounts (the API server's audit log)"
            if writes is not None
            else "no audit log of status writes on this lab: a write the API server refused is not seen"
        ),
    )
    if not found.in_versions + found.in_writes:
        pytest.skip(
            f"no entry of {status_driver.name} in the claim log nor in its status writes (seed {run.seed}), or no "
            "claim log (a cluster dralab did not start)"
        )
    named = [w.body for w in writes or [] if any(p.startswith(w.time) for p in found.problems)]
    evidence.add("status writes sending such entries", named[:10])
    assert not found.problems, (
        f"{status_driver.name} wrote status.devices entries for devices its claims' allocations do not give it:\n"
        + "\n".join(found.problems[:20])
    )


@pytest.mark.requirement("ST-07")
def test_every_entry_of_a_claim_a_pod_ran_with_became_ready(
    lab: Lab, status_driver: DriverUnderTest, generated_workloads: Callable[[DriverUnderTest], generated.Run], evidence: Evidence
) -> None:
    run = generated_workloads(status_driver)
    judged, problems = checks.not_ready_over_the_run(lab.claim_versions(), lab.pod_versions(), status_driver.name)
    evidence.observe("entries judged", f"{judged} entry(ies) of {status_driver.name} in claims a pod of the run ran with")
    if not judged:
        pytest.skip(f"no claim a pod of the run ran with carried an entry of {status_driver.name} (seed {run.seed})")
    # API reference, AllocatedDeviceStatus.conditions: the Ready condition "should" be True once configured.
    assert not problems, f"{len(problems)} of {judged} entries never became Ready:\n" + "\n".join(problems[:20])


@pytest.mark.requirement("ST-02")
def test_the_network_data_of_every_entry_describes_the_pods_interface(
    lab: Lab, api, status_driver: DriverUnderTest, generated_workloads: Callable[[DriverUnderTest], generated.Run], evidence: Evidence
) -> None:
    status_driver.requires(Capability.NETWORK_DATA)
    run = generated_workloads(status_driver)
    if run.skipped:
        pytest.skip(run.skipped)
    found = checks.network_data_over_the_run(
        lab.claim_versions(), lab.container_files(), status_driver.name, slices.attributes(api, status_driver.name)
    )
    evidence.observe(
        "devices judged", f"{found.judged} device(s) of {status_driver.name} in claims of generated pods that printed their interfaces"
    )
    if not found.judged:
        pytest.skip(
            f"no generated pod that printed its interfaces used a device of {status_driver.name} (seed "
            f"{run.seed}), or the claims' allocations are not logged (a cluster dralab did not start)"
        )
    for warning in found.warnings[:20]:
        evidence.warn(warning)
    evidence.add(
        "interfaces the pods printed",
        [
            {k: r[k] for k in ("namespace", "pod", "container", "interfaces")}
            for r in lab.container_files()
            if any(f"claim {r['namespace']}/{c['claim']} (" in p for c in r["pod_claims"] for p in found.problems)
        ][:10],
    )
    assert not found.problems, (
        f"{len(found.problems)} of {found.judged} devices' networkData do not describe the pod's interface:\n"
        + "\n".join(found.problems[:20])
        + nri.explain(lab, evidence)
    )
