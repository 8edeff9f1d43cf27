"""Fixtures of the ST suite. The API checks (ST-03, ST-04, ST-05) need claims whose status no
driver writes: devices of two DRA drivers that exist only as ResourceSlices (`published_only`),
allocated by the real scheduler to pods bound to the lab's slice-only nodes (or its nodes). A driver
check failing where the cluster refused the driver's status writes (ST-09) is BLOCKED by it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

pytest.register_assert_rewrite("suites.resource_claim_status.checks")

from clusters.providers import Lab  # noqa: E402
from drivers_under_test.profile import Capability, load_profile  # noqa: E402
from suites.framework.drivers import DriverUnderTest  # noqa: E402
from suites.framework import claims, namespaces, pods, slices  # noqa: E402
from suites.framework.claims import ClaimBuilder  # noqa: E402
from suites.framework.verdicts import require  # noqa: E402
from suites.resource_claim_status import checks  # noqa: E402

DRIVER_A, DRIVER_B = "st-a.dralab.dev", "st-b.dralab.dev"
LAB = pytest.StashKey[Lab]()  # the suite's lab (_lab_of_the_suite)
# The ST IDs that judge what a driver wrote into claims' status.
DRIVER_STATUS_IDS = {"ST-01", "ST-02", "ST-07", "ST-08"}
DEVICES_PER_NODE = 4


@dataclass
class PublishedOnly:
    """The nodes where the slice-only drivers have devices: `nodes[0]` gets the claims,
    `nodes[1]` is the other node of the authorization checks."""

    nodes: list[str]


def published(api, nodes: list[str]) -> contextlib.AbstractContextManager[None]:
    """ResourceSlices of both slice-only drivers on `nodes`."""
    devices = [{"name": f"dev-{i}", "attributes": {"index": {"int": i}}} for i in range(DEVICES_PER_NODE)]
    return slices.publishing(api, [slices.resource_slice(d, n, devices) for d in (DRIVER_A, DRIVER_B) for n in nodes])


@pytest.fixture(scope="module")
def status_driver(driver: DriverUnderTest) -> DriverUnderTest:
    """The driver under test, SKIP unless its profile claims device-status."""
    driver.requires(Capability.DEVICE_STATUS)
    return driver


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _blocked_by_the_cluster(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _blocked_by_the_cluster(item))


def _blocked_by_the_cluster(item: pytest.Item) -> Iterator[None]:
    """A driver status check that fails where the API server refused the driver's status writes
    for a field they did not send (ST-09) is BLOCKED by that cluster finding, not the driver's FAIL,
    in its scenario (setup) as in its body."""
    try:
        return (yield)
    except AssertionError as failed:
        lab = item.config.stash.get(LAB, None)
        profile = item.callspec.params.get("driver") if hasattr(item, "callspec") else None
        if lab and profile and {m.args[0] for m in item.iter_markers("requirement")} & DRIVER_STATUS_IDS:
            if blocked := checks.blocked_by_the_cluster(lab, DriverUnderTest(load_profile(profile))):
                raise blocked from failed
        raise


@pytest.fixture(scope="session", autouse=True)
def _lab_of_the_suite(request: pytest.FixtureRequest, lab: Lab) -> None:
    """The lab the suite runs on, kept before any scenario (module-scoped) is set up: one that
    fails hands it to no test."""
    request.config.stash[LAB] = lab


@pytest.fixture(scope="session")
def published_only(lab: Lab, api) -> Iterator[PublishedOnly]:
    nodes = (lab.slice_only_nodes or [n.name for n in lab.nodes])[:2]
    require(
        len(nodes) == 2,
        f"the ST API checks need two nodes (slice-only or with a kubelet); the cluster has {nodes}",
        "run them on a cluster with two nodes (the local lab has them)",
    )
    with published(api, nodes), slices.publishing(api, [], classes=[DRIVER_A, DRIVER_B]):
        yield PublishedOnly(nodes)


@pytest.fixture
def holders_namespace(api) -> Iterator[str]:
    """A namespace for pods that only hold claims and identities."""
    with namespaces.fresh(api, prefix="st") as name:
        yield name


def allocated_claim(api, namespace: str, name: str, node: str) -> dict[str, Any]:
    """A claim with request `a` (a device of DRIVER_A) and `b` (one of DRIVER_B), allocated by the
    scheduler for pod `{name}-holder` on `node`; the claim as read once allocated."""
    claim = ClaimBuilder(name).request("a", DRIVER_A).request("b", DRIVER_B)
    return pods.allocate_through(api, namespace, claim, node, pod=f"{name}-holder")


def entry(claim: dict[str, Any], driver: str, **fields: Any) -> dict[str, Any]:
    """A status.devices entry for the claim's allocated device of `driver`."""
    (result,) = claims.allocated(claim, driver)
    return {"driver": driver, "pool": result["pool"], "device": result["device"], **fields}
