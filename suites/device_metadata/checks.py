"""The MD checks, each a function of an observed scenario: the tests call them, and the
suite's self-check calls them against the broken variants and expects them to fail."""

from __future__ import annotations

import json

from suites.framework.evidence import Evidence
from drivers_under_test.profile import Capability
from suites.device_metadata import in_containers
from suites.device_metadata.scenario import Scenario
from suites.framework import metadata_paths, pods, slices
from suites.framework.metadata_file import KNOWN_VERSIONS, V1BETA1, parse_stream, problems
from suites.framework.verdicts import require
from suites.framework.waits import WaitTimeout, driver_must
from suites.resource_claim_status import network_data


def generation_problem(s: Scenario, generation: int) -> str | None:
    """Why the generation a container first sees is wrong: 1 after prepare; a deferred (network)
    driver has updated at least once before the pod starts, each update raising it."""
    if s.driver.has(Capability.METADATA_DEFERRED):
        return None if generation >= 2 else f"generation {generation}: the deferred update before the pod started must raise it from 1"
    return None if generation == 1 else f"generation {generation}, want 1 after prepare"


def file_at_shipped_path(s: Scenario, ev: Evidence) -> None:  # MD-01
    first = s.requests[0]
    path = metadata_paths.in_container(s.claim_name, first.name, s.driver.name)
    ev.add(
        f"files under the metadata roots in container {first.container}",
        s.listed_in(first.container, metadata_paths.CONTAINER_ROOT, metadata_paths.KEP_CONTAINER_ROOT) or "(none)",
    )
    assert s.read_in(first.container, path) is not None, f"container {first.container} has no file at {path}"


def content(s: Scenario, ev: Evidence) -> None:  # MD-02
    for request, container in ((r.name, r.container) for r in s.requests):
        stream = s.stream_in(container, request)
        ev.add(f"metadata of {request} in {container}", [*stream.objects])
        assert set(stream.versions) & set(KNOWN_VERSIONS), (
            f"the stream has versions {stream.versions}; one of {', '.join(KNOWN_VERSIONS)} must be among them"
        )
        if V1BETA1 not in stream.versions:
            ev.warn(f"{request}: the stream has {stream.versions}, not the newest version the kubelet serves, {V1BETA1}")
        for obj in stream.objects:
            assert obj["kind"] == "DeviceMetadata"
            meta = obj["metadata"]
            assert (meta["name"], meta["namespace"], meta["uid"]) == (s.claim_name, s.namespace, s.uid), meta
            assert not (problem := generation_problem(s, meta["generation"])), problem
            assert [r["name"] for r in obj["requests"]] == [request], "exactly one request, named as in the claim"
            listed = sorted((d["driver"], d["pool"], d["name"]) for d in obj["requests"][0]["devices"])
            assert listed == sorted(s.allocated(request)), (
                f"devices {listed} differ from the claim's allocation {sorted(s.allocated(request))}"
            )


def attributes_typed_and_agree(s: Scenario, ev: Evidence) -> None:  # MD-03
    published = s.slice_attributes()
    seen = 0
    for r in s.requests:
        for device in s.stream_in(r.container, r.name).first_known()["requests"][0]["devices"]:
            attrs = device.get("attributes", {})
            in_slice = slices.qualified(published.get((device["pool"], device["name"]), {}), s.driver.name)
            ev.add(f"{device['name']}: file vs slice", {"file": attrs, "slice (qualified names)": in_slice})
            seen += len(attrs)
            found = in_containers.attribute_problems(device, published, s.driver.name)
            assert not found, "; ".join(found)
    # The framework writes a file without attributes when a driver gives none: valid, nothing to judge.
    require(
        seen,
        f"no device in {s.driver.name}'s metadata files carries attributes",
        "MD-03 judges attributes a driver writes; a driver that writes none has nothing to check",
    )


def _files(s: Scenario) -> list[str]:
    """The container paths of every request's file, sorted."""
    return sorted(metadata_paths.in_container(s.claim_name, r.name, s.driver.name) for r in s.requests)


def isolation(s: Scenario, ev: Evidence) -> None:  # MD-04, on a reader with two requests or more
    for r in s.requests:
        listing = "\n".join(s.listed_in(r.container, metadata_paths.CONTAINER_ROOT))
        ev.add(f"files in {r.container}", listing)
        assert f"/{r.name}/" in listing, f"{r.container} does not see its own request {r.name}"
        for other in (o.name for o in s.requests if o != r):
            assert f"/{other}" not in listing, f"{r.container} uses only {r.name} but sees {other}'s metadata:\n{listing}"
            assert s.read_in(r.container, metadata_paths.in_container(s.claim_name, other, s.driver.name)) is None


def separate_directories(s: Scenario, ev: Evidence) -> None:  # MD-05, on a reader with two requests or more
    listing = s.listed_in("sidecar", metadata_paths.CONTAINER_ROOT, only_files=True)
    ev.add("files in the sidecar (whole claim)", listing)
    want = _files(s)
    assert listing == want, (
        f"the claim's {len(want)} requests have {len(listing)} metadata file(s) in the sidecar, which "
        f"uses the whole claim: {listing}; want one per request, each in its own directory: {want}"
    )


def several_devices_in_one_file(s: Scenario, ev: Evidence) -> None:  # MD-06, on a reader with a request for 2+
    r = next(r for r in s.requests if r.count > 1)
    devices = s.stream_in(r.container, r.name).first_known()["requests"][0]["devices"]
    ev.add(f"{r.name} devices in the file", devices)
    assert len(devices) == r.count == len(s.allocated(r.name)), (
        f"{r.name} was allocated {len(s.allocated(r.name))} devices; the file lists {len(devices)}"
    )


def every_container_kind_sees_the_files(s: Scenario, ev: Evidence) -> None:  # MD-10
    want = _files(s)
    seen = {
        "init": pods.logs(s.api, s.namespace, s.pod, container="init").split(),
        "sidecar": s.listed_in("sidecar", metadata_paths.CONTAINER_ROOT, only_files=True),
    }
    ev.add("files seen per container", seen)
    for name, files in seen.items():
        assert files == want, f"{name} container sees {files}, want {want}"
    first = s.requests[0]
    assert s.read_in(first.container, metadata_paths.in_container(s.claim_name, first.name, s.driver.name))


def read_only_and_modes(s: Scenario, ev: Evidence) -> None:  # MD-11
    first = s.requests[0]
    path = metadata_paths.in_container(s.claim_name, first.name, s.driver.name)
    # Opened for appending, nothing written: a writable file stays as it was for the checks after this one.
    attempt = s.observe(
        first.container, f"{pods.absent_unless(path)}if ( : >> {path} ) 2>/dev/null; then echo writable; else echo refused; fi"
    )
    ev.add(f"opening the file for writing in {first.container}", attempt)
    assert attempt is not None, f"container {first.container} has no file at {path}"
    assert attempt.strip() == "refused", f"{path} opens for writing inside the container: the mount is writable"
    claim_dir = metadata_paths.claim_dir_on_node(s.kubelet_root, s.driver.name, s.namespace, s.claim_name)
    listing = s.files.listing(s.node, claim_dir)
    ev.add(f"{claim_dir} on {s.node}", {k: vars(v) for k, v in listing.items()})
    assert listing, f"{claim_dir} does not exist on {s.node}"
    for name, entry in listing.items():
        want = "755" if entry.kind == "directory" else "644"
        assert entry.mode == want, f"{name} ({entry.kind}) has mode {entry.mode}, want {want}"


def host_layout(s: Scenario, ev: Evidence) -> None:  # MD-12
    claim_dir = metadata_paths.claim_dir_on_node(s.kubelet_root, s.driver.name, s.namespace, s.claim_name)
    files = sorted(k for k, v in s.files.listing(s.node, claim_dir).items() if v.kind == "regular file")
    ev.add(f"files under {claim_dir} (kubelet root {s.kubelet_root})", files)
    assert files, f"no metadata files under {claim_dir} on {s.node}"
    assert files == sorted(s.host_file(r.name) for r in s.requests)


def no_spec(s: Scenario, dirs: tuple[str, ...], request: str) -> str:
    return (
        f"no CDI spec {metadata_paths.cdi_spec_name(s.driver.name, s.uid, request)} on {s.node} in any dir its containerd "
        f"reads CDI specs from ({', '.join(dirs)})"
    )


def cdi_spec(s: Scenario, ev: Evidence) -> str:  # MD-13; the cdiVersion seen
    dirs = s.cdi_dirs(ev)
    versions = set()
    for request in (r.name for r in s.requests):
        found = s.cdi_spec(dirs, request)
        ev.add(f"CDI spec of {request}", found or "(missing)")
        assert found is not None, no_spec(s, dirs, request)
        spec = json.loads(found[1])
        want_version = "0.5.0" if s.uid[0].isdigit() else "0.3.0"
        versions.add(spec["cdiVersion"])
        assert spec["cdiVersion"] == want_version, f"cdiVersion {spec['cdiVersion']}, want {want_version} for UID {s.uid}"
        assert spec["kind"] == f"{s.driver.name}/metadata", f"kind {spec['kind']}, want {s.driver.name}/metadata"
        assert len(spec["devices"]) == 1, f"{len(spec['devices'])} devices in the spec of {request}, want one"
        (device,) = spec["devices"]
        assert device["name"] == f"{s.uid}_{request}", f"device name {device['name']}, want {s.uid}_{request}"
        mounts = device["containerEdits"].get("mounts") or []
        assert len(mounts) == 1, f"{len(mounts)} mounts in the spec of {request}, want one"
        (mount,) = mounts
        assert mount["hostPath"] == s.host_file(request), f"mount hostPath {mount['hostPath']}, want {s.host_file(request)}"
        want_path = metadata_paths.in_container(s.claim_name, request, s.driver.name)
        assert mount["containerPath"] == want_path, f"mount containerPath {mount['containerPath']}, want {want_path}"
        assert mount["options"] == ["ro", "bind"], f"mount options {mount['options']}"
    return versions.pop()


def valid_v1beta1(s: Scenario, ev: Evidence) -> None:  # MD-19
    for request, container in ((r.name, r.container) for r in s.requests):
        for obj in s.stream_in(container, request).objects:
            found = problems(obj)
            ev.add(f"{obj.get('apiVersion')} object of {request}", {"problems": found, "object": obj})
            assert not found, f"{request}: " + "; ".join(found)


AT_START = "/tmp/metadata-at-start.json"


def copy_at_start(s_driver_name: str, claim: str) -> list[str]:
    """A container command that keeps the file as it was when the container started."""
    return pods.until_stopped(f"cat {metadata_paths.in_container(claim, 'dev', s_driver_name)} > {AT_START}")


def deferred_network_data(s: Scenario, ev: Evidence) -> None:  # MD-16
    text = s.read_in("main", AT_START)
    ev.add("metadata file when the container started", text or "(empty)")
    devices = parse_stream(text or "").first_known()["requests"][0]["devices"]
    assert devices, "the metadata file lists no device when the first container starts"
    published = [s.slice_attributes()]
    judged = [network_data.device(d["pool"], d["name"], published, d.get("networkData")) for d in devices]
    network_data.matches_the_pod(judged, lambda script: s.observe("main", script), ev)


def update_generation(s: Scenario, ev: Evidence) -> None:  # MD-17
    obj = parse_stream(s.read_in("main", AT_START) or "").first_known()
    ev.add("metadata file when the container started", obj)
    assert not (problem := generation_problem(s, obj["metadata"]["generation"])), problem
    assert (obj["metadata"]["name"], obj["metadata"]["namespace"], obj["metadata"]["uid"]) == (s.claim_name, s.namespace, s.uid), (
        "the update changed the claim identity"
    )
    assert [r["name"] for r in obj["requests"]] == ["dev"], f"requests {[r['name'] for r in obj['requests']]}, want ['dev']"
    listed = sorted((d["driver"], d["pool"], d["name"]) for d in obj["requests"][0]["devices"])
    assert listed == sorted(s.allocated("dev")), (
        f"after the update the file lists {listed}; the claim was allocated {sorted(s.allocated('dev'))}"
    )


def cleanup(s: Scenario, ev: Evidence) -> None:  # MD-14
    claim_dir = metadata_paths.claim_dir_on_node(s.kubelet_root, s.driver.name, s.namespace, s.claim_name)
    dirs = s.cdi_dirs(ev)
    assert s.cdi_spec(dirs, "dev") is not None, f"{no_spec(s, dirs, 'dev')} while the pod runs"
    pods.delete(s.api, s.namespace, [s.pod], 60)

    def left() -> dict[str, object]:
        return {"claim dir": sorted(s.files.listing(s.node, claim_dir)), "CDI specs": s.cdi_specs(dirs, s.driver.name)}

    try:
        driver_must(
            f"{claim_dir} and the claim's CDI specs ({', '.join(dirs)}) removed from {s.node} after unprepare",
            lambda: left() == {"claim dir": [], "CDI specs": []},
            20,
        )
    except WaitTimeout:
        ev.add(f"left on {s.node} 20 s after the pod was gone", left())
        raise
