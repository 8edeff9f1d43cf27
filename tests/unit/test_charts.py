"""Helm charts in driver profiles (issue 21): a chart is rendered with the pinned helm, the lab's
and the profile's parameters reach it through its values, its CRDs are applied first, objects
it leaves without a namespace land in the profile's, and every mistake is refused by name.
Needs helm in the cache (`dralab provision` builds it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from basics.errors import BadInput
from clusters import versions
from clusters.provision import helm
from drivers_under_test.deploy import apply_groups, render
from drivers_under_test.helm_chart import render_chart
from drivers_under_test.profile import load_profile
from drivers_under_test.validate import validate
from tests.unit.test_driver_profiles import LAB

CHART = Path(__file__).parent / "testdata" / "charts" / "vendor-dra-driver"

PROFILE = f"""
name: vendor
description: A vendor's DRA driver, deployed from its chart
drivers: [gpu.vendor.example]
capabilities: [metadata]
hardware: gpu-small
namespace: vendor-system
images: [{{reference: drivers}}]
chart:
  path: {CHART}
  values: {{image: "${{IMAGE}}", kubeletRoot: "${{KUBELET_ROOT_DIR}}"}}
parameters: {{IMAGE: vendor/driver:1.0}}
variants:
  broken: {{args: [--broken], breaks: [MD-14]}}
"""


def profile_file(tmp_path: Path, text: str = PROFILE) -> str:
    (tmp_path / "vendor.yaml").write_text(text)
    return str(tmp_path / "vendor.yaml")


def by_kind(objects: list[dict]) -> dict[str, dict]:
    return {o["kind"]: o for o in objects}


def daemonset_spec(profile_path: str, variant: str | None = None) -> dict:
    """The pod spec of the chart's DaemonSet as dralab deploys it."""
    return by_kind(render(load_profile(profile_path), variant, LAB).objects)["DaemonSet"]["spec"]["template"]["spec"]


def test_chart_objects_deploy_like_manifests(tmp_path: Path) -> None:
    objects = by_kind(render(load_profile(profile_file(tmp_path)), "broken", LAB).objects)
    assert set(objects) == {"Namespace", "CustomResourceDefinition", "ClusterRole", "ConfigMap", "DaemonSet", "Widget"}
    (container,) = objects["DaemonSet"]["spec"]["template"]["spec"]["containers"]
    # The lab's parameter and the profile's reach the chart through its values; the variant's args follow.
    assert container["image"] == "vendor/driver:1.0"
    assert container["args"][:2] == ["--kubelet-root=/var/lib/kubelet-alt", "--v=2"] and container["args"][-1] == "--broken"
    assert "/sys/bus/pci" in {m["mountPath"] for m in container["volumeMounts"]}
    assert objects["DaemonSet"]["metadata"]["labels"] == {"dralab.dev/profile": "vendor", "dralab.dev/variant": "broken"}
    assert objects["ConfigMap"]["data"]["kubeVersion"] == versions.KUBERNETES, "helm must render for the lab's Kubernetes"


def test_namespaces_as_helm_install_would_set_them(tmp_path: Path) -> None:
    objects = by_kind(render(load_profile(profile_file(tmp_path)), None, LAB).objects)
    namespaced = {kind: o["metadata"].get("namespace") for kind, o in objects.items()}
    assert namespaced == {
        "Namespace": None,
        "CustomResourceDefinition": None,
        "ClusterRole": None,
        "ConfigMap": "vendor-system",
        "DaemonSet": "vendor-system",
        "Widget": "vendor-system",
    }


def test_crds_are_applied_before_their_resources(tmp_path: Path) -> None:
    groups = [[o["kind"] for o in g] for g in apply_groups(render(load_profile(profile_file(tmp_path)), None, LAB).objects)]
    assert groups[:2] == [["Namespace"], ["CustomResourceDefinition"]]
    assert "Widget" in groups[-1]


def test_values_files_then_inline_values(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text("logLevel: 4\nkubeletRoot: ${KUBELET_ROOT_DIR}/site\n")
    text = PROFILE.replace("  values: {", "  valuesFiles: [site.yaml]\n  values: {").replace(', kubeletRoot: "${KUBELET_ROOT_DIR}"', "")
    objects = by_kind(render(load_profile(profile_file(tmp_path, text)), None, LAB).objects)
    args = objects["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["--kubelet-root=/var/lib/kubelet-alt/site", "--v=4"]
    text = text.replace('image: "${IMAGE}"', 'image: "${IMAGE}", logLevel: 5')
    objects = by_kind(render(load_profile(profile_file(tmp_path, text)), None, LAB).objects)
    assert objects["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["args"][1] == "--v=5"


def test_packaged_chart_renders_as_its_directory(tmp_path: Path) -> None:
    subprocess.run([str(helm()), "package", str(CHART), "--destination", str(tmp_path)], check=True, capture_output=True)
    packaged = load_profile(profile_file(tmp_path, PROFILE.replace(str(CHART), "vendor-dra-driver-0.1.0.tgz")))
    assert render_chart(packaged, LAB) == render_chart(load_profile(profile_file(tmp_path)), LAB)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ('"${IMAGE}"', '"${VENDOR_IMAGE}"'),
            "chart.values of driver profile {path} uses ${{VENDOR_IMAGE}}, which neither driver profile vendor (parameters) nor the lab",
        ),
        (
            ('image: "${IMAGE}", ', ""),
            "`helm template` refused it: Error: execution error at "
            "(vendor-dra-driver/templates/daemonset.yaml:14:18): values: image is required",
        ),
        ((str(CHART), "no-such-chart"), "chart {dir}/no-such-chart is neither a chart directory (with Chart.yaml) nor a packaged chart"),
        (("  values: {", "  valuesFiles: [absent.yaml]\n  values: {"), "values file {dir}/absent.yaml does not exist"),
    ],
)
def test_chart_mistakes_are_listed_by_validate(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    path = profile_file(tmp_path, PROFILE.replace(*change))
    profile, problems = validate(path)
    assert any(message.format(path=path, dir=tmp_path) in p for p in problems), problems


def test_a_profile_needs_manifests_or_a_chart(tmp_path: Path) -> None:
    text = PROFILE.split("chart:")[0] + "parameters: {IMAGE: x}\n"
    with pytest.raises(BadInput, match="give the driver's manifests, its chart, or both"):
        load_profile(profile_file(tmp_path, text))


def test_shipped_chart_profile_validates() -> None:
    profile, problems = validate("fake-gpu-plugin")
    assert problems == [] and profile is not None and profile.chart is not None


VERBOSE = PROFILE.replace(
    "variants:\n",
    """variants:
  verbose: {chartValues: {logLevel: 6, kubeletRoot: "${KUBELET_ROOT_DIR}/verbose"}}
""",
)


def test_a_variants_chart_values_merge_over_the_profiles(tmp_path: Path) -> None:
    for variant, args in [
        (None, ["--kubelet-root=/var/lib/kubelet-alt", "--v=2"]),
        ("verbose", ["--kubelet-root=/var/lib/kubelet-alt/verbose", "--v=6"]),
    ]:
        (container,) = daemonset_spec(profile_file(tmp_path, VERBOSE), variant)["containers"]
        assert container["args"] == args and container["image"] == "vendor/driver:1.0", variant


def test_a_variants_chart_values_are_checked_as_templates(tmp_path: Path) -> None:
    path = profile_file(tmp_path, VERBOSE.replace("${KUBELET_ROOT_DIR}/verbose", "${VERBOSE_ROOT}"))
    _, problems = validate(path)
    assert problems == [
        f"variants.verbose.chartValues of driver profile {path} uses ${{VERBOSE_ROOT}}, which neither "
        "driver profile vendor (parameters) nor the lab (KUBELET_ROOT_DIR, DRIVERS_IMAGE, "
        "HARDWARE_SYSFS_ROOT, HARDWARE_DRIVER_ROOT, NAMESPACE, "
        "KUBERNETES_VERSION) sets: add VERBOSE_ROOT to the profile's "
        "parameters"
    ]


def test_the_charts_init_containers_see_the_emulated_sysfs(tmp_path: Path) -> None:
    spec = daemonset_spec(profile_file(tmp_path))
    (init,), (plugin,) = spec["initContainers"], spec["containers"]
    assert "/sys/bus/pci" in {m["mountPath"] for m in init["volumeMounts"]}
    assert init["volumeMounts"] == plugin["volumeMounts"]


CONTAINERS = """containers:
- {workload: DaemonSet/vendor, container: plugin, env: {LOG_FORMAT: json}}
variants:"""


def test_container_settings_name_what_the_chart_renders(tmp_path: Path) -> None:
    (container,) = daemonset_spec(profile_file(tmp_path, PROFILE.replace("variants:", CONTAINERS)))["containers"]
    assert container["env"] == [{"name": "LOG_FORMAT", "value": "json"}]
    wrong = CONTAINERS.replace("container: plugin", "container: driver")
    path = profile_file(tmp_path, PROFILE.replace("variants:", wrong))
    assert validate(path)[1] == [
        f"driver profile {path}: containers.0: DaemonSet/vendor has no container 'driver' (its containers: check-devices, plugin)"
    ]
