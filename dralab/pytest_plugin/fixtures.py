"""What the checks are given beside their labs: the drivers under test deployed (`deploy_driver`), an
API client, node files, a fresh namespace, and the lab once it can do what a check needs."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from clusters.providers import Capability, Lab
from dralab.progress_lines import progress_note
from dralab.pytest_plugin import labs
from suites.framework.verdicts import Blocked

if TYPE_CHECKING:
    from drivers_under_test.profile import DriverProfile
    from suites.framework.node_files import NodeFiles

DeployDriver = Callable[..., "DriverProfile"]


@pytest.fixture(scope="session")
def deploy_driver(lab: Lab, request: pytest.FixtureRequest) -> Iterator[DeployDriver]:
    """deploy_driver(profile, variant=None) deploys a driver profile into the session lab once
    (again only when the variant changes, or after `with deploy_driver.uninstalled(profile):`);
    every deployed profile is removed at the end from a lab that outlives the run. With
    --driver-variant, the profiles that have it are deployed in it instead of as they are."""
    from drivers_under_test.deploy import DeployFailed, deploy, remove, remove_slices, uninstall
    from drivers_under_test.profile import load_profile

    deployed: dict[str, tuple[DriverProfile, str | None]] = {}
    # (profile, variant) -> why it did not come up: never tried again, its tests are BLOCKED.
    failed: dict[tuple[str, str | None], str] = {}
    default_variant = request.config.getoption("--driver-variant")

    def deploy_one(name_or_path: str, variant: str | None = None) -> DriverProfile:
        profile = load_profile(name_or_path)  # by name: "gpu" and its path are the same deployment
        if variant is None and default_variant in profile.variants:
            variant = default_variant
        label = f"driver profile {profile.name}{f' (variant {variant})' if variant else ''}"
        profile = profile.in_variant(variant)  # the suites request through its classes
        # Neither this deployment nor the driver as DEP-01 deployed it came up: nothing to test.
        as_dep01 = default_variant if default_variant in profile.variants else None
        why = failed.get((profile.name, variant)) or failed.get((profile.name, as_dep01))
        if why:
            raise Blocked("DEP-01", f"{label} did not come up: {why}")
        if profile.name not in deployed or deployed[profile.name][1] != variant:
            progress_note(request.config, f"deploying {label}")
            try:
                deploy(lab, profile, variant, record_to=labs.logs_dir(request.config) / "manifests")
            except DeployFailed as e:
                failed[(profile.name, variant)] = str(e).splitlines()[0]
                raise
            deployed[profile.name] = (profile, variant)
        return deployed[profile.name][0]

    @contextlib.contextmanager
    def uninstalled(profile: DriverProfile) -> Iterator[None]:
        """The profile uninstalled as its user would, for the block; its leftover slices removed
        after it, and the next deploy_driver deploys it again."""
        deployed.pop(profile.name, None)
        try:
            uninstall(lab, profile)
            yield
        finally:
            remove_slices(lab, profile)

    deploy_one.uninstalled = uninstalled  # type: ignore[attr-defined]
    try:
        yield deploy_one
    finally:
        # A lab dralab started goes down right after, unless kept up: removing the drivers from it
        # first (about 15 s a driver, waiting for its pods and slices to go) would be thrown away.
        if Capability.LAB_STARTS not in lab.capabilities or labs.kept_up(request.config):
            for profile, _ in deployed.values():
                remove(lab, profile)


@pytest.fixture(scope="session")
def api(lab: Lab) -> Any:  # kubernetes.client.ApiClient
    return lab.api()


@pytest.fixture(scope="session")
def node_files(lab: Lab, api: Any) -> Iterator[NodeFiles]:
    """Node host files, read through a pod per node (works on kubeconfig clusters too)."""
    from suites.framework.node_files import NodeFiles

    files = NodeFiles(lab, api)
    yield files
    files.close()


@pytest.fixture
def namespace(api: Any) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    from suites.framework import namespaces

    with namespaces.fresh(api) as name:
        yield name


@pytest.fixture
def local_only(lab: Lab) -> Lab:
    """The lab, if its nodes' processes run on this host (the local provider)."""
    lab.require(Capability.HOST_PROCESSES, "this check")
    return lab


@pytest.fixture
def host_access(lab: Lab) -> Lab:
    """The lab, if dralab started it (local or kind): its nodes' files and services are reachable
    and its hardware is known."""
    lab.require(Capability.HOST_ACCESS, "this check")
    return lab
