"""KEP-5304 device metadata when what runs changes: a second driver serving the same request
(MD-07), the driver deployed with metadata turned off (MD-15), and restarts of the driver, the
kubelet, containerd and the whole node under running pods (MD-18)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from kubernetes import client

from clusters import providers
from clusters.providers import Lab
from suites.framework.evidence import Evidence
from drivers_under_test.deploy import deploy, remove
from drivers_under_test.profile import METADATA_DISABLED, Capability
from suites.device_metadata import checks, restart_comparison, scenario
from suites.device_metadata.scenario import Scenario, container
from suites.framework import claims, metadata_paths, namespaces, other_driver, pods, restarts, slices, spec_drift
from suites.framework.claims import ClaimBuilder
from suites.framework.drivers import DriverUnderTest
from suites.framework.metadata_file import parse_stream
from suites.framework.node_files import NodeFiles
from suites.framework.spec_drift import Drift
from suites.framework.verdicts import Blocked, DriverFailure, require
from suites.framework.waits import DriverTimedOut

pytestmark = pytest.mark.e2e
KEP = "KEP-5304"


# MD-07 ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def second_driver(lab: Lab, driver: DriverUnderTest) -> Iterator[DriverUnderTest]:
    """The other driver of MD-07."""
    driver.requires(Capability.METADATA)  # first: a driver without metadata SKIPs for that, whatever the lab has
    with other_driver.reference_gpu(lab, "MD-07") as second:
        yield second


@pytest.fixture
def shared_class(api) -> Iterator[Any]:
    """shared_class(selectors): a DeviceClass matching a device if any of the CEL selectors does;
    deleted afterwards."""
    created: list[str] = []

    def make(selectors: list[str]) -> str:
        name = f"md-shared-{uuid.uuid4().hex[:8]}"
        expression = " || ".join(f"({s})" for s in selectors)
        client.ResourceV1Api(api).create_device_class(
            {  # type: ignore[arg-type]  # a dict: validate_call builds the model
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
        )
        created.append(name)
        return name

    yield make
    for name in created:
        client.ResourceV1Api(api).delete_device_class(name)


@pytest.mark.requirement("MD-07")
def test_one_request_served_by_two_drivers(
    lab: Lab,
    api,
    node_files,
    metadata_driver: DriverUnderTest,
    second_driver: DriverUnderTest,
    shared_class,
    namespace: str,
    evidence: Evidence,
) -> None:
    drivers = (metadata_driver.name, second_driver.name)
    free, node = other_driver.free_on_one_node(lab, api, drivers, "MD-07")
    selectors = [slices.selector_for(f, [p for p in slices.published(api, f.driver) if p.node == node]) for f in free]
    require(
        all(selectors),
        f"no attribute tells {' or '.join(f'{f.driver} device {f.name}' for f, s in zip(free, selectors) if s is None)} "
        f"from the other devices of {node}, so no device class can match just the two",
        "publish an attribute that differs between the devices of a node (a uuid, a PCI address)",
    )
    # On that node the class matches just these two devices: a request for two is served by both drivers.
    claim = ClaimBuilder("two-drivers").request("dev", shared_class(selectors), count=2)
    if metadata_driver.profile.claim_config is not None:
        claim.opaque(metadata_driver.name, metadata_driver.profile.claim_config)
    claims.create(api, namespace, claim)
    spec = {
        "containers": [container("main", scenario.SLEEP, "c")],
        "terminationGracePeriodSeconds": 1,
        "nodeSelector": {"kubernetes.io/hostname": node},
        "resourceClaims": [{"name": "c", "resourceClaimName": "two-drivers"}],
    }
    s = Scenario(lab, api, node_files, metadata_driver, namespace, "two-drivers", "two-drivers").start(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two-drivers"}, "spec": spec}
    )
    evidence.add("allocation", claims.allocated(s.claim))
    listing = s.listed_in("main", metadata_paths.CONTAINER_ROOT, only_files=True)
    evidence.add("files in the container", listing)
    assert listing == sorted(metadata_paths.in_container("two-drivers", "dev", d) for d in drivers), (
        "want one file per driver under the request's directory"
    )
    for driver in drivers:
        obj = parse_stream(s.read_in("main", metadata_paths.in_container("two-drivers", "dev", driver)) or "").first_known()
        evidence.add(f"{driver}'s file", obj)
        listed = sorted((d["driver"], d["pool"], d["name"]) for d in obj["requests"][0]["devices"])
        own = sorted((r["driver"], r["pool"], r["device"]) for r in claims.allocated(s.claim, driver))
        assert own and listed == own, f"{driver}'s file lists {listed}; its devices in the allocation are {own}"


# MD-12 under a kubelet root other than /var/lib/kubelet --------------------------------------


@pytest.mark.requirement("MD-12")
def test_host_layout_follows_a_non_default_kubelet_root(gates_off_lab: Lab, metadata_driver: DriverUnderTest, evidence: Evidence) -> None:
    lab, profile = gates_off_lab, metadata_driver.profile
    api, root = lab.api(), lab.nodes[0].kubelet_root_dir
    deploy(lab, profile)
    files = NodeFiles(lab, api)
    try:
        require(
            slices.published(api, metadata_driver.name),
            f"the lab whose kubelets are rooted at {root} has no devices of {metadata_driver.name}",
            "give the driver profile hardware that lab has",
        )
        with namespaces.fresh(api, prefix="md-root") as ns:
            s = scenario.single(lab, api, files, metadata_driver, ns, "other-root")
            checks.host_layout(s, evidence)
    finally:
        files.close()
        remove(lab, profile)


# MD-15 ----------------------------------------------------------------------------------------


@pytest.mark.requirement("MD-15")
def test_metadata_disabled_means_no_files_no_specs_no_mount(
    lab: Lab, api, node_files, deploy_driver, metadata_driver: DriverUnderTest, evidence: Evidence
) -> None:
    profile = metadata_driver.profile
    if METADATA_DISABLED not in profile.variants:
        pytest.skip(
            f"driver profile {profile.name} has no variant {METADATA_DISABLED} (how to deploy the driver with device metadata turned off)"
        )
    off = DriverUnderTest(deploy_driver(str(profile.source), METADATA_DISABLED), METADATA_DISABLED)
    try:
        with namespaces.fresh(api, prefix="md-off") as ns:
            s = scenario.single(lab, api, node_files, off, ns, "no-metadata")  # returns once the pod runs
            dirs = s.cdi_dirs(evidence)
            claim_dir = metadata_paths.claim_dir_on_node(s.kubelet_root, off.name, ns, s.claim_name)
            seen = {
                "metadata files in the container": s.listed_in("main", metadata_paths.CONTAINER_ROOT, metadata_paths.KEP_CONTAINER_ROOT),
                f"{claim_dir} on {s.node}": sorted(s.files.listing(s.node, claim_dir)),
                f"metadata CDI specs in {', '.join(dirs)}": s.cdi_specs(dirs, off.name),
            }
            evidence.add("with metadata disabled", seen)
            assert not any(seen.values()), f"metadata is disabled, yet there are {[k for k, v in seen.items() if v]}"
    finally:
        deploy_driver(str(profile.source))  # the module's other checks need metadata on


# MD-18 ----------------------------------------------------------------------------------------


def _observed(s: Scenario, cdi_dirs: tuple[str, ...]) -> dict[str, str | None]:
    spec = s.cdi_spec(cdi_dirs, "dev")
    return {
        "in the container": s.read_in("main", metadata_paths.in_container(s.claim_name, "dev", s.driver.name)),
        "on the node": s.files.read(s.node, s.host_file("dev")),
        "CDI spec": spec and spec[1],
    }


def _plant_stale_files(lab: Lab, s: Scenario, cdi_dirs: tuple[str, ...]) -> list[Path]:
    """The metadata directory and CDI spec of a claim that no longer exists, as a crash leaves
    them: copies of the live ones under another claim, beside them on the node's host paths
    (local labs)."""
    node = lab.node(s.node)
    stale_uid, stale_claim = str(uuid.uuid4()), f"stale-{s.claim_name}"
    stale_file = metadata_paths.on_node(s.kubelet_root, s.driver.name, s.namespace, stale_claim, "dev")
    found = s.cdi_spec(cdi_dirs, "dev")
    assert found is not None, checks.no_spec(s, cdi_dirs, "dev")
    spec_path, spec = found
    stale_spec = f"{spec_path.rpartition('/')[0]}/{metadata_paths.cdi_spec_name(s.driver.name, stale_uid, 'dev')}"
    planted = {
        stale_file: s.files.read(s.node, s.host_file("dev")) or "",
        stale_spec: spec.replace(s.uid, stale_uid).replace(s.host_file("dev"), stale_file),
    }
    for path, text in planted.items():
        host = node.host_path(path)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text)
    claim_dir = metadata_paths.claim_dir_on_node(s.kubelet_root, s.driver.name, s.namespace, stale_claim)
    return [node.host_path(claim_dir), node.host_path(stale_spec)]


def _remove(planted: list[Path]) -> None:
    for path in planted:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


@pytest.mark.requirement("MD-18")
def test_running_pods_keep_their_files_across_a_driver_restart(
    lab: Lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence, request
) -> None:
    s = scenario.single(lab, api, node_files, metadata_driver, namespace, "driver-restart")
    dirs = s.cdi_dirs(evidence)
    before = _observed(s, dirs)
    evidence.add("before the driver restart", before)
    stale = _plant_stale_files(lab, s, dirs) if providers.Capability.HOST_ACCESS in lab.capabilities else []
    try:
        metadata_driver.restart_on(api, s.node)
        after = _observed(s, dirs)
        evidence.add("after the driver restart", after)
        assert after == before, (
            f"the running pod's metadata changed across a driver restart: {sorted(k for k in before if before[k] != after[k])}"
        )
        checks.cleanup(s, evidence)  # the restarted driver still unprepares and removes the files
        if stale:
            left = [str(p) for p in stale if p.exists()]
            spec_drift.record(
                request,
                Drift(
                    KEP,
                    "stale files after a driver restart",
                    "the framework removes stale metadata files and CDI specs (best effort) when the driver restarts",
                    f"{len(left)} of the {len(stale)} stale entries planted before the restart were still there after it: {left}"
                    if left
                    else "the stale entries planted before the restart were removed",
                ),
            )
    finally:
        _remove(stale)


def _why_not_started(s: Scenario, event: str, dirs: tuple[str, ...], evidence: Evidence) -> DriverFailure | None:
    """The driver's part in container main not starting again after the restart, from what the
    kubelet and the runtime said; None if they blame nothing of the driver's. The driver's own CDI
    devices unresolved are KP-07's FAIL, which blocks this check."""
    evidence.add(
        f"container main after the {event}", s.api.sanitize_for_serialization(restarts.container_status(s.api, s.namespace, s.pod, "main"))
    )
    evidence.add(f"events of pod {s.pod}", pods.events(s.api, s.namespace, s.pod))
    unresolved, refusal = restarts.refused_start(s.api, s.namespace, s.pod)
    claim = f"{s.namespace}/{s.claim_name}"
    if unresolved is not None and f"{s.driver.name}/metadata=" not in unresolved:
        raise Blocked(
            "KP-07",
            f"after the {event} the driver's own CDI devices of claim {claim} resolve to no spec, "
            f"so container main cannot start to show its metadata: {unresolved}",
        )
    if unresolved is not None:
        try:
            evidence.add(f"CDI specs on {s.node} after the {event}", [f for d in dirs for f in s.files.glob(s.node, f"{d}/*")] or "(none)")
        except pods.ObservationFailed as e:  # the evidence is best effort, the runtime's words decide
            evidence.add(f"CDI specs on {s.node} after the {event}", f"(not observed: {e})")
        return DriverFailure(
            f"after the {event} the metadata CDI spec of claim {claim} is missing: the claim was "
            f"prepared again, but container main cannot start, its CDI devices resolving to no spec in "
            f"{', '.join(dirs)} on {s.node}: {unresolved}"
        )
    # Else the driver refused to prepare the claim again (the kubelet names its last refusal).
    if refusal is not None:
        return DriverFailure(f"after the {event} the driver refused to prepare claim {claim} again: {refusal}")
    return None


@pytest.mark.requirement("MD-18")
@pytest.mark.parametrize("component", list(restarts.RESTARTS))
def test_a_re_prepared_claim_has_its_metadata_again_after_a_restart_of(
    component: str, host_access: Lab, api, node_files, metadata_driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    event = restarts.RESTARTS[component]
    s = scenario.single(host_access, api, node_files, metadata_driver, namespace, f"{component}-restart")
    dirs = s.cdi_dirs(evidence)
    before, version = _observed(s, dirs), node_files.version(s.node, s.host_file("dev"))
    evidence.add(f"before the {event}", before)
    unseen = [k for k, v in before.items() if v is None]
    assert not unseen, f"before the {event} the running pod's claim has no {', '.join(unseen)}: nothing to compare"
    try:
        restarts.prepare_again(host_access, api, component, s.namespace, s.pod)
    except DriverTimedOut as e:
        raise _why_not_started(s, event, dirs, evidence) or type(e)(
            f"{e}\nevents of {s.pod}:\n{pods.events(api, s.namespace, s.pod)}"
        ) from None
    after = _observed(s, dirs)
    evidence.add(f"after the {event} and a new sandbox", after)
    if component != "containerd":
        assert node_files.version(s.node, s.host_file("dev")) != version, (
            "the claim was not prepared again (its metadata file was not rewritten): nothing to check"
        )
    missing = [k for k, v in after.items() if v is None]
    assert not missing, f"after the {event} the re-prepared claim has no {', '.join(missing)}"
    changed = [k for k in before if restart_comparison.comparable(k, before[k]) != restart_comparison.comparable(k, after[k])]
    assert not changed, f"after the {event} the claim's {', '.join(changed)} differ from before it (generation aside)"
