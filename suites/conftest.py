"""What every suite shares: the drivers under test. `--driver PROFILE` (repeatable) names them;
by default each suite runs against dralab's reference drivers, gpu and net. A test that takes
the `driver` fixture runs once per driver, the driver deployed once per module."""

from __future__ import annotations

import random
from typing import Callable

import pytest

from clusters.config import ClusterConfig
from clusters.lab_configurations import GATES_OFF, PLACEMENT, SCHEDULER_GATE_OFF
from clusters.providers import Capability, Lab
from suites.framework.drivers import DriverUnderTest
from suites.kubelet_plugin import generated, generated_run

# A bound for one generated shape (its pods started and waited for, a restart, removal): what cuts a
# hung run short, not an expectation of speed (a shape takes about 10 s).
SECONDS_A_SHAPE = 60

REFERENCE_DRIVERS = ["gpu", "net"]


# Every reference driver, for the checks every driver goes through first (DEP-01).
ALL_REFERENCE_DRIVERS = ["gpu", "gpu-nvml", "net", "fake-gpu-plugin"]


def pytest_dralab_fail_attachments(item: pytest.Item, message: str) -> list[tuple[str, str]]:
    """A check over the run that FAILed: the generated cases its message names, to apply."""
    return [
        (f"the generated case {name}, to apply", manifests)
        for name, manifests in generated.cases_named(item.config.stash.get(generated.RUNS, {}).values(), message).items()
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    chosen = metafunc.config.getoption("--driver")
    if "driver" in metafunc.fixturenames:
        # A suite whose reference drivers are others (the device plugin suite) names them in its modules.
        names = chosen or getattr(metafunc.module, "REFERENCE_DRIVERS", REFERENCE_DRIVERS)
        metafunc.parametrize("driver", names, indirect=True, scope="module")
    if "driver_profile_name" in metafunc.fixturenames:
        metafunc.parametrize("driver_profile_name", chosen or ALL_REFERENCE_DRIVERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that ask for the generated workloads may draw them first: --budget shapes for
    each of --seeds seeds, so their time limit grows with the shapes drawn."""
    limit = float(config.getini("timeout") or 0) + SECONDS_A_SHAPE * config.getoption("--budget") * config.getoption("--seeds")
    for item in items:
        if {"generated_run", "generated_workloads"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(limit))


@pytest.fixture(scope="session")
def generated_workloads(request: pytest.FixtureRequest, lab: Lab, api) -> Callable[[DriverUnderTest], generated.Run]:
    """A driver's generated workloads (suites/kubelet_plugin/generated_run.py), drawn the first time
    a check of any suite asks for them and kept for the run: `--seed S` draws the same shapes
    again, `--seeds N` draws with S, S+1, ... in turn, `--budget` shapes each."""
    config = request.config
    runs = config.stash.setdefault(generated.RUNS, {})

    def of(driver: DriverUnderTest) -> generated.Run:
        if driver.name not in runs:
            chosen = config.getoption("--seed")
            runs[driver.name] = generated_run.draw(
                lab,
                api,
                driver,
                chosen if chosen is not None else random.randrange(2**32),
                config.getoption("--budget"),
                config.getoption("--seeds"),
            )
        return runs[driver.name]

    return of


@pytest.fixture(scope="module")
def driver(request: pytest.FixtureRequest, deploy_driver) -> DriverUnderTest:
    return DriverUnderTest(deploy_driver(request.param))


def _started(lab: Lab, extra_lab, cfg: ClusterConfig) -> Lab:
    lab.require(Capability.OTHER_LABS, f"starting lab {cfg.name}")
    return extra_lab(cfg)


@pytest.fixture(scope="session")
def gates_off_lab(lab: Lab, extra_lab) -> Lab:
    return _started(lab, extra_lab, GATES_OFF)


@pytest.fixture(scope="session")
def scheduler_gate_off_lab(lab: Lab, extra_lab) -> Lab:
    return _started(lab, extra_lab, SCHEDULER_GATE_OFF)


@pytest.fixture(scope="session")
def placement_lab(lab: Lab, extra_lab) -> Lab:
    return _started(lab, extra_lab, PLACEMENT)
