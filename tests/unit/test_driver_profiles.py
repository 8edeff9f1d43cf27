"""Driver profiles: the shipped ones load and render; each mistake in a vendor's profile is
refused with a message that names it; rendering follows the lab (kubelet root dir, sysfs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dralab.cli import main
from basics.errors import BadInput
from clusters.local.kwok import SLICE_ONLY_LABEL
from drivers_under_test.deploy import render
from drivers_under_test.profile import METADATA_DISABLED, Capability, load_profile, shipped_profiles

LAB = {
    "KUBELET_ROOT_DIR": "/var/lib/kubelet-alt",
    "DRIVERS_IMAGE": "dralab.dev/drivers:abc",
    "HARDWARE_SYSFS_ROOT": "/var/lib/dralab-hardware/sys",
    "HARDWARE_DRIVER_ROOT": "/var/lib/dralab-hardware/driver-root",
}

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: vendor, namespace: ${NAMESPACE}}
spec:
  selector: {matchLabels: {app: vendor}}
  template:
    metadata: {labels: {app: vendor}}
    spec:
      containers:
      - {name: plugin, image: vendor/driver:1.0, args: ["--root=${KUBELET_ROOT_DIR}", "--mode=${MODE}"]}
"""

PROFILE = """
name: vendor
description: A vendor's driver
drivers: [gpu.vendor.example]
capabilities: [metadata]
hardware: gpu-small
namespace: vendor-system
images: [{archive: driver.tar}]
manifests: [driver.yaml]
parameters: {MODE: fast}
variants:
  broken: {args: [--broken], breaks: [MD-14]}
"""


def write_profile(tmp_path: Path, text: str = PROFILE, image: bool = True) -> Path:
    (tmp_path / "driver.yaml").write_text(MANIFEST)
    if image:
        (tmp_path / "driver.tar").write_bytes(b"tar")
    (tmp_path / "vendor.yaml").write_text(text)
    return tmp_path / "vendor.yaml"


@pytest.mark.parametrize("name", shipped_profiles())
def test_shipped_profiles_load_and_render(name: str) -> None:
    profile = load_profile(name)
    rendered = render(profile, None, LAB)
    assert rendered.of_kind("DaemonSet"), "every reference driver runs as a DaemonSet"
    for variant in profile.variants:
        render(profile, variant, LAB)


def test_vendor_profile_renders_for_the_lab(tmp_path: Path) -> None:
    profile = load_profile(str(write_profile(tmp_path)))
    assert profile.has(Capability.METADATA) and not profile.has("device-status")
    rendered = render(profile, "broken", LAB)
    assert [o["kind"] for o in rendered.objects] == ["Namespace", "DaemonSet"]
    (ds,) = rendered.of_kind("DaemonSet")
    assert ds["metadata"]["namespace"] == "vendor-system"
    assert ds["metadata"]["labels"] == {"dralab.dev/profile": "vendor", "dralab.dev/variant": "broken"}
    assert ds["spec"]["template"]["metadata"]["labels"]["dralab.dev/variant"] == "broken"
    spec = ds["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"] == ["--root=/var/lib/kubelet-alt", "--mode=fast", "--broken"]
    # sysfs: standard (the default) puts the node's emulated tree at the standard paths, writable
    # as a privileged container's /sys (drivers write sriov_numvfs and bind, HW-08).
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert set(mounts) == {"/sys/bus/pci", "/sys/devices", "/sys/class", "/sys/kernel/iommu_groups", "/sys/module"}
    assert not any(m.get("readOnly") for m in mounts.values())
    hostpaths = {v["hostPath"]["path"] for v in spec["volumes"]}
    assert "/var/lib/dralab-hardware/sys/bus/pci" in hostpaths
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": SLICE_ONLY_LABEL, "operator": "DoesNotExist"}]}]


def test_root_exposure_passes_the_prefix_flag() -> None:
    (ds,) = render(load_profile("net"), None, LAB).of_kind("DaemonSet")
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    assert "--sysfs-root=/var/run/dralab/sys" in container["args"]
    assert "--kubelet-root-dir=/var/lib/kubelet-alt" in container["args"]


def test_removal_renders_every_variants_manifests() -> None:
    names = {o["metadata"]["name"] for o in render(load_profile("gpu"), None, LAB, all_variants=True).objects}
    assert "gpu.dralab.dev:arbitrary-node-status" in names


@pytest.mark.parametrize(
    "change, message",
    [
        (("description: A vendor's driver\n", ""), "description: Field required"),
        (("capabilities: [metadata]", "capabilities: [metadata, telepathy]"), "capabilities.1: Input should be 'metadata'"),
        (("drivers: [gpu.vendor.example]", "drivers: [GPU_Vendor]"), "are not DNS subdomains"),
        (("drivers: [gpu.vendor.example]", "drivers: []"), "name at least one DRA driver"),
        (("capabilities: [metadata]", "capabilities: [network-data]"), "network-data is part of device-status"),
        (("breaks: [MD-14]", "breaks: [cleanup]"), "are not requirement IDs"),
        (("breaks: [MD-14]", "breaks: [MD-14], concerns: [MD]"), "concerns is for a valid variant"),
        (("breaks: [MD-14]}", "breaks: [MD-14]}\n  slow: {concerns: [metadata]}"), "are not requirement IDs or suites"),
        (("parameters: {MODE: fast}", "parameters: {MODE: fast, KUBELET_ROOT_DIR: /x}"), "are set by the lab"),
        (("images: [{archive: driver.tar}]", "images: [{reference: vendor}]"), "the only reference image is 'drivers'"),
        (("manifests: [driver.yaml]", "manifests: [missing.yaml]"), "manifest "),
        (("hardware: gpu-small", "hardware: quantum"), "unknown hardware profile 'quantum'"),
        (("namespace: vendor-system", "namespace: Vendor System"), "namespace: String should match pattern"),
    ],
)
def test_profile_mistakes_are_refused_by_name(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in PROFILE
    path = write_profile(tmp_path, PROFILE.replace(old, new))
    with pytest.raises(BadInput) as e:
        load_profile(str(path))
    assert message in str(e.value) and str(path) in str(e.value)


def test_missing_image_tarball_is_refused(tmp_path: Path) -> None:
    path = write_profile(tmp_path, image=False)
    with pytest.raises(BadInput, match=r"image archive .*driver\.tar"):
        load_profile(str(path))


def test_undefined_manifest_parameter_is_refused(tmp_path: Path) -> None:
    profile = load_profile(str(write_profile(tmp_path, PROFILE.replace("parameters: {MODE: fast}", ""))))
    with pytest.raises(BadInput, match=r"driver\.yaml uses \$\{MODE\}"):
        render(profile, None, LAB)


def test_cli_refuses_bad_profiles_and_variants_before_touching_a_lab(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["driver", "deploy", "--profile", "no-such-driver", "--lab", "absent"])
    assert result.exit_code == 2 and "unknown driver profile 'no-such-driver'" in result.output
    result = runner.invoke(main, ["driver", "deploy", "--profile", "gpu", "--variant", "psychic", "--lab", "absent"])
    assert result.exit_code == 2 and "driver profile gpu has no variant 'psychic'" in result.output
    path = write_profile(tmp_path, image=False)
    result = runner.invoke(main, ["driver", "deploy", "--profile", str(path), "--lab", "absent"])
    assert result.exit_code == 2 and "driver.tar" in result.output


def test_second_instance_renames_driver_class_namespace_and_component() -> None:
    gpu = load_profile("gpu")
    b = gpu.second_instance("b")
    assert (b.name, b.namespace, b.drivers, b.device_classes) == ("gpu-b", "dralab-gpu-b", ["gpu-b.dralab.dev"], ["gpu-b.dralab.dev"])
    assert b.parameters["COMPONENT"] == "gpu-dra-driver-b" and b.source == gpu.source
    objects = render(b, None, LAB).objects
    (ds,) = [o for o in objects if o["kind"] == "DaemonSet"]
    assert ds["metadata"]["namespace"] == "dralab-gpu-b"
    assert "--driver-name=gpu-b.dralab.dev" in ds["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "DeviceClass"] == ["gpu-b.dralab.dev"]


def test_second_instance_needs_the_driver_name_parameter(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot be deployed twice.*DRIVER_NAME"):
        load_profile(str(write_profile(tmp_path))).second_instance("b")


def test_a_variant_without_breaks_is_a_configuration() -> None:
    gpu = load_profile("gpu")
    assert METADATA_DISABLED in gpu.variants and METADATA_DISABLED not in gpu.broken_variants()
    (ds,) = render(gpu, METADATA_DISABLED, LAB).of_kind("DaemonSet")
    assert ds["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "--enable-device-metadata=false"


def test_switching_variant_removes_the_other_variants_objects() -> None:
    from drivers_under_test.deploy import _other_variants_objects

    gpu = load_profile("gpu")
    stale = _other_variants_objects(render(gpu, None, LAB), LAB)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in stale) == [
        ("ClusterRole", "gpu.dralab.dev:any-driver-status"),
        ("ClusterRole", "gpu.dralab.dev:arbitrary-node-status"),
        ("ClusterRoleBinding", "gpu.dralab.dev:any-driver-status"),
        ("ClusterRoleBinding", "gpu.dralab.dev:arbitrary-node-status"),
        ("DeviceClass", "devices.gpu.dralab.dev"),
    ]
    other = _other_variants_objects(render(gpu, "status-other-node", LAB), LAB)
    assert sorted(o["kind"] for o in other) == ["ClusterRole", "ClusterRoleBinding", "DeviceClass"]


# MUT-02: the valid variants of the reference drivers, each another choice a correct driver may
# make (the kind, as requirements.md lists them). Every one must be CERTIFIED.
VALID_VARIANTS = {
    ("gpu", "no-ready-condition"): "no status conditions",
    ("gpu", "status-first-device"): "status for some devices only",
    ("gpu", "status-apply"): "status.devices by server-side apply",
    ("gpu", "one-pod-per-claim"): "a claim serves one pod at a time (declared: claimsServeOnePod)",
    ("gpu", "one-device-per-node"): "one device per node",
    ("gpu", "several-pools"): "several pools",
    ("gpu", "several-slices"): "several slices",
    ("gpu", "slow-prepare"): "slow but correct prepare",
    ("gpu", "health-stream-only"): "faults told through the health stream only, the device kept in its slice",
    ("gpu", "metadata-v1beta1-only"): "only the metadata versions the cluster needs",
    ("gpu", "attribute-domain"): "other attribute names",
    ("gpu", "other-device-class"): "other class names",
    ("gpu", "cdi-etc"): "another CDI spec directory",
    ("gpu", "leave-socket"): "a socket left after uninstall (a SHOULD missed: a WARNING)",
    ("net", "no-ready-condition"): "no status conditions",
    ("net", "status-apply"): "status.devices by server-side apply",
    ("net", "standard-topology"): "more standard attributes, by upstream's helpers",
    ("net", "one-vf-per-node"): "one device per node",
    ("net", "several-pools"): "several pools",
    ("net", "slow-prepare"): "slow but correct prepare",
    ("net", "network-data-without-mac"): "networkData with fewer of its optional fields",
    ("net", "cdi-etc"): "another CDI spec directory",
    ("net", "leave-socket"): "a socket left after uninstall (a SHOULD missed: a WARNING)",
}


def test_valid_variants_are_declared_break_nothing_and_render() -> None:
    declared = {
        (name, v): variant
        for name in ("gpu", "net")
        for v, variant in load_profile(name).variants.items()
        if not variant.breaks and v != METADATA_DISABLED
    }
    assert set(declared) == set(VALID_VARIANTS), "a valid variant of the profiles is missing here, or the reverse"
    assert len(declared) >= 8
    for (name, v), variant in declared.items():
        # A valid variant is a correct driver's option, never one of its broken behaviours; the one
        # exception misses a SHOULD on purpose (KP-11), which it names: a WARNING, still certifiable.
        # What else may warn: no Ready condition (ST-07), an optional networkData field left out (MD-16, ST-02).
        broken = any(a.startswith("--break") for a in variant.args)
        assert not broken or variant.warns == ["KP-11"], f"{name}:{v} runs a broken variant"
        assert not variant.violations and set(variant.warns) <= {"ST-07", "KP-11", "MD-16", "ST-02"}, f"{name}:{v}"
        (ds,) = render(load_profile(name), v, LAB).of_kind("DaemonSet")
        args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[len(args) - len(variant.args) :] == variant.args, "the variant's args come last: they win"


def test_a_variant_brings_its_own_device_class() -> None:
    gpu = load_profile("gpu")
    variant = gpu.variant("other-device-class")
    classes = [o["metadata"]["name"] for o in render(gpu, "other-device-class", LAB).of_kind("DeviceClass")]
    assert variant.device_classes == ["devices.gpu.dralab.dev"] and set(variant.device_classes) <= set(classes)
    assert gpu.variant(None) is None and gpu.variant("several-pools").device_classes is None


def test_a_variants_device_classes_are_dns_subdomains(tmp_path: Path) -> None:
    path = write_profile(tmp_path, PROFILE.replace("breaks: [MD-14]}", "breaks: [MD-14], deviceClasses: [Other_Class]}"))
    with pytest.raises(BadInput, match="deviceClasses"):
        load_profile(str(path))


def _cdi_dir(ds: dict) -> tuple[str, str, str]:
    """Where a reference driver's DaemonSet puts CDI specs: its flag, mount path and host path."""
    spec = ds["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    flag = next(a.removeprefix("--cdi-dir=") for a in container["args"] if a.startswith("--cdi-dir="))
    (mount,) = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "cdi"]
    (host,) = [v["hostPath"]["path"] for v in spec["volumes"] if v["name"] == "cdi"]
    return flag, mount, host


@pytest.mark.parametrize("name", ["gpu", "net"])
def test_cdi_etc_variant_moves_the_specs_and_only_them(name: str) -> None:
    profile = load_profile(name)
    (default,) = render(profile, None, LAB).of_kind("DaemonSet")
    (etc,) = render(profile, "cdi-etc", LAB).of_kind("DaemonSet")
    assert _cdi_dir(default) == ("/var/run/cdi",) * 3 and _cdi_dir(etc) == ("/etc/cdi",) * 3
    # Host path equals container path: the paths the driver writes are the node's.
    for ds in (default, etc):
        del ds["metadata"]["labels"], ds["spec"]["template"]["metadata"]["labels"]
    assert str(default).replace("/var/run/cdi", "/etc/cdi") == str(etc)
    # A switch of variant updates the DaemonSet in place: nothing of the other is left to delete.
    from drivers_under_test.deploy import _other_variants_objects

    assert not any(o["kind"] == "DaemonSet" for o in _other_variants_objects(render(profile, "cdi-etc", LAB), LAB))


VARIANT_PARAMETERS = PROFILE.replace(
    "  broken: {args: [--broken], breaks: [MD-14]}", "  broken: {args: [--broken], breaks: [MD-14]}\n  slow: {parameters: {MODE: slow}}"
)


def test_a_variants_parameters_win_over_the_profiles(tmp_path: Path) -> None:
    profile = load_profile(str(write_profile(tmp_path, VARIANT_PARAMETERS)))
    assert profile.template_parameters(LAB, "slow")["MODE"] == "slow"
    assert profile.template_parameters(LAB)["MODE"] == "fast"
    (ds,) = render(profile, "slow", LAB).of_kind("DaemonSet")
    assert ds["spec"]["template"]["spec"]["containers"][0]["args"] == ["--root=/var/lib/kubelet-alt", "--mode=slow"]


def test_a_variant_may_not_set_a_lab_parameter(tmp_path: Path) -> None:
    path = write_profile(tmp_path, VARIANT_PARAMETERS.replace("{MODE: slow}", "{KUBELET_ROOT_DIR: /x}"))
    with pytest.raises(BadInput, match=r"variants\.slow\.parameters.*set by the lab"):
        load_profile(str(path))
