"""ST-08 and ST-07 over every claim the run saw: each write of the driver's status.devices entries
into a claim that already held another driver's keeps them, judged on the claim log (the generated
workloads' claims of two drivers among them, drawn by the first check that asks for them),
after the other tests (over_the_run); a generated pod whose prepare failed because the API
server refused such a write FAILs it too; each entry of a claim a pod ran with becomes Ready
(a SHOULD: a WARNING); and the networkData of each entry of a claim a generated pod used describes
the interface the pod has (the interfaces its containers printed at their start)."""

from __future__ import annotations

from typing import Callable

import pytest

from clusters.providers import Lab
from drivers_under_test.profile import Capability
from suites.framework import claims, nri
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
    judged, violating, problems = checks.others_dropped_over_the_run(versions, status_driver.name)
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
    assert not problems, f"writes of {status_driver.name}'s status dropped other drivers' entries:\n" + "\n".join(problems)


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
    lab: Lab, status_driver: DriverUnderTest, generated_workloads: Callable[[DriverUnderTest], generated.Run], evidence: Evidence
) -> None:
    status_driver.requires(Capability.NETWORK_DATA)
    run = generated_workloads(status_driver)
    if run.skipped:
        pytest.skip(run.skipped)
    judged, problems = checks.network_data_over_the_run(lab.claim_versions(), lab.container_files(), status_driver.name)
    evidence.observe(
        "devices judged", f"{judged} device(s) of {status_driver.name} in claims of generated pods that printed their interfaces"
    )
    if not judged:
        pytest.skip(
            f"no generated pod that printed its interfaces used a device of {status_driver.name} (seed "
            f"{run.seed}), or the claims' allocations are not logged (a cluster dralab did not start)"
        )
    evidence.add(
        "interfaces the pods printed",
        [
            {k: r[k] for k in ("namespace", "pod", "container", "interfaces")}
            for r in lab.container_files()
            if any(f"pod {r['namespace']}/{r['pod']}:" in p for p in problems)
        ][:10],
    )
    assert not problems, (
        f"{len(problems)} of {judged} devices' networkData do not describe the pod's interface:\n"
        + "\n".join(problems[:20])
        + nri.explain(lab, evidence)
    )
