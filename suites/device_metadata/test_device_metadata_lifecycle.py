"""KEP-5304 device metadata beyond one named claim: templates, subrequests, deferred updates,
cleanup and many pods at once (MD-08, MD-09, MD-14, MD-16, MD-17, MD-20)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from basics.errors import LabBroken
from clusters.providers import Lab
from suites.framework.evidence import Evidence
from drivers_under_test.profile import Capability
from suites.device_metadata import checks, scenario
from suites.device_metadata.scenario import Scenario, container
from suites.framework import claims, metadata_paths, pods, slices, spec_drift
from suites.framework.drivers import DriverUnderTest
from suites.framework.metadata_file import parse_stream
from suites.framework.spec_drift import Drift
from suites.framework.verdicts import require

pytestmark = pytest.mark.e2e
KEP = "KEP-5304"


@pytest.mark.requirement("MD-08")
def test_template_claims_use_the_template_path_and_pod_claim_name(
    lab: Lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    template = metadata_driver.claim("tmpl").build()
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "tmpl"},
        "spec": {"spec": template["spec"]},
    }
    client.ResourceV1Api(api).create_namespaced_resource_claim_template(namespace, template)  # type: ignore[arg-type]  # a dict: validate_call builds the model
    spec = {
        "containers": [container("main", scenario.SLEEP, "gpu")],
        "terminationGracePeriodSeconds": 1,
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tmpl"}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "from-template"}, "spec": spec}
    pods.create(api, namespace, pod)
    running: Any = pods.wait_phase(api, namespace, "from-template")  # claim statuses, node_name: Optional in the client, set
    generated = running.status.resource_claim_statuses[0].resource_claim_name
    s = Scenario(lab, api, node_files, metadata_driver, namespace, "from-template", generated)
    s.node, s.claim = running.spec.node_name, claims.read(api, namespace, generated)
    path = metadata_paths.in_container("gpu", "dev", metadata_driver.name, template=True)
    evidence.add("files in the container", s.listed_in("main", metadata_paths.CONTAINER_ROOT))
    text = s.read_in("main", path)
    assert text is not None, f"no file at {path}"
    obj = parse_stream(text).first_known()
    evidence.add(path, obj)
    assert obj.get("podClaimName") == "gpu", f"podClaimName {obj.get('podClaimName')!r}, want 'gpu'"
    assert obj["metadata"]["name"] == generated


@pytest.mark.requirement("MD-09")
def test_subrequests_use_the_base_request_directory(
    lab: Lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    claim = metadata_driver.claim("first-available").build()
    # The first subrequest cannot be met (more devices than any node has): the second is allocated.
    cls = metadata_driver.device_class
    claim["spec"]["devices"]["requests"] = [
        {
            "name": "dev",
            "firstAvailable": [{"name": "many", "deviceClassName": cls, "count": 100}, {"name": "one", "deviceClassName": cls, "count": 1}],
        }
    ]
    client.ResourceV1Api(api).create_namespaced_resource_claim(namespace, claim)  # type: ignore[arg-type]  # a dict: validate_call builds the model
    spec = {
        "containers": [container("main", scenario.SLEEP, "c")],
        "terminationGracePeriodSeconds": 1,
        "resourceClaims": [{"name": "c", "resourceClaimName": "first-available"}],
    }
    s = Scenario(lab, api, node_files, metadata_driver, namespace, "subrequests", "first-available").start(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "subrequests"}, "spec": spec}
    )
    evidence.add("allocation", claims.allocated(s.claim))
    assert [r["request"] for r in claims.allocated(s.claim)] == ["dev/one"]
    obj = s.stream_in("main", "dev").first_known()
    evidence.add("metadata", obj)
    names = [r["name"] for r in obj["requests"]]
    assert names == ["dev/one"], f"the file names its request {names}, want ['dev/one']: the JSON keeps request/subrequest"


@pytest.mark.requirement("MD-14")
def test_files_are_removed_after_unprepare(
    lab: Lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    checks.cleanup(scenario.single(lab, api, node_files, metadata_driver, namespace), evidence)


@pytest.fixture
def deferred(lab: Lab, api, node_files, driver: DriverUnderTest, namespace: str) -> Scenario:
    driver.requires(Capability.METADATA, Capability.METADATA_DEFERRED)
    return scenario.single(lab, api, node_files, driver, namespace, "deferred", checks.copy_at_start(driver.name, "deferred"))


@pytest.mark.requirement("MD-16")
def test_deferred_network_data_is_there_before_the_first_container(deferred: Scenario, evidence: Evidence) -> None:
    checks.deferred_network_data(deferred, evidence)


def _generation_at_start(deferred: Scenario) -> object:
    """The generation of the deferred file as container main saw it at its start."""
    return parse_stream(deferred.read_in("main", checks.AT_START) or "").first_known()["metadata"]["generation"]


@pytest.mark.requirement("MD-17")
def test_an_update_raises_generation_by_one(deferred: Scenario, evidence: Evidence, request) -> None:
    checks.update_generation(deferred, evidence)
    spec_drift.record(
        request,
        Drift(
            KEP,
            "generation of deferred metadata",
            "an empty file until the first update, which writes generation 1",
            f"the file exists from prepare on; the first update wrote generation {_generation_at_start(deferred)}",
        ),
    )


@pytest.mark.requirement("MD-20")
def test_many_pods_at_once(lab: Lab, api, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence) -> None:
    count = min(20, len(slices.free(api, metadata_driver.name)))
    # One pod prepares nothing "at once": a cluster with fewer free devices cannot show cross-talk.
    require(
        count >= 2,
        f"{count} free device(s) of {metadata_driver.name} "
        f"({slices.room(api, metadata_driver.name).describe()}); MD-20 needs 2 or more, one per pod",
        slices.MORE_DEVICES,
    )
    for i in range(count):  # all created before any is waited for
        claims.create(api, namespace, metadata_driver.claim(f"claim-{i}"))
        spec = {
            "containers": [container("main", scenario.SLEEP, "c")],
            "terminationGracePeriodSeconds": 1,
            "resourceClaims": [{"name": "c", "resourceClaimName": f"claim-{i}"}],
        }
        pods.create(api, namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}"}, "spec": spec})
    bad: dict[str, object] = {}
    for i in range(count):
        pods.wait_phase(api, namespace, f"pod-{i}")
        s = Scenario(lab, api, None, metadata_driver, namespace, f"pod-{i}", f"claim-{i}")
        s.claim = claims.read(api, namespace, f"claim-{i}")
        text = s.read_in("main", metadata_paths.in_container(f"claim-{i}", "dev", metadata_driver.name)) or ""
        try:
            obj = parse_stream(text).first_known()
            listed = [(d["driver"], d["pool"], d["name"]) for d in obj["requests"][0]["devices"]]
            if obj["metadata"]["uid"] != s.uid or listed != s.allocated("dev"):
                bad[f"pod-{i}"] = {"file": obj, "allocated": s.allocated("dev")}
        except LabBroken:
            raise
        except Exception as e:  # a torn or missing file is what this check looks for
            bad[f"pod-{i}"] = f"{type(e).__name__}: {e}\n{text}"
    evidence.add("pods whose file is wrong", bad)
    assert not bad, f"{len(bad)} of {count} pods have a wrong or torn file: {sorted(bad)}"
