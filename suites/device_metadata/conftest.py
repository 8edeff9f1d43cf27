"""Fixtures of the MD suite: the shared metadata readers, each shape set up once per driver
under test (suites/conftest.py)."""

from __future__ import annotations

from typing import Iterator

import pytest

# The checks are shared by the tests and the self-check: their asserts explain themselves too.
pytest.register_assert_rewrite("suites.device_metadata.checks")

from clusters.providers import Lab
from drivers_under_test.profile import Capability
from suites.device_metadata import scenario
from suites.framework import namespaces
from suites.framework.drivers import DriverUnderTest


@pytest.fixture
def metadata_driver(driver: DriverUnderTest) -> DriverUnderTest:
    driver.requires(Capability.METADATA)
    return driver


@pytest.fixture(scope="module")
def md_namespace(api, driver: DriverUnderTest) -> Iterator[str]:
    with namespaces.fresh(api, prefix="md") as name:
        yield name


@pytest.fixture(scope="module")
def readers(lab: Lab, api, node_files, driver: DriverUnderTest, md_namespace: str) -> scenario.Readers:
    return scenario.Readers(lab, api, node_files, driver, md_namespace)
