"""What every suite shares: the drivers under test. `--driver PROFILE` (repeatable) names them;
by default each suite runs against dralab's reference drivers, gpu and net. A test that takes
the `driver` fixture runs once per driver, the driver deployed once per module."""

from __future__ import annotations

import pytest

from suites.framework.drivers import DriverUnderTest

REFERENCE_DRIVERS = ["gpu", "net"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "driver" in metafunc.fixturenames:
        names = metafunc.config.getoption("--driver") or REFERENCE_DRIVERS
        metafunc.parametrize("driver", names, indirect=True, scope="module")


@pytest.fixture(scope="module")
def driver(request: pytest.FixtureRequest, deploy_driver) -> DriverUnderTest:
    return DriverUnderTest(deploy_driver(request.param))
