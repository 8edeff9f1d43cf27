"""DEP-02: a driver profile is validated before any lab starts, and every problem (schema,
template parameters, manifests, image archives, variants) is listed at once, naming the file."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from basics.errors import BadInput
from drivers_under_test.profile import LAB_PARAMETERS, shipped_profiles
from drivers_under_test.validate import LAB_EXAMPLE, validate, validate_or_raise
from tests.unit.test_driver_profiles import PROFILE as VENDOR_PROFILE

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: vendor, namespace: ${NAMESPACE}}
spec:
  template:
    spec:
      containers:
      - {name: plugin, image: "${IMAGE}", args: ["--root=${KUBELET_ROOT_DIR}", "--cost=$$5"]}
"""

# The vendor profile of the profile tests, its image a parameter of the manifest.
PROFILE = VENDOR_PROFILE.replace("{MODE: fast}", "{IMAGE: vendor/driver:1.0}")

PLATFORM = {"os": "linux", "architecture": "amd64"}


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def blob(blobs: dict[str, bytes], content: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(content).encode()
    digest = hashlib.sha256(data).hexdigest()
    blobs[f"blobs/sha256/{digest}"] = data
    return {"digest": f"sha256:{digest}", "size": len(data)}


def oci_tar(path: Path, config: dict[str, Any], nested: bool = False) -> Path:
    """An OCI image layout tarball; `nested`: index.json names an index (a multi-platform image
    exported for one platform: the other platform's manifest is not in the archive)."""
    blobs: dict[str, bytes] = {}
    manifest = blob(blobs, {"schemaVersion": 2, "config": blob(blobs, config), "layers": []})
    top = manifest
    if nested:
        absent = {"digest": "sha256:" + "0" * 64, "platform": {"os": "linux", "architecture": "arm64"}}
        top = blob(blobs, {"schemaVersion": 2, "manifests": [{**manifest, "platform": PLATFORM}, absent]})
    with tarfile.open(path, "w") as tar:
        for name, data in blobs.items():  # blobs before index.json: the order must not matter
            add(tar, name, data)
        add(tar, "index.json", json.dumps({"schemaVersion": 2, "manifests": [top]}).encode())
    return path


def docker_tar(path: Path, config: dict[str, Any]) -> Path:
    with tarfile.open(path, "w") as tar:
        add(
            tar,
            "manifest.json",
            json.dumps([{"Config": "abc.json", "RepoTags": ["vendor/driver:1.0"], "Layers": ["abc/layer.tar"]}]).encode(),
        )
        add(tar, "abc.json", json.dumps(config).encode())
        add(tar, "abc/layer.tar", b"\0" * 1024)
    return path


def write_profile(tmp_path: Path, text: str = PROFILE, manifest: str = MANIFEST) -> str:
    (tmp_path / "driver.yaml").write_text(manifest)
    if not (tmp_path / "driver.tar").exists():
        oci_tar(tmp_path / "driver.tar", PLATFORM)
    (tmp_path / "vendor.yaml").write_text(text)
    return str(tmp_path / "vendor.yaml")


@pytest.mark.parametrize("name", shipped_profiles())
def test_shipped_profiles_validate_clean(name: str) -> None:
    profile, problems = validate(name)
    assert problems == [] and profile is not None and profile.name == name


def test_lab_example_stands_in_for_every_lab_parameter() -> None:
    assert set(LAB_EXAMPLE) | {"NAMESPACE"} == set(LAB_PARAMETERS)


def test_good_vendor_profile_validates_clean(tmp_path: Path) -> None:
    profile, problems = validate(write_profile(tmp_path), known_ids={"MD-14"})
    assert problems == [] and profile is not None


def test_every_schema_error_is_listed_with_its_field(tmp_path: Path) -> None:
    text = PROFILE.replace("description: A vendor's driver\n", "").replace("[metadata]", "[metadata, telepathy]")
    profile, problems = validate(write_profile(tmp_path, text))
    assert profile is None and len(problems) == 2
    assert all(str(tmp_path / "vendor.yaml") in p for p in problems)
    assert any("description: Field required" in p for p in problems)
    assert any("capabilities.1: Input should be 'metadata'" in p for p in problems)


def test_unreadable_profile_is_one_problem(tmp_path: Path) -> None:
    assert validate(str(tmp_path / "absent.yaml")) == (
        None,
        [f"cannot read driver profile {tmp_path}/absent.yaml: No such file or directory"],
    )
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    profile, (problem,) = validate(str(tmp_path / "bad.yaml"))
    assert profile is None and "is not valid YAML at line" in problem


def test_undefined_parameter_is_named_with_its_manifest(tmp_path: Path) -> None:
    _, problems = validate(write_profile(tmp_path, PROFILE.replace("parameters: {IMAGE: vendor/driver:1.0}", "")))
    (problem,) = problems
    assert f"manifest {tmp_path / 'driver.yaml'} uses ${{IMAGE}}" in problem
    assert "add IMAGE to the profile's parameters" in problem


def test_stray_dollar_is_reported_with_its_line(tmp_path: Path) -> None:
    _, problems = validate(write_profile(tmp_path, manifest=MANIFEST.replace("$$5", "$5")))
    assert problems == [f"manifest {tmp_path / 'driver.yaml'} line 9: a $ that starts no ${{NAME}} (write a literal $ as $$)"]


def test_manifest_that_is_not_yaml_after_substitution(tmp_path: Path) -> None:
    # Unquoted, the value's ": " makes the flow mapping invalid only once substituted.
    text = PROFILE.replace("{IMAGE: vendor/driver:1.0}", "{IMAGE: 'vendor: driver'}")
    _, problems = validate(write_profile(tmp_path, text, MANIFEST.replace('"${IMAGE}"', "${IMAGE}")))
    (problem,) = problems
    assert f"manifest {tmp_path / 'driver.yaml'} is not valid YAML after substitution at line 9" in problem


def test_documents_must_be_kubernetes_objects(tmp_path: Path) -> None:
    _, problems = validate(write_profile(tmp_path, manifest=MANIFEST + "---\n- a list\n---\nkind: ConfigMap\n"))
    path = tmp_path / "driver.yaml"
    assert problems == [
        f"manifest {path} document 2 is not a Kubernetes object: it has no apiVersion, kind, metadata.name",
        f"manifest {path} document 3 is not a Kubernetes object: it has no apiVersion, metadata.name",
    ]


def test_missing_manifests_are_named(tmp_path: Path) -> None:
    text = PROFILE.replace("breaks: [MD-14]}", "breaks: [MD-14], manifests: [rbac.yaml]}")
    _, problems = validate(write_profile(tmp_path, text.replace("manifests: [driver.yaml]", "manifests: [gone.yaml]")))
    assert problems == [
        f"driver profile {tmp_path / 'vendor.yaml'}: manifest {tmp_path / 'gone.yaml'} does not exist "
        "(paths are relative to the profile file)",
        f"driver profile {tmp_path / 'vendor.yaml'}: manifest of variant broken {tmp_path / 'rbac.yaml'} does not "
        "exist (paths are relative to the profile file)",
    ]


@pytest.mark.parametrize(
    "config, missing", [({"os": "linux"}, "architecture"), ({"architecture": "amd64", "os": ""}, "os"), ({}, "os and no architecture")]
)
def test_oci_image_without_platform_is_refused(tmp_path: Path, config: dict[str, Any], missing: str) -> None:
    oci_tar(tmp_path / "driver.tar", config)
    _, (problem,) = validate(write_profile(tmp_path))
    assert problem.startswith(f"image archive {tmp_path / 'driver.tar'}: config sha256:")
    assert f"has no {missing}; `ctr images import` and the kubelet refuse" in problem


@pytest.mark.parametrize(
    "build", [oci_tar, lambda p, c: oci_tar(p, c, nested=True), docker_tar], ids=["oci", "oci-nested-index", "docker-archive"]
)
def test_good_image_archives_pass(tmp_path: Path, build: Any) -> None:
    build(tmp_path / "driver.tar", PLATFORM)
    assert validate(write_profile(tmp_path))[1] == []


def test_docker_archive_without_platform_is_refused(tmp_path: Path) -> None:
    docker_tar(tmp_path / "driver.tar", {"os": "linux"})
    _, problems = validate(write_profile(tmp_path))
    assert problems == [
        f"image archive {tmp_path / 'driver.tar'}: config abc.json has no architecture; `ctr images "
        "import` and the kubelet refuse an image without its platform: build it for one, e.g. "
        "`docker buildx build --platform linux/amd64`"
    ]


def test_archives_that_are_no_image_are_named(tmp_path: Path) -> None:
    (tmp_path / "driver.tar").write_bytes(b"not a tarball")
    _, (problem,) = validate(write_profile(tmp_path))
    assert problem.startswith(f"image archive {tmp_path / 'driver.tar'} cannot be read as a tar")
    with tarfile.open(tmp_path / "driver.tar", "w") as tar:
        add(tar, "rootfs/etc/hostname", b"x")
    _, (problem,) = validate(write_profile(tmp_path))
    assert "is neither an OCI image layout (index.json) nor a docker-archive (manifest.json)" in problem
    with tarfile.open(tmp_path / "driver.tar", "w") as tar:
        add(tar, "index.json", json.dumps({"manifests": [{"digest": "sha256:" + "1" * 64}]}).encode())
    _, (problem,) = validate(write_profile(tmp_path))
    assert problem == (f"image archive {tmp_path / 'driver.tar'}: none of the image manifests index.json names is in the archive")


def test_unknown_breaks_ids_are_named_when_ids_are_known(tmp_path: Path) -> None:
    text = PROFILE.replace("breaks: [MD-14]", "breaks: [MD-14, ZZ-99]")
    assert validate(write_profile(tmp_path, text))[1] == []
    _, problems = validate(write_profile(tmp_path, text), known_ids={"MD-14"})
    assert problems == [
        f"driver profile {tmp_path / 'vendor.yaml'}: variants.broken.breaks: unknown requirement "
        "ID(s) ZZ-99: name requirements the suites have"
    ]


def test_all_problems_of_a_profile_come_in_one_result(tmp_path: Path) -> None:
    text = (
        PROFILE.replace("parameters: {IMAGE: vendor/driver:1.0}", "")
        .replace("hardware: gpu-small", "hardware: quantum")
        .replace("breaks: [MD-14]}", "breaks: [ZZ-99], manifests: [rbac.yaml]}")
        .replace("  broken:", "  Broken_Variant:")
    )
    oci_tar(tmp_path / "driver.tar", {"architecture": "amd64"})
    profile, problems = validate(write_profile(tmp_path, text), known_ids={"MD-14"})
    assert profile is not None
    expected = [
        "manifest of variant Broken_Variant",
        "unknown hardware profile 'quantum'",
        "uses ${IMAGE}",
        "has no os;",
        "variants.Broken_Variant: the name must match",
        "unknown requirement ID(s) ZZ-99",
    ]
    assert len(problems) == len(expected)
    for fragment, problem in zip(expected, problems):
        assert fragment in problem


def test_validate_or_raise_lists_every_problem_of_every_profile(tmp_path: Path) -> None:
    one, two, good = tmp_path / "one", tmp_path / "two", tmp_path / "good"
    for d in (one, two, good):
        d.mkdir()
    bad_schema = write_profile(one, PROFILE.replace("namespace: vendor-system", "namespace: Vendor System"))
    bad_params = write_profile(
        two, PROFILE.replace("parameters: {IMAGE: vendor/driver:1.0}", "").replace("hardware: gpu-small", "hardware: quantum")
    )
    with pytest.raises(BadInput) as e:
        validate_or_raise([write_profile(good), bad_schema, bad_params], known_ids=None)
    lines = str(e.value).splitlines()
    assert lines[0] == f"driver profile {bad_schema}: 1 problem(s)"
    assert lines[1].startswith(f"  - driver profile {bad_schema}: namespace: String should match pattern")
    assert lines[2] == f"driver profile {bad_params}: 2 problem(s)"
    assert "unknown hardware profile 'quantum'" in lines[3] and "uses ${IMAGE}" in str(e.value)
    assert str(good) not in str(e.value)
    assert e.value.exit_code == 2


def test_validate_or_raise_returns_the_profiles(tmp_path: Path) -> None:
    text = PROFILE.replace("name: vendor", "name: other")
    (tmp_path / "other").mkdir()
    profiles = validate_or_raise([write_profile(tmp_path), write_profile(tmp_path / "other", text)], {"MD-14"})
    assert [p.name for p in profiles] == ["vendor", "other"]


def test_layers_are_streamed_past_not_loaded(tmp_path: Path) -> None:
    blobs: dict[str, bytes] = {}
    layer = b"\0" * (8 << 20)
    layer_desc = {"digest": "sha256:" + hashlib.sha256(layer).hexdigest(), "size": len(layer)}
    manifest = blob(blobs, {"config": blob(blobs, PLATFORM), "layers": [layer_desc]})
    with tarfile.open(tmp_path / "driver.tar", "w") as tar:
        add(tar, "index.json", json.dumps({"manifests": [manifest]}).encode())
        add(tar, "blobs/sha256/" + layer_desc["digest"][7:], layer)
        for name, data in blobs.items():
            add(tar, name, data)
    assert validate(write_profile(tmp_path))[1] == []


def test_a_parameter_only_a_variant_sets_is_undefined_for_the_profile(tmp_path: Path) -> None:
    text = PROFILE.replace("parameters: {IMAGE: vendor/driver:1.0}", "").replace(
        "breaks: [MD-14]}", "breaks: [MD-14], parameters: {IMAGE: vendor/driver:1.0}}"
    )
    _, problems = validate(write_profile(tmp_path, text))
    (problem,) = problems  # once, though the variant renders the manifest too
    assert f"manifest {tmp_path / 'driver.yaml'} uses ${{IMAGE}}" in problem


def test_a_variants_manifest_may_use_the_variants_own_parameter(tmp_path: Path) -> None:
    (tmp_path / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '${EXTRA}'}\n")
    text = PROFILE.replace("breaks: [MD-14]}", "breaks: [MD-14], manifests: [extra.yaml], parameters: {EXTRA: x}}")
    assert validate(write_profile(tmp_path, text))[1] == []
    _, (problem,) = validate(write_profile(tmp_path, text.replace("parameters: {EXTRA: x}", "parameters: {}")))
    assert f"manifest {tmp_path / 'extra.yaml'} uses ${{EXTRA}}" in problem


def test_a_schema_error_does_not_hide_the_file_problems(tmp_path: Path) -> None:
    """A typo in a field name, a missing manifest and a bad image archive: all three at once."""
    text = PROFILE.replace("drivers: [gpu.vendor.example]", "drivers: [gpu.vendor.example]\ndeviceClass: [gpu]").replace(
        "manifests: [driver.yaml]", "manifests: [driver.yaml, gone.yaml]"
    )
    path = write_profile(tmp_path, text)
    (tmp_path / "driver.tar").write_bytes(b"not a tarball")
    profile, problems = validate(path)
    assert profile is None
    archive = f"image archive {tmp_path / 'driver.tar'} cannot be read as a tar"
    assert [p.split(": ", 1)[0] for p in problems] == [f"driver profile {path}", f"driver profile {path}", archive]
    assert "deviceClass: Extra inputs are not permitted" in problems[0]
    assert f"manifest {tmp_path / 'gone.yaml'} does not exist" in problems[1]


def test_fields_that_are_wrong_themselves_are_not_checked_further(tmp_path: Path) -> None:
    text = PROFILE.replace("images: [{archive: driver.tar}]", "images: [{archive: absent.tar, reference: drivers}]")
    _, problems = validate(write_profile(tmp_path, text.replace("hardware: gpu-small", "hardware: [quantum]")))
    assert len(problems) == 2 and all("images.0" in p or "hardware: Input should be" in p for p in problems)
    _, problems = validate(write_profile(tmp_path, text.replace("hardware: gpu-small", "hardware: quantum")))
    assert "unknown hardware profile 'quantum'" in problems[-1] and len(problems) == 2


def test_validate_says_when_a_valid_profile_claims_nothing_dralab_checks(tmp_path: Path) -> None:
    """A vendor learns it from validate, not from a certify that stops with exit 4."""
    from click.testing import CliRunner

    from dralab.cli import main
    from tests.unit.test_no_hardware import PROFILE, profile_file

    path = profile_file(
        tmp_path,
        PROFILE.replace("capabilities: [metadata]", "capabilities: []").replace(
            "drivers: [cpu.vendor.example]", "drivers: []\nextendedResources: [cpu.vendor.example/cpu]"
        ),
    )
    done = CliRunner().invoke(main, ["driver", "validate", path])
    assert done.exit_code == 0, done.output
    assert "valid" in done.output and "no capability dralab checks" in done.output
    assert "NOTHING TO CERTIFY (exit 4)" in done.output
    claimed = CliRunner().invoke(main, ["driver", "validate", profile_file(tmp_path)])
    assert claimed.exit_code == 0 and "NOTHING TO CERTIFY" not in claimed.output
