"""HW-10: the reference GPU driver finding its GPUs through the lab's NVML (profile gpu-nvml), beside
the same driver reading sysfs (profile gpu) on the session lab: both publish the same devices, a
container of a GPU found through NVML gets the node's /dev/nvidiaN from the driver root, and a GPU
that NVML reports unhealthy leaves the slice until it recovers."""

from __future__ import annotations

import contextlib
import os
import re

import pytest

from clusters.providers import Capability, Lab
from fake_hardware import nvml
from fake_hardware.lab import HardwareLab
from suites.framework import claims, pods
from suites.framework.claims import ClaimBuilder
from suites.framework.pods import PodBuilder
from suites.framework.waits import WaitTimeout, wait_for
from tests.e2e.test_reference_drivers import assert_unhealthy_gpu_leaves_the_slice_and_returns, slices_by_node

pytestmark = pytest.mark.e2e

SYSFS_DRIVER, NVML_DRIVER = "gpu.dralab.dev", "gpu-nvml.dralab.dev"


@pytest.fixture(scope="module")
def both(lab: Lab, deploy_driver) -> Lab:
    if Capability.HOST_PROCESSES not in lab.capabilities or not lab.local_cluster("its hardware").cfg.hardware:
        pytest.skip("needs the local lab with emulated hardware")
    deploy_driver("gpu")
    deploy_driver("gpu-nvml")
    # A kubelet restarted by an earlier test deletes its node's slices; the drivers publish again.
    nodes = {n.name for n in lab.nodes}
    wait_for(
        "both GPU drivers' slices on every node",
        lambda: all(set(slices_by_node(lab.api(), driver)) == nodes for driver in (SYSFS_DRIVER, NVML_DRIVER)),
        60,
    )
    return lab


@pytest.mark.requirement("HW-10")
def test_nvml_finds_the_devices_sysfs_shows(both: Lab, api) -> None:
    def views() -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
        return slices_by_node(api, SYSFS_DRIVER), slices_by_node(api, NVML_DRIVER)

    # Each driver polls on its own clock: a change (a fault an earlier test cleared) reaches them apart.
    with contextlib.suppress(WaitTimeout):  # the comparison below names the difference
        wait_for("the NVML and sysfs views to agree", lambda: (lambda s, n: s == n)(*views()), 20)
    through_sysfs, through_nvml = views()
    for node in sorted({n.name for n in both.nodes}):
        assert through_nvml.get(node), f"the NVML driver published no GPU on {node}"
        assert through_nvml[node] == through_sysfs[node], f"{node}: NVML view {through_nvml[node]}\n!= sysfs view {through_sysfs[node]}"


@pytest.mark.requirement("HW-10")
def test_container_of_a_gpu_found_through_nvml_gets_its_device_node(both: Lab, api, namespace: str) -> None:
    claims.create(api, namespace, ClaimBuilder("gpu").request("gpu", NVML_DRIVER))
    pod = (
        PodBuilder("gpu")
        .with_claim("gpu", claim="gpu")
        .running(*pods.until_stopped("for d in /dev/nvidia*; do stat -c '%n %F %t %T' $d; done"))
    )
    pods.run(api, namespace, pod)
    (result,) = claims.allocated(claims.read(api, namespace, "gpu"), NVML_DRIVER)
    device = next(d for d in slices_by_node(api, NVML_DRIVER)[result["pool"]] if d["name"] == result["device"])
    index = device["attributes"]["index"]["int"]
    shown = wait_for("the pod to list its /dev/nvidia*", lambda: pods.logs(api, namespace, "gpu").strip() or None, 30)
    nodes = {m[0]: (int(m[1], 16), int(m[2], 16)) for m in re.findall(r"^(\S+) character special file (\w+) (\w+)$", shown, re.M)}
    assert nodes == {f"/dev/nvidia{index}": (nvml.NVIDIA_MAJOR, index), "/dev/nvidiactl": (nvml.NVIDIA_MAJOR, nvml.NVIDIACTL_MINOR)}, shown


@pytest.mark.requirement("HW-10")
def test_gpu_nvml_reports_unhealthy_leaves_the_slice_and_returns(both: Lab, api) -> None:
    assert_unhealthy_gpu_leaves_the_slice_and_returns(both, api, NVML_DRIVER, both.nodes[1].name, "gpu2")


@pytest.mark.requirement("HW-10")
def test_every_node_with_gpus_has_a_driver_root(both: Lab) -> None:
    for hw in HardwareLab(both.local.cfg.hardware_site()).nodes.values():
        assert (hw.driver_root / nvml.LIBRARY).is_file() and (hw.driver_root / nvml.CONFIG).is_file()
        assert os.path.exists(hw.driver_root / "dev" / "nvidiactl")
        assert (hw.driver_root / nvml.LIBRARY_FILE).is_file() and os.access(hw.driver_root / nvml.NVIDIA_SMI, os.X_OK)
