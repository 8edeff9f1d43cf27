"""Profiles that reach any driver (issue 33): env vars and args for a named container of a named
workload (a chart that runs its binary through `bash -c` drops appended args, not its
environment), a variant's plain args on the regular containers only, the emulated hardware in
every container a pod runs (init containers too), and a target that names nothing refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from basics.errors import BadInput
from drivers_under_test.deploy import render
from drivers_under_test.profile import load_profile
from drivers_under_test.validate import validate
from tests.unit.test_driver_profiles import LAB
from tests.unit.test_driver_validate import PLATFORM, oci_tar

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: vendor-plugin, namespace: ${NAMESPACE}}
spec:
  selector: {matchLabels: {app: vendor}}
  template:
    metadata: {labels: {app: vendor}}
    spec:
      initContainers:
      - {name: wait-for-sysfs, image: vendor/driver:1.0, command: [sh, -c, "ls /sys/bus/pci/devices"]}
      containers:
      - name: plugin
        image: vendor/driver:1.0
        command: [bash, -c, "exec plugin --v=$$LOG_LEVEL"]
        env: [{name: LOG_LEVEL, value: "2"}, {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
      - {name: registrar, image: vendor/registrar:1.0, args: [--v=2]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vendor-controller, namespace: ${NAMESPACE}}
spec:
  selector: {matchLabels: {app: vendor-controller}}
  template:
    metadata: {labels: {app: vendor-controller}}
    spec:
      containers:
      - {name: controller, image: vendor/driver:1.0, args: [--leader-elect]}
"""

PROFILE = """
name: vendor
description: A vendor's driver whose chart wraps its binary in bash -c
drivers: [gpu.vendor.example]
capabilities: [metadata]
hardware: gpu-small
namespace: vendor-system
images: [{archive: driver.tar}]
manifests: [driver.yaml]
containers:
- {workload: DaemonSet/vendor-plugin, container: plugin, env: {LOG_LEVEL: "4", FEATURE_X: "on"}}
variants:
  metadata-disabled:
    containers:
    - {workload: DaemonSet/vendor-plugin, container: plugin, env: {ENABLE_METADATA: "false", FEATURE_X: "off"}}
    - {workload: Deployment/vendor-controller, container: controller, args: [--no-metadata]}
  everywhere: {args: [--extra]}
"""


def write_profile(tmp_path: Path, text: str = PROFILE, manifest: str = MANIFEST) -> str:
    (tmp_path / "driver.yaml").write_text(manifest)
    oci_tar(tmp_path / "driver.tar", PLATFORM)
    (tmp_path / "vendor.yaml").write_text(text)
    return str(tmp_path / "vendor.yaml")


def containers(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every container of every workload, init containers too, by name."""
    specs = [o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("DaemonSet", "Deployment")]
    return {c["name"]: c for spec in specs for c in spec.get("initContainers", []) + spec["containers"]}


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_the_profiles_env_reaches_only_its_container(tmp_path: Path) -> None:
    found = containers(render(load_profile(write_profile(tmp_path)), None, LAB).objects)
    # Set in place of the manifest's own LOG_LEVEL, not beside it; the others stay.
    assert [e["name"] for e in found["plugin"]["env"]] == ["NODE_NAME", "LOG_LEVEL", "FEATURE_X"]
    assert env(found["plugin"]) == {"LOG_LEVEL": "4", "NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}}, "FEATURE_X": "on"}
    assert "env" not in found["registrar"] and found["registrar"]["args"] == ["--v=2"]
    assert found["controller"]["args"] == ["--leader-elect"] and "env" not in found["controller"]


def test_a_variants_env_and_args_win_over_the_profiles_for_their_containers(tmp_path: Path) -> None:
    found = containers(render(load_profile(write_profile(tmp_path)), "metadata-disabled", LAB).objects)
    assert env(found["plugin"])["ENABLE_METADATA"] == "false" and env(found["plugin"])["FEATURE_X"] == "off"
    assert env(found["plugin"])["LOG_LEVEL"] == "4"
    assert found["controller"]["args"] == ["--leader-elect", "--no-metadata"]
    assert found["registrar"]["args"] == ["--v=2"] and "args" not in found["wait-for-sysfs"]


def test_a_variants_plain_args_go_to_every_regular_container(tmp_path: Path) -> None:
    found = containers(render(load_profile(write_profile(tmp_path)), "everywhere", LAB).objects)
    assert [found[c]["args"][-1] for c in ("plugin", "registrar", "controller")] == ["--extra"] * 3
    assert "args" not in found["wait-for-sysfs"], "an init container is no place for the driver's flags"


def mounts(container: dict[str, Any]) -> set[str]:
    return {m["mountPath"] for m in container.get("volumeMounts", [])}


def test_init_containers_see_the_emulated_hardware_as_the_others_do(tmp_path: Path) -> None:
    text = PROFILE.replace("hardware: gpu-small", "hardware: gpu-small\ndriverRoot: /driver-root")
    found = containers(render(load_profile(write_profile(tmp_path, text)), None, LAB).objects)
    expected = {"/sys/bus/pci", "/sys/devices", "/sys/class", "/sys/kernel/iommu_groups", "/sys/module", "/driver-root"}
    assert expected <= mounts(found["wait-for-sysfs"]) and mounts(found["wait-for-sysfs"]) == mounts(found["plugin"])


def test_host_root_puts_the_node_root_where_the_chart_expects_the_hosts(tmp_path: Path) -> None:
    text = PROFILE.replace("hardware: gpu-small", "hardware: gpu-small\nhostRoot: /host-root")
    found = containers(render(load_profile(write_profile(tmp_path, text)), None, LAB).objects)
    expected = {"/host-root", "/host-root/sys", "/host-root/dev", "/host-root/proc", "/host-root/var/lib/dralab-hardware/driver-root"}
    assert expected <= mounts(found["plugin"]) and mounts(found["wait-for-sysfs"]) == mounts(found["plugin"])
    read_only = {m["mountPath"] for m in found["plugin"]["volumeMounts"] if m.get("readOnly")}
    assert "/host-root" in read_only and "/host-root/sys" not in read_only  # drivers write sysfs (HW-08)


def test_host_root_takes_the_place_of_the_charts_own(tmp_path: Path) -> None:
    """NVIDIA's chart mounts the machine's / at /host-root and its /lib/modules: the node's replace them."""
    text = PROFILE.replace("hardware: gpu-small", "hardware: gpu-small\nhostRoot: /host-root")
    manifest = MANIFEST.replace(
        "      - {name: registrar, image: vendor/registrar:1.0, args: [--v=2]}\n",
        """\
      - {name: registrar, image: vendor/registrar:1.0, args: [--v=2]}
      - name: machine-root-user
        image: vendor/driver:1.0
        volumeMounts: [{name: machine-root, mountPath: /host-root/, readOnly: true},
                       {name: machine-modules, mountPath: /lib/modules/, readOnly: true}]
      volumes: [{name: machine-root, hostPath: {path: /}}, {name: machine-modules, hostPath: {path: /lib/modules}}]
""",
    )
    assert manifest != MANIFEST
    rendered = render(load_profile(write_profile(tmp_path, text, manifest)), None, LAB).objects
    found = containers(rendered)
    (ds,) = [o for o in rendered if o["metadata"]["name"] == "vendor-plugin"]
    assert [m["name"] for m in found["machine-root-user"]["volumeMounts"] if m["mountPath"] == "/host-root"] == ["host-root"]
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert "machine-root" not in volumes and "machine-modules" not in volumes
    # NVIDIA's chart mounts /lib/modules too, where go-nvlib reads modules.alias: the node's.
    (modules,) = [m for m in found["machine-root-user"]["volumeMounts"] if m["mountPath"].rstrip("/") == "/lib/modules"]
    assert volumes[modules["name"]]["hostPath"]["path"] == "/var/lib/dralab-hardware/host-root/lib/modules"


def test_sysfs_root_reaches_init_containers_with_its_flag(tmp_path: Path) -> None:
    text = PROFILE.replace("hardware: gpu-small", "hardware: gpu-small\nsysfs: root")
    found = containers(render(load_profile(write_profile(tmp_path, text)), None, LAB).objects)
    for name in ("wait-for-sysfs", "plugin", "registrar"):
        assert "/var/run/dralab/sys" in mounts(found[name])
        assert found[name]["args"][-1] == "--sysfs-root=/var/run/dralab/sys"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("container: controller", "container: manager"),
            "variants.metadata-disabled.containers.1: Deployment/vendor-controller has no container 'manager' (its containers: controller)",
        ),
        (
            ("container: plugin, env: {LOG", "container: wait, env: {LOG"),
            "containers.0: DaemonSet/vendor-plugin has no container 'wait' (its containers: wait-for-sysfs, plugin, registrar)",
        ),
        (
            ("Deployment/vendor-controller", "Deployment/controller"),
            "variants.metadata-disabled.containers.1: no workload Deployment/controller is rendered (the workloads: "
            "DaemonSet/vendor-plugin, Deployment/vendor-controller)",
        ),
    ],
)
def test_a_container_that_is_not_rendered_is_named_with_those_that_are(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in PROFILE
    path = write_profile(tmp_path, PROFILE.replace(*change))
    _, problems = validate(path)
    assert problems == [f"driver profile {path}: {message}"]
    variant = "metadata-disabled" if "variants." in message else None
    with pytest.raises(BadInput, match="has no container|no workload"):
        render(load_profile(path), variant, LAB)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("workload: DaemonSet/vendor-plugin, container: plugin, env: {LOG", "workload: vendor-plugin, container: plugin, env: {LOG"),
            "containers.0.workload: String should match pattern",
        ),
        (
            (
                "{workload: Deployment/vendor-controller, container: controller, args: [--no-metadata]}",
                "{workload: Deployment/vendor-controller, container: controller}",
            ),
            "give env, args or both",
        ),
        (
            ("  everywhere: {args: [--extra]}", "  everywhere: {chartValues: {logLevel: 4}}"),
            "variants everywhere set chartValues, and the profile has no chart",
        ),
    ],
)
def test_container_settings_mistakes_are_refused_by_name(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in PROFILE
    path = write_profile(tmp_path, PROFILE.replace(*change))
    with pytest.raises(BadInput, match=message.replace("{", r"\{")):
        load_profile(path)


REGISTRIES = ("/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/dralab-driver-registry")


def test_the_registration_socket_goes_to_the_driver_registry_in_a_recording_lab(tmp_path: Path) -> None:
    """The chart's plugins_registry mount points at the driver registry, where the plugin recorder
    finds the sockets; the container's own path stays; a lab that records nothing changes nothing."""
    manifest = MANIFEST.replace(
        "      - {name: registrar, image: vendor/registrar:1.0, args: [--v=2]}\n",
        """\
      - name: registrar
        image: vendor/registrar:1.0
        volumeMounts: [{name: registry, mountPath: /registration}]
      volumes: [{name: registry, hostPath: {path: /var/lib/kubelet/plugins_registry/, type: Directory}}]
""",
    )
    profile = load_profile(write_profile(tmp_path, manifest=manifest))

    def registry(objects: list[dict[str, Any]]) -> str:
        (ds,) = [o for o in objects if o["metadata"]["name"] == "vendor-plugin"]
        return {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}["registry"]["hostPath"]["path"]

    assert registry(render(profile, None, LAB, plugin_registries=REGISTRIES).objects) == REGISTRIES[1]
    found = containers(render(profile, None, LAB, plugin_registries=REGISTRIES).objects)["registrar"]
    assert {"name": "registry", "mountPath": "/registration"} in found["volumeMounts"]
    assert registry(render(profile, None, LAB).objects) == "/var/lib/kubelet/plugins_registry/"


def test_a_mount_of_the_whole_kubelet_dir_gets_the_driver_registry_over_its_registry(tmp_path: Path) -> None:
    manifest = MANIFEST.replace(
        "      - {name: registrar, image: vendor/registrar:1.0, args: [--v=2]}\n",
        """\
      - name: registrar
        image: vendor/registrar:1.0
        volumeMounts: [{name: kubelet, mountPath: /var/lib/kubelet}]
      volumes: [{name: kubelet, hostPath: {path: /var/lib/kubelet}}]
""",
    )
    rendered = render(load_profile(write_profile(tmp_path, manifest=manifest)), None, LAB, plugin_registries=REGISTRIES)
    found = [m for m in containers(rendered.objects)["registrar"]["volumeMounts"] if not m["mountPath"].startswith("/sys")]
    assert found == [
        {"name": "kubelet", "mountPath": "/var/lib/kubelet"},
        {"name": "dralab-driver-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
    ]
    (ds,) = [o for o in rendered.objects if o["metadata"]["name"] == "vendor-plugin"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert volumes["dralab-driver-registry"] == REGISTRIES[1] and volumes["kubelet"] == "/var/lib/kubelet"
