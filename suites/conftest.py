"""What every suite shares: the drivers under test. `--driver PROFILE` (repeatable) names them;
by default each suite runs against dralab's reference drivers, gpu and net. A test that takes
the `driver` fixture runs once per driver, the driver deployed once per module."""

from __future__ import annotations

import pytest

from clusters.config import ClusterConfig
from clusters.lab_configurations import GATES_OFF, PLACEMENT, SCHEDULER_GATE_OFF
from clusters.providers import Lab
from suites.framework.drivers import DriverUnderTest

REFERENCE_DRIVERS = ["gpu", "net"]


# Every reference driver, for the checks every driver goes through first (DEP-01).
ALL_REFERENCE_DRIVERS = ["gpu", "gpu-nvml", "net", "fake-gpu-plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    chosen = metafunc.config.getoption("--driver")
    if "driver" in metafunc.fixturenames:
        # A suite whose reference drivers are others (the device plugin suite) names them in its modules.
        names = chosen or getattr(metafunc.module, "REFERENCE_DRIVERS", REFERENCE_DRIVERS)
        metafunc.parametrize("driver", names, indirect=True, scope="module")
    if "driver_profile_name" in metafunc.fixturenames:
        metafunc.parametrize("driver_profile_name", chosen or ALL_REFERENCE_DRIVERS)


@pytest.fixture(scope="module")
def driver(request: pytest.FixtureRequest, deploy_driver) -> DriverUnderTest:
    return DriverUnderTest(deploy_driver(request.param))


def _started(lab: Lab, extra_lab, cfg: ClusterConfig) -> Lab:
    if lab.cfg is None:
        pytest.skip(f"starting lab {cfg.name} (another cluster configuration) needs a provider dralab starts labs on")
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
