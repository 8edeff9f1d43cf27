"""`hardware: none` (issue 21): a driver that needs no emulated hardware loads, validates and
renders without the emulated sysfs, deploys on a lab without hardware, and the checks that need
the emulated hardware SKIP with the reason; a profile mixing none with hardware mounts is refused."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from basics.errors import BadInput
from clusters.config import ClusterConfig
from clusters.provider_registry import provider
from clusters.providers import Lab
from drivers_under_test.deploy import _check_hardware, render
from drivers_under_test.profile import SysfsExposure, load_profile
from drivers_under_test.validate import validate
from suites.framework.drivers import DriverUnderTest
from tests.unit.test_driver_profiles import LAB, MANIFEST

PROFILE = """
name: cpu-only
description: A driver whose devices need no emulated hardware
drivers: [cpu.vendor.example]
capabilities: [metadata]
hardware: none
namespace: cpu-only
images: [{reference: drivers}]
manifests: [driver.yaml]
parameters: {MODE: fast}
"""


def profile_file(tmp_path: Path, text: str = PROFILE) -> str:
    (tmp_path / "driver.yaml").write_text(MANIFEST)
    (tmp_path / "cpu-only.yaml").write_text(text)
    return str(tmp_path / "cpu-only.yaml")


def lab_with(hardware: dict[str, str]) -> Lab:
    return Lab(provider("local"), Path("kubeconfig"), Path("kubectl"), Path("logs"), [], cfg=ClusterConfig(name="plain", hardware=hardware))


def test_no_hardware_means_no_sysfs_mounts(tmp_path: Path) -> None:
    path = profile_file(tmp_path)
    profile, problems = validate(path)
    assert problems == [] and profile is not None
    assert not profile.needs_hardware and profile.sysfs is SysfsExposure.NONE
    (ds,) = render(load_profile(path), None, LAB).of_kind("DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    assert "volumes" not in spec or not spec["volumes"]
    assert not spec["containers"][0].get("volumeMounts")


def test_deploys_on_a_lab_without_hardware(tmp_path: Path) -> None:
    _check_hardware(lab_with({}), load_profile(profile_file(tmp_path)))
    with pytest.raises(BadInput, match=r"expects emulated hardware 'dgx-like'.*dralab up --hardware dgx-like"):
        _check_hardware(lab_with({}), load_profile("gpu"))


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "sysfs: standard\n",
            "sysfs: standard mounts the emulated hardware into the driver's containers, and hardware "
            "is none: drop sysfs, or name a hardware profile",
        ),
        ("driverRoot: /driver-root\n", "driverRoot mounts the emulated GPUs' NVIDIA driver root, and hardware is none"),
    ],
)
def test_hardware_mounts_without_hardware_are_refused(tmp_path: Path, extra: str, message: str) -> None:
    path = profile_file(tmp_path, PROFILE + extra)
    with pytest.raises(BadInput) as e:
        load_profile(path)
    assert message in str(e.value) and path in str(e.value)


def test_unknown_hardware_names_none_as_the_other_choice(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"unknown hardware profile 'nope'.*or none for a driver that needs no"):
        load_profile(profile_file(tmp_path, PROFILE.replace("hardware: none", "hardware: nope")))


def test_checks_on_emulated_hardware_skip_with_the_reason(tmp_path: Path) -> None:
    driver = DriverUnderTest(load_profile(profile_file(tmp_path)))
    with pytest.raises(
        pytest.skip.Exception,
        match=r"cpu-only has hardware: none, and it counts GPUs: name the "
        r"hardware profile",
    ):
        driver.requires_hardware("it counts GPUs")
    DriverUnderTest(load_profile("fake-gpu-plugin")).requires_hardware("it counts GPUs")  # no SKIP


def test_the_lab_gets_the_hardware_the_driver_profiles_name(tmp_path: Path) -> None:
    """certify starts the session lab with the profiles' hardware: none is no emulated hardware at
    all (not the default dgx-like lab); --hardware overrides; the reference drivers get the default."""
    from reports.certify import _nodes_hardware, lab_hardware

    cpu_only, gpu = load_profile(profile_file(tmp_path)), load_profile("gpu")
    assert lab_hardware(None, [cpu_only]) == "none" and _nodes_hardware("none") == {}
    assert lab_hardware(None, [gpu, cpu_only]) == gpu.hardware
    assert lab_hardware("none", [gpu]) == "none" and lab_hardware(None, []) is None
    assert set(_nodes_hardware(lab_hardware(None, [gpu])).values()) == {gpu.hardware}
    other = gpu.model_copy(update={"hardware": "gpu-small"})
    with pytest.raises(BadInput, match="expect different hardware"):
        lab_hardware(None, [gpu, other])
    with pytest.raises(BadInput, match=r"--hardware 'nope'.*or none"):
        lab_hardware("nope", [])


def test_hardware_none_starts_the_session_lab_without_hardware() -> None:
    from clusters import versions
    from clusters.lab_configurations import GATES_OFF, SESSION_LAB
    from dralab.pytest_plugin.labs import _known_gates, lab_config

    options = {"--hardware": "none", "--lab-prefix": "e2e", "--kubernetes-version": versions.KUBERNETES}
    config = SimpleNamespace(getoption=options.get, stash={_known_gates: set(SESSION_LAB.feature_gates)})
    assert lab_config(config, SESSION_LAB).hardware == {}  # type: ignore[arg-type]  # a SimpleNamespace stands in for pytest's Config
    assert lab_config(config, GATES_OFF).hardware == GATES_OFF.hardware  # type: ignore[arg-type]  # a SimpleNamespace stands in for pytest's Config
