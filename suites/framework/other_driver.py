"""A second DRA driver beside the driver under test, for checks of one claim served by two drivers
(MD-07, ST-08, the generated workloads' claims of two drivers): dralab's reference GPU driver
deployed again as gpu-b.dralab.dev, on the lab's emulated GPUs."""

from __future__ import annotations

import contextlib
from typing import Iterator

import pytest
from kubernetes import client

from clusters.providers import Capability, Lab
from drivers_under_test.deploy import deploy, remove
from drivers_under_test.profile import load_profile
from suites.framework import slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.verdicts import skip


def unavailable(lab: Lab) -> str | None:
    """Why the second driver cannot run on `lab`, None if it can."""
    if Capability.EMULATED_HARDWARE not in lab.capabilities or not lab.started_config("the second driver").hardware:
        return (
            "the second driver is dralab's reference GPU driver, which needs a lab with emulated GPUs, and "
            f"this {lab.provider.name} lab has none (a lab gets the hardware its driver profile names)"
        )
    return None


@contextlib.contextmanager
def deployed(lab: Lab) -> Iterator[DriverUnderTest]:
    """The reference GPU driver as gpu-b.dralab.dev while the context lasts."""
    profile = load_profile("gpu").second_instance("b")
    deploy(lab, profile)
    try:
        yield DriverUnderTest(profile)
    finally:
        remove(lab, profile)


@contextlib.contextmanager
def reference_gpu(lab: Lab, requirement: str) -> Iterator[DriverUnderTest]:
    """The reference GPU driver as gpu-b.dralab.dev while the context lasts; SKIP on a lab
    without emulated GPUs."""
    if why := unavailable(lab):
        pytest.skip(
            f"{why}; to check {requirement} too, certify with --hardware dgx-like (the emulated GPUs beside the driver's own devices)"
        )
    with deployed(lab) as driver:
        yield driver


def free_on_one_node(lab: Lab, api: client.ApiClient, drivers: tuple[str, ...], requirement: str) -> tuple[list[slices.Device], str]:
    """A free device of each driver, all on one node, and that node; SKIP where no node has them."""
    for node in lab.nodes:
        free = [slices.free(api, d, node.name) for d in drivers]
        if all(free):
            return [f[0] for f in free], node.name
    skip(
        f"no node has a free device of each of {', '.join(drivers)} "
        f"({'; '.join(slices.room(api, d).describe() for d in drivers)}); {requirement} needs one of each on one node",
        slices.MORE_DEVICES,
    )
