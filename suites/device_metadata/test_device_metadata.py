"""KEP-5304 device metadata, as shipped in v1.37 (MD-*), against each driver under test.

The checks live in checks.py (the self-check runs them against broken variants); here each
requirement gets its test, its SKIP conditions and, where the KEP text differs from shipped
Kubernetes, its spec-drift record."""

from __future__ import annotations

from typing import Iterator

import pytest

from suites.framework.evidence import Evidence
from drivers_under_test.profile import Capability
from suites.device_metadata import checks
from suites.device_metadata.scenario import ONE_DEVICE, SEVERAL_DEVICES, TWO_REQUESTS, Readers, Scenario, Shape, single
from suites.framework import metadata_paths, spec_drift
from suites.framework.drivers import DriverUnderTest
from suites.framework.spec_drift import Drift

pytestmark = pytest.mark.e2e
KEP = "KEP-5304"


def _reader(request: pytest.FixtureRequest, driver: DriverUnderTest, readers: Readers, need: Shape) -> Iterator[Scenario]:
    """A metadata reader with the requests the test's check reads; SKIP where no node has room."""
    driver.requires(Capability.METADATA)
    with readers.serving(need, request.node.get_closest_marker("requirement").args[0]) as s:
        yield s


@pytest.fixture
def scenario(request, driver: DriverUnderTest, readers: Readers) -> Iterator[Scenario]:
    yield from _reader(request, driver, readers, ONE_DEVICE)


@pytest.fixture
def two_requests(request, driver: DriverUnderTest, readers: Readers) -> Iterator[Scenario]:
    yield from _reader(request, driver, readers, TWO_REQUESTS)


@pytest.fixture
def several_devices(request, driver: DriverUnderTest, readers: Readers) -> Iterator[Scenario]:
    yield from _reader(request, driver, readers, SEVERAL_DEVICES)


@pytest.mark.requirement("MD-01")
def test_file_at_shipped_container_path(scenario: Scenario, evidence: Evidence, request) -> None:
    checks.file_at_shipped_path(scenario, evidence)
    kep_path = metadata_paths.kep_in_container(scenario.claim_name, "req0", scenario.driver.name)
    spec_drift.record(
        request,
        Drift(
            KEP,
            "container path",
            f"the file is at {kep_path}",
            f"at {metadata_paths.in_container(scenario.claim_name, 'req0', scenario.driver.name)}; "
            f"{kep_path} {'exists' if scenario.read_in('c0', kep_path) else 'does not exist'}",
        ),
    )


@pytest.mark.requirement("MD-02")
def test_content_matches_the_claim(scenario: Scenario, evidence: Evidence, request) -> None:
    checks.content(scenario, evidence)
    versions = scenario.stream_in("c0", "req0").versions
    spec_drift.record(
        request,
        Drift(KEP, "multi-version stream", "one JSON object per file", f"a stream of {len(versions)} object(s): {', '.join(versions)}"),
    )


@pytest.mark.requirement("MD-03")
def test_attributes_are_typed_and_agree_with_the_slice(scenario: Scenario, evidence: Evidence) -> None:
    checks.attributes_typed_and_agree(scenario, evidence)


@pytest.mark.requirement("MD-04")
def test_a_container_sees_only_its_requests(two_requests: Scenario, evidence: Evidence) -> None:
    checks.isolation(two_requests, evidence)


@pytest.mark.requirement("MD-05")
def test_requests_get_separate_directories(two_requests: Scenario, evidence: Evidence) -> None:
    checks.separate_directories(two_requests, evidence)


@pytest.mark.requirement("MD-06")
def test_a_request_for_several_devices_lists_all(several_devices: Scenario, evidence: Evidence) -> None:
    checks.several_devices_in_one_file(several_devices, evidence)


@pytest.mark.requirement("MD-10")
def test_init_sidecar_and_regular_containers_see_the_files(scenario: Scenario, evidence: Evidence) -> None:
    checks.every_container_kind_sees_the_files(scenario, evidence)


@pytest.mark.requirement("MD-11")
def test_read_only_mount_and_host_modes(scenario: Scenario, evidence: Evidence) -> None:
    checks.read_only_and_modes(scenario, evidence)


@pytest.mark.requirement("MD-12")
def test_host_layout(scenario: Scenario, evidence: Evidence) -> None:
    checks.host_layout(scenario, evidence)


@pytest.mark.requirement("MD-13")
@pytest.mark.parametrize("digit_first", [True, False], ids=["uid-starting-with-a-digit", "uid-starting-with-a-letter"])
def test_cdi_spec(
    lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence, request, digit_first: bool
) -> None:
    # Both cases every run: the framework's minimum cdiVersion depends on the UID's first character.
    s = single(lab, api, node_files, metadata_driver, namespace, "cdi-spec", uid_digit_first=digit_first)
    version = checks.cdi_spec(s, evidence)
    spec_drift.record(
        request,
        Drift(
            KEP,
            "cdiVersion",
            "cdiVersion 0.3.0",
            f"cdiVersion {version} for claim UID {s.uid} ({'starts with a digit' if digit_first else 'starts with a letter'})",
        ),
    )


@pytest.mark.requirement("MD-19")
def test_every_object_passes_v1beta1_validation(scenario: Scenario, evidence: Evidence) -> None:
    checks.valid_v1beta1(scenario, evidence)
