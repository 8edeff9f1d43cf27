"""The pytest plugin: cluster options, the session `lab`, extra labs, and component logs on failure (LAB-07)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

from clusters.config import ClusterConfig
from clusters.errors import LabBroken
from clusters.junit_properties import EVIDENCE, LAB_BROKEN, OBSERVED, REQUIREMENT
from clusters.lab_configurations import PREFIX, SESSION_LAB, renamed
from clusters.providers import Lab, NotSupported, kubeconfig_lab, local_lab
from suites.framework.evidence import Evidence
from dralab.progress_lines import PLUGIN_NAME, Progress, progress_note

if TYPE_CHECKING:
    from drivers_under_test.profile import DriverProfile

LOG_ATTACH_LIMIT = 3000  # characters per component log attached to a failing test

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dralab")
    group.addoption("--cluster", choices=("local", "kubeconfig", "kind"), default="local",
                    help="local: start the embedded lab (default); kubeconfig: use an existing cluster; "
                         "kind: start a kind cluster (needs Docker and kind; no emulated hardware)")
    group.addoption("--kubeconfig", default=None, help="kubeconfig of the cluster for --cluster=kubeconfig")
    group.addoption("--kubelet-root-dir", default="/var/lib/kubelet",
                    help="the kubelet root dir of a --cluster=kubeconfig cluster's nodes")
    group.addoption("--driver", action="append", default=[],
                    help="driver profile under test (name or .yaml; repeatable); default: each suite's reference drivers")
    group.addoption("--driver-variant", default=None, metavar="VARIANT",
                    help="deploy the --driver profiles in this variant of theirs (a broken one shows what the "
                         "suites catch) wherever a test asks for the driver as it is")
    group.addoption("--scale", default="100x8x200", metavar="NODESxDEVICESxPODS",
                    help="size of the DA scale harness (DA-11); upstream scheduler_perf uses 500 nodes x 8 devices")
    group.addoption("--scale-runs", type=int, default=1, help="rounds of the DA scale harness, for its run-to-run spread")
    group.addoption("--results-dir", default="dralab-results", type=Path,
                    help="where harnesses write their figures (JSON)")
    group.addoption("--hardware", default=None, metavar="PROFILE",
                    help="hardware profile (fake_hardware/profiles name or .yaml) of the local session lab's "
                         f"kubelet nodes; default: {', '.join(sorted(set(SESSION_LAB.hardware.values())))}")
    group.addoption("--lab-prefix", default=PREFIX,
                    help="name prefix of the local labs this run starts; runs side by side need different ones")
    group.addoption("--requirement-ids", default=None, metavar="ID,...",
                    help="run only the tests marked with one of these requirement IDs (or ID prefixes: MD)")
    group.addoption("--progress", action="store_true",
                    help="a line per finished test (elapsed, verdict, requirement, test) instead of dots")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(id): requirement ID from the catalogue")
    config.addinivalue_line("markers", "e2e: needs a running cluster")
    config.addinivalue_line("markers", "local_only: needs the local provider (host access to nodes)")
    config.addinivalue_line("markers", "allure_label: allure label (set from the requirement marker)")
    hardware = config.getoption("--hardware", None)
    if hardware:
        from fake_hardware.profile import load_node_profile

        try:
            load_node_profile(hardware)
        except Exception as e:
            raise pytest.UsageError(f"--hardware {hardware!r}: {e}") from None
    if config.getoption("--progress", False):
        config.pluginmanager.register(Progress(config), PLUGIN_NAME)


def lab_config(config: pytest.Config, cfg: ClusterConfig) -> ClusterConfig:
    """A lab configuration as this run starts it: named under --lab-prefix, and for the session
    lab with the --hardware profile on every node that has hardware."""
    hardware = config.getoption("--hardware")
    if hardware and cfg.name == SESSION_LAB.name:
        return renamed(cfg, config.getoption("--lab-prefix"), hardware={node: hardware for node in cfg.hardware})
    return renamed(cfg, config.getoption("--lab-prefix"))


# The local labs this run has up. A Ctrl-C during fixture teardown makes pytest skip the
# finalizers after the interrupted one, so whatever is still up here goes at unconfigure (LAB-05).
_labs_up = pytest.StashKey[list]()


def _local_cluster(config: pytest.Config, cfg: ClusterConfig):  # -> LocalCluster
    from clusters.local.cluster import LocalCluster

    cfg = lab_config(config, cfg)
    progress_note(config, f"starting lab {cfg.name}: {cfg.nodes} nodes, {cfg.slice_only_nodes} slice-only")
    cluster = LocalCluster.up(cfg)
    config.stash.setdefault(_labs_up, []).append(cluster)
    return cluster


def _down(config: pytest.Config, cluster) -> None:  # cluster: LocalCluster
    config.stash[_labs_up].remove(cluster)
    cluster.down()


def pytest_unconfigure(config: pytest.Config) -> None:
    for cluster in list(config.stash.get(_labs_up, [])):
        print(f"tearing down lab {cluster.cfg.name}, left up by an interrupted teardown")
        _down(config, cluster)


# Requirement ID prefix -> the KEP or API it checks: the allure feature; the ID is the story.
FEATURES = {"LAB": "Lab", "HW": "Emulated hardware", "MD": "KEP-5304 device metadata",
            "ST": "KEP-4817 device status", "DA": "KEP-6080 derived attributes", "DP": "Device plugin API",
            "MUT": "Broken driver variants (self-checks)", "RP": "Reports", "PF": "Performance"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Allure labels from each test's requirement marker, so reports group by KEP and ID; with
    --requirement-ids only the tests of those IDs run."""
    for item in items:
        for mark in item.iter_markers("requirement"):
            req = mark.args[0]
            item.user_properties.append((REQUIREMENT, req))
            item.add_marker(pytest.mark.allure_label(FEATURES.get(req.split("-")[0], "other"), label_type="feature"))
            item.add_marker(pytest.mark.allure_label(req, label_type="story"))
    wanted = config.getoption("--requirement-ids")
    if wanted:
        ids = {i.strip().upper() for i in wanted.split(",")}
        keep = [i for i in items if ids & {part for m in i.iter_markers("requirement")
                                           for part in (m.args[0], m.args[0].split("-")[0])}]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    option = request.config.getoption
    if option("--cluster") == "kubeconfig":
        kubeconfig = option("--kubeconfig")
        if not kubeconfig or not Path(kubeconfig).exists():
            raise pytest.UsageError(f"--cluster=kubeconfig needs --kubeconfig PATH of an existing file (got {kubeconfig!r})")
        from clusters.provision import provision

        yield kubeconfig_lab(Path(kubeconfig), provision(offline=True).kubectl,
                             Path(tempfile.mkdtemp(prefix="dralab-logs-")), option("--kubelet-root-dir"))
        return
    if option("--cluster") == "kind":
        yield from _kind_lab()
        return
    cluster = _local_cluster(request.config, SESSION_LAB)
    try:
        yield local_lab(cluster)
    finally:
        _down(request.config, cluster)


def _kind_lab() -> Iterator[Lab]:
    """The session lab's nodes and gates as a kind cluster (what kind nodes cannot have is left out)."""
    from clusters.kind import KindCluster
    from clusters.provision import provision

    tools = provision()
    cfg = ClusterConfig(name=SESSION_LAB.name, nodes=SESSION_LAB.nodes, feature_gates=SESSION_LAB.feature_gates)
    cluster = KindCluster(cfg, Path(tempfile.mkdtemp(prefix="dralab-kind-")))
    cluster.up(images=[image.archive for image in tools.images])
    try:
        yield kubeconfig_lab(cluster.kubeconfig, tools.kubectl, cluster.work_dir, cfg.kubelet_root_dir)
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def extra_lab(request: pytest.FixtureRequest) -> Iterator[Callable[[ClusterConfig], Lab]]:
    """Start further local labs (other feature gates, other paths); all are torn down at the end."""
    from clusters.local.cluster import LocalCluster

    started: dict[str, LocalCluster] = {}

    def start(cfg: ClusterConfig) -> Lab:
        if cfg.name not in started:
            started[cfg.name] = _local_cluster(request.config, cfg)
        return local_lab(started[cfg.name])

    try:
        yield start
    finally:
        for cluster in started.values():
            _down(request.config, cluster)


DeployDriver = Callable[..., "DriverProfile"]


@pytest.fixture(scope="session")
def deploy_driver(lab: Lab, request: pytest.FixtureRequest) -> Iterator[DeployDriver]:
    """deploy_driver(profile, variant=None) deploys a driver profile into the session lab once
    (again only when the variant changes); every deployed profile is removed at the end. With
    --driver-variant, the profiles that have it are deployed in it instead of as they are."""
    from drivers_under_test.deploy import deploy, remove
    from drivers_under_test.profile import load_profile

    deployed: dict[str, tuple[DriverProfile, str | None]] = {}
    default_variant = request.config.getoption("--driver-variant")

    def deploy_one(name_or_path: str, variant: str | None = None) -> DriverProfile:
        profile = load_profile(name_or_path)  # by name: "gpu" and its path are the same deployment
        if variant is None and default_variant in profile.variants:
            variant = default_variant
        if profile.name not in deployed or deployed[profile.name][1] != variant:
            progress_note(request.config, f"deploying driver {profile.name}{f' (variant {variant})' if variant else ''}")
            deploy(lab, profile, variant)
            deployed[profile.name] = (profile, variant)
        return deployed[profile.name][0]

    try:
        yield deploy_one
    finally:
        for profile, _ in deployed.values():
            remove(lab, profile)


@pytest.fixture(scope="session")
def api(lab: Lab):
    return lab.api()


@pytest.fixture(scope="session")
def node_files(lab: Lab, api):  # -> suites.framework.node_files.NodeFiles
    """Node host files, read through a pod per node (works on kubeconfig clusters too)."""
    from suites.framework.node_files import NodeFiles

    files = NodeFiles(lab, api)
    yield files
    files.close()


@pytest.fixture
def namespace(api) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    from suites.framework import namespaces

    with namespaces.fresh(api) as name:
        yield name


@pytest.fixture
def local_only(lab: Lab) -> Lab:
    if lab.local is None:
        pytest.skip(f"needs host access to the nodes, which the {lab.provider} provider does not give")
    return lab




_evidence = pytest.StashKey[Evidence]()


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    request.node.stash[_evidence] = Evidence()
    return request.node.stash[_evidence]


# LAB-07: each failing test gets what the components logged while it ran ---------------------

_log_marks = pytest.StashKey[dict[Path, int]]()


def _component_logs(item: pytest.Item) -> dict[Path, str]:
    """The component logs of the labs a test uses, each with a label naming lab and component."""
    labs: list[Lab] = [v for v in getattr(item, "funcargs", {}).values() if isinstance(v, Lab)]
    if not labs and "lab" in getattr(item, "fixturenames", ()):
        try:
            labs = [item._request.getfixturevalue("lab")]  # type: ignore[attr-defined]
        except Exception:
            return {}
    return {path: f"{path.relative_to(lab.log_dir)} (lab {lab.log_dir.parent.name})"
            for lab in labs for path in sorted(lab.log_dir.rglob("*.log"))}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    item.stash[_log_marks] = {p: p.stat().st_size for p in _component_logs(item)}
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(NotSupported):
        report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1], f"Skipped: {call.excinfo.value}")
        return
    if report.when != "call":
        return
    evidence = item.stash.get(_evidence, Evidence())
    item.user_properties.extend((OBSERVED, f"{label}: {text}") for label, text in evidence.observed)
    if not report.failed:
        return
    if call.excinfo is not None and call.excinfo.errisinstance(LabBroken):
        item.user_properties.append((LAB_BROKEN, str(call.excinfo.value).splitlines()[0]))
    attached = [(f"evidence: {label}", text) for label, text in evidence.items]
    marks = item.stash.get(_log_marks, {})
    for path, label in _component_logs(item).items():
        try:
            with open(path, "rb") as f:
                f.seek(marks.get(path, 0))
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        if text.strip():
            if len(text) > LOG_ATTACH_LIMIT:
                text = "[...]\n" + text[-LOG_ATTACH_LIMIT:]
            attached.append((f"component log {label} during the test", text))
    report.sections.extend(attached)
    item.user_properties.extend((EVIDENCE, f"{title}\n{text}") for title, text in attached)
