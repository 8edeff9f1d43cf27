"""The MD rules over every container the run saw (in_containers.py): the generated workloads
(drawn by the first check of any suite that asks for them) recorded what each of their
containers found under the metadata root at its start; each rule is judged on all of them,
beside the fixed scenarios, after the other tests (over_the_run)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from clusters.providers import Lab
from drivers_under_test.profile import Capability
from suites.device_metadata import in_containers
from suites.framework import nri, slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.kubelet_plugin import generated

pytestmark = [pytest.mark.e2e, pytest.mark.over_the_run]


# Narrower subjects: the containers using a claim made from a template, the init containers.
SUBJECTS: dict[str, tuple[Callable[[dict[str, Any]], bool], str]] = {
    "template": (lambda r: any(c["template"] for c in r["pod_claims"]), " through a claim made from a template"),
    "init": (lambda r: bool(r.get("init")), " in an init container"),
}


def _judge(
    requirement: str,
    verdict: str,
    lab: Lab,
    driver: DriverUnderTest,
    run: generated.Run,
    evidence: Evidence,
    subject: str | None = None,
    rules: tuple[str, ...] = (),
    published: slices.Published | None = None,
    warned: tuple[str, ...] = (),
) -> None:
    """`requirement` (by the rules of in_containers.problems it names, or `rules`) over the
    containers the run saw using requests of the driver (the subject, before its properties;
    `subject` narrows it, a key of SUBJECTS), the driver's generated workloads `run` among them;
    `published`, the attributes of the driver's devices in its slices (MD-03, MD-16); what the
    rules `warned` find, WARNINGs."""
    if run.skipped:
        pytest.skip(run.skipped)
    records, allocated = lab.container_files(), lab.claims_allocated()
    judged = in_containers.judged(records, allocated, driver.name)
    keep, words = SUBJECTS[subject] if subject else ((lambda r: True), "")
    judged = [r for r in judged if keep(r)]
    evidence.observe("containers seen", f"{len(judged)} container(s) using requests of {driver.name}{words}, of {len(records)} recorded")
    if not judged:
        pytest.skip(
            f"no container the run saw used a request of {driver.name}{words} (seed {run.seed}; another "
            "--seed or a larger --budget draws some), or the claims' allocations are not logged (a cluster "
            "dralab did not start)"
        )
    found = in_containers.problems(judged, allocated, driver.name, driver.has(Capability.METADATA_DEFERRED), published)
    problems = [p for rule in rules or (requirement,) for p in found[rule]]
    for warning in [w for rule in warned for w in found[rule]][:20]:
        evidence.warn(warning)
    evidence.add(
        "what the containers with a violation found",
        [_shown(r) for r in judged if any(f"pod {r['namespace']}/{r['pod']} " in p for p in problems)][:10],
    )
    assert not problems, f"{verdict}:\n" + "\n".join(problems) + nri.explain(lab, evidence)


def _shown(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in ("node", "namespace", "pod", "container", "init", "uses", "pod_claims", "files")}


@pytest.fixture
def workloads(generated_workloads: Callable[[DriverUnderTest], generated.Run], metadata_driver: DriverUnderTest) -> generated.Run:
    """The driver's generated workloads, drawn now if no check drew them yet (suites/conftest.py)."""
    return generated_workloads(metadata_driver)


@pytest.mark.requirement("MD-01")
def test_every_container_has_the_file_of_each_request_it_uses(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge("MD-01", "containers lack the metadata file of a request they use", lab, metadata_driver, workloads, evidence)


@pytest.mark.requirement("MD-02")
def test_every_file_a_container_has_lists_its_requests_allocation(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge("MD-02", "metadata files differ from their claims' allocation", lab, metadata_driver, workloads, evidence)


@pytest.mark.requirement("MD-04")
def test_no_container_has_the_file_of_a_request_it_does_not_use(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge("MD-04", "containers see the metadata of requests they do not use", lab, metadata_driver, workloads, evidence)


@pytest.mark.requirement("MD-08")
def test_every_container_of_a_template_claim_has_its_file_at_the_template_path(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge(
        "MD-08",
        "containers lack the metadata file of a template claim's request",
        lab,
        metadata_driver,
        workloads,
        evidence,
        subject="template",
    )


@pytest.mark.requirement("MD-10")
def test_every_init_container_has_the_files_of_what_it_uses_and_no_other(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge(
        "MD-10",
        "init containers do not see the metadata files of what they use, and only those",
        lab,
        metadata_driver,
        workloads,
        evidence,
        subject="init",
        rules=("MD-01", "MD-08", "MD-04", "MD-02"),
    )


@pytest.mark.requirement("MD-16")
def test_every_container_finds_network_data_that_describes_the_pods_interface(
    lab: Lab, api, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    metadata_driver.requires(Capability.METADATA_DEFERRED)
    _judge(
        "MD-16",
        "metadata files lack networkData at the container's start, or it does not describe the pod's interface",
        lab,
        metadata_driver,
        workloads,
        evidence,
        published=slices.attributes(api, metadata_driver.name),
        warned=(in_containers.NETWORK_DATA_LEFT_OUT,),
    )


@pytest.mark.requirement("MD-03")
def test_every_file_a_container_has_carries_the_attributes_its_slices_publish(
    lab: Lab, api, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    seen = in_containers.attributes_seen(lab.container_files(), metadata_driver.name)
    evidence.observe("attributes seen", f"{seen} attribute(s) of {metadata_driver.name}'s devices in the files recorded")
    if not seen:  # the framework writes a file without attributes when a driver gives none: nothing to judge
        pytest.skip(
            f"no device in the metadata files of {metadata_driver.name} the run's containers saw carries attributes (seed {workloads.seed})"
        )
    published = slices.attributes(api, metadata_driver.name)
    _judge(
        "MD-03",
        "metadata files carry attributes that are not one typed value or differ from the slices'",
        lab,
        metadata_driver,
        workloads,
        evidence,
        published=published,
    )


@pytest.mark.requirement("MD-19")
def test_every_object_of_every_file_a_container_has_is_valid_v1beta1(
    lab: Lab, metadata_driver: DriverUnderTest, workloads: generated.Run, evidence: Evidence
) -> None:
    _judge("MD-19", "metadata files hold objects that break the v1beta1 validation rules", lab, metadata_driver, workloads, evidence)
