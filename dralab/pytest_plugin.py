"""The pytest plugin: cluster options, the session `lab`, extra labs, the drivers under test, and
each test's verdict with its evidence (docs/verdicts.md; LAB-07)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from basics.children import interrupt_on_sigterm
from clusters.config import ClusterConfig
from basics.errors import BadInput, LabBroken, NotSupported
from clusters.health import dead_components, diagnose
from basics.junit_properties import BLOCKED_BY, DIAGNOSIS, EVIDENCE, OBSERVED, REQUIREMENT, VERDICT, WARNING, Verdict
from clusters import pace, plugin_calls, versions
from clusters.lab_configurations import PREFIX, SESSION_LAB, at_version, on_kind, renamed
from clusters.providers import Capability, Lab, kind_lab, kubeconfig_lab, local_lab
from dralab import shards as shards_of_run, verdicts
from dralab.shards import parse as parse_shard
from dralab.progress_lines import PLUGIN_NAME, Progress, progress_note
from drivers_under_test import evidence as driver_evidence
from drivers_under_test.profile import NO_HARDWARE
from suites import catalogue
from suites.framework.drivers import DriverUnderTest
from suites.framework import waits
from suites.framework.evidence import Evidence
from suites.framework.verdicts import Blocked

if TYPE_CHECKING:
    from drivers_under_test.profile import DriverProfile

LOG_ATTACH_LIMIT = 3000  # characters per component log attached to a failing test


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dralab")
    group.addoption(
        "--cluster",
        choices=("local", "kubeconfig", "kind"),
        default="local",
        help="local: start the embedded lab (default); kubeconfig: use an existing cluster; "
        "kind: start a kind cluster (clusters/kind: a running Docker engine or Debian's dockerd, kind and its "
        "node image built offline; emulated hardware, slice-only nodes by kwok)",
    )
    group.addoption("--kubeconfig", default=None, help="kubeconfig of the cluster for --cluster=kubeconfig")
    group.addoption("--kubelet-root-dir", default="/var/lib/kubelet", help="the kubelet root dir of a --cluster=kubeconfig cluster's nodes")
    group.addoption(
        "--workload-image",
        default=None,
        metavar="IMAGE",
        help="the image of the suites' pods (pulled when a node lacks it); default: the lab's "
        "dralab.dev/workload:lab, imported, never pulled. It needs sh, busybox-like coreutils and ip, "
        "and incluster-whoami",
    )
    group.addoption(
        "--driver",
        action="append",
        default=[],
        help="driver profile under test (name or .yaml; repeatable); default: each suite's reference drivers",
    )
    group.addoption(
        "--driver-variant",
        default=None,
        metavar="VARIANT",
        help="deploy the --driver profiles in this variant of theirs (a broken one shows what the "
        "suites catch) wherever a test asks for the driver as it is",
    )
    group.addoption(
        "--budget",
        type=int,
        default=10,
        metavar="N",
        help="generated workloads (MUT-03): pod shapes tried per driver (hypothesis examples)",
    )
    group.addoption(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="generated workloads: hypothesis's seed (default: a random one, printed with the verdict)",
    )
    group.addoption(
        "--seeds",
        type=int,
        default=1,
        metavar="N",
        help="generated workloads: draw with N seeds in turn, --seed and the N-1 after it (a sweep for false FAILs)",
    )
    group.addoption(
        "--scale",
        default="100x8x200",
        metavar="NODESxDEVICESxPODS",
        help="size of the DA scale harness (DA-11); upstream scheduler_perf uses 500 nodes x 8 devices",
    )
    group.addoption("--scale-runs", type=int, default=1, help="rounds of the DA scale harness, for its run-to-run spread")
    group.addoption("--results-dir", default="dralab-results", type=Path, help="where harnesses write their figures (JSON)")
    group.addoption(
        "--hardware",
        default=None,
        metavar="PROFILE",
        help="hardware profile (fake_hardware/profiles name or .yaml) of the local session lab's "
        f"kubelet nodes, or {NO_HARDWARE} for none; default: "
        f"{', '.join(sorted(set(SESSION_LAB.hardware.values())))}",
    )
    group.addoption(
        "--kubernetes-version",
        default=versions.KUBERNETES,
        choices=versions.KUBERNETES_VERSIONS,
        help="Kubernetes version of the labs this run starts; requirements that shipped later, or whose "
        "feature gates that version lacks, SKIP (the catalogue's `since` and `gates`)",
    )
    group.addoption(
        "--lab-prefix", default=PREFIX, help="name prefix of the local labs this run starts; runs side by side need different ones"
    )
    group.addoption(
        "--reuse-labs",
        action="store_true",
        help="use a live local lab of the same name and configuration instead of starting one, and leave "
        "the labs up at the end (for runs one after another; `dralab down --name NAME` removes them)",
    )
    group.addoption(
        "--requirement-ids",
        default=None,
        metavar="ID,...",
        help="run only the tests marked with one of these requirement IDs (or ID prefixes: MD)",
    )
    group.addoption(
        "--shard",
        default="1/1",
        metavar="K/N",
        help="run only part K of N of the tests (a driver's tests together, the cluster's checks a part "
        "per suite), for N runs side by side on labs of their own (dralab certify --shards)",
    )
    group.addoption(
        "--progress", action="store_true", help="a line per finished test (elapsed, verdict, requirement, test) instead of dots"
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from dralab import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(id): requirement ID from the catalogue")
    config.addinivalue_line("markers", "e2e: needs a running cluster")
    config.addinivalue_line("markers", "allure_label: allure label (set from the requirement marker)")
    config.addinivalue_line("markers", "benchmark: prints figures; never asserts timing")
    config.addinivalue_line("markers", "over_the_run: judges what the whole run observed, so it runs after the other tests")
    hardware = config.getoption("--hardware", None)
    if hardware and hardware != NO_HARDWARE:
        from fake_hardware.profile import load_node_profile

        try:
            load_node_profile(hardware)
        except Exception as e:
            raise pytest.UsageError(f"--hardware {hardware!r}: {e}") from None
    from suites.framework import workload

    workload.use(config.getoption("--workload-image", None))
    try:
        shard, shards = parse_shard(config.getoption("--shard", "1/1"))
    except BadInput as e:
        raise pytest.UsageError(str(e)) from None
    if config.getoption("--progress", False):
        config.pluginmanager.register(Progress(config, f"{shard}/{shards}" if shards > 1 else ""), PLUGIN_NAME)
    # A CI job cancelled or a `timeout` sends SIGTERM: stop as Ctrl-C does, so the labs' teardown runs.
    interrupt_on_sigterm()


_known_gates = pytest.StashKey[set]()


def known_gates(config: pytest.Config) -> set[str]:
    """The feature gates the components of --kubernetes-version have (built if they are not yet)."""
    if _known_gates not in config.stash:
        from clusters.local.preflight import known_feature_gates
        from clusters.provision import provision

        config.stash[_known_gates] = known_feature_gates(provision(kubernetes_version=config.getoption("--kubernetes-version")))
    return config.stash[_known_gates]


def lab_config(config: pytest.Config, cfg: ClusterConfig) -> ClusterConfig:
    """A lab configuration as this run starts it: named under --lab-prefix, on --kubernetes-version
    (without the gates it lacks), and for the session lab with the --hardware profile on every node
    that has hardware."""
    hardware = config.getoption("--hardware")
    changes = {}
    if hardware and cfg.name == SESSION_LAB.name:
        changes["hardware"] = {} if hardware == NO_HARDWARE else {node: hardware for node in cfg.hardware}
    cfg, dropped = at_version(
        renamed(cfg, config.getoption("--lab-prefix"), **changes), config.getoption("--kubernetes-version"), known_gates(config)
    )
    if dropped:
        progress_note(
            config,
            f"lab {cfg.name} on Kubernetes {cfg.kubernetes_version}, which lacks the feature gates "
            f"{', '.join(dropped)}: started without them",
        )
    return cfg


# The local labs this run has up. A Ctrl-C during fixture teardown makes pytest skip the
# finalizers after the interrupted one, so whatever is still up here goes at unconfigure (LAB-05).
_labs_up = pytest.StashKey[list]()


def _owned_cluster(config: pytest.Config, cfg: ClusterConfig):  # -> LocalCluster | KindCluster
    """A lab dralab starts for the run, on --cluster's provider (local or kind)."""
    from clusters.local.cluster import LocalCluster

    cfg = lab_config(config, cfg)
    if config.getoption("--cluster") == "kind":
        return _kind_cluster(config, on_kind(cfg))
    cluster = LocalCluster.running(cfg) if config.getoption("--reuse-labs") else None
    if cluster is not None:
        progress_note(config, f"using lab {cfg.name}, up from an earlier run (--reuse-labs)")
    else:
        progress_note(config, f"starting lab {cfg.name}: {cfg.nodes} nodes, {cfg.slice_only_nodes} slice-only")
        cluster = LocalCluster.up(cfg)
    config.stash.setdefault(_labs_up, []).append(cluster)
    _start_watch_logs(config, cluster)
    return cluster


# Each owned lab's watch logs (clusters/watch_log.py) and when the run took the lab, by lab name.
_watch_logs = pytest.StashKey[dict]()


def _start_watch_logs(config: pytest.Config, cluster) -> None:  # cluster: LocalCluster | KindCluster
    from clusters import watch_log
    from clusters.api_client import client_for

    api = client_for(cluster.kubeconfig)
    config.stash.setdefault(_watch_logs, {})[cluster.cfg.name] = (watch_log.start_all(api, cluster.log_dir), datetime.now(timezone.utc))


def _kind_cluster(config: pytest.Config, cfg: ClusterConfig):  # -> KindCluster
    """The lab's nodes, gates, runtime-config, slice-only nodes and hardware as a kind cluster
    (clusters/kind), with the reference drivers' image loaded."""
    from clusters.kind.cluster import KindCluster
    from clusters.provision import provision

    tools = provision()
    cluster = KindCluster(cfg, tools)
    progress_note(config, f"starting kind lab {cfg.name}: {cfg.nodes} nodes, {cfg.slice_only_nodes} slice-only")
    cluster.up(images=(tools.drivers_image,))
    config.stash.setdefault(_labs_up, []).append(cluster)
    _start_watch_logs(config, cluster)
    return cluster


def _owned_lab(cluster) -> Lab:  # cluster: LocalCluster | KindCluster
    from clusters.local.cluster import LocalCluster

    return local_lab(cluster) if isinstance(cluster, LocalCluster) else kind_lab(cluster)


def _down(config: pytest.Config, cluster) -> None:  # cluster: LocalCluster | KindCluster
    """Tear a lab down (with --reuse-labs, leave it to the next run), its component logs first
    copied under the results dir: every log path a report names must outlive the lab (LAB-07)."""
    config.stash[_labs_up].remove(cluster)
    watch_logs, taken = config.stash.get(_watch_logs, {}).pop(cluster.cfg.name, ([], None))
    for log in watch_logs:
        log.stop()
    try:
        shutil.copytree(cluster.log_dir, logs_dir(config) / cluster.cfg.name, dirs_exist_ok=True)
        # Every call between the lab's kubelets and plugins and every claim, slice and pod seen, beside the report (MUT-03).
        plugin_calls.append_to_run_trace(
            cluster.log_dir, cluster.cfg.name, Path(config.getoption("--results-dir")) / "trace.jsonl", since=taken
        )
    finally:
        if not _kept_up(config):
            cluster.down()


def _kept_up(config: pytest.Config) -> bool:
    """Whether the labs dralab starts outlive the run: with --reuse-labs, but for kind's."""
    return bool(config.getoption("--reuse-labs")) and config.getoption("--cluster") != "kind"


def logs_dir(config: pytest.Config) -> Path:
    """Where the run keeps component logs and the manifests it applied, under --results-dir."""
    return Path(config.getoption("--results-dir")) / "logs"


def pytest_unconfigure(config: pytest.Config) -> None:
    for cluster in list(config.stash.get(_labs_up, [])):
        if not config.getoption("--reuse-labs"):
            print(f"tearing down lab {cluster.cfg.name}, left up by an interrupted teardown")
        _down(config, cluster)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Allure labels from each test's requirement marker, so reports group by KEP and ID; with
    --requirement-ids only the tests of those IDs run, and DEP-01 with them; DEP tests first,
    so a driver that does not come up blocks the rest instead of failing each of them, and those
    over the whole run last (the generated workloads' containers they judge come from the KP suite)."""
    for item in items:
        for mark in item.iter_markers("requirement"):
            req = mark.args[0]
            item.user_properties.append((REQUIREMENT, req))
            item.add_marker(pytest.mark.allure_label(catalogue.family(req), label_type="feature"))
            item.add_marker(pytest.mark.allure_label(req, label_type="story"))
    wanted = config.getoption("--requirement-ids")
    if wanted:
        ids = {i.strip().upper() for i in wanted.split(",")} | {"DEP"}
        keep = [i for i in items if ids & {part for m in i.iter_markers("requirement") for part in (m.args[0], m.args[0].split("-")[0])}]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    items.sort(
        key=lambda i: (
            not any(m.args[0].startswith("DEP-") for m in i.iter_markers("requirement")),
            i.get_closest_marker("over_the_run") is not None,
        )
    )
    shard, shards = parse_shard(config.getoption("--shard"))
    if shards > 1:
        groups = {
            i.nodeid: shards_of_run.group_of(
                getattr(i, "callspec", None) and i.callspec.params or {}, i.nodeid.split("::")[0].rsplit("/", 1)[0]
            )
            for i in items
        }
        placed = shards_of_run.assign(groups.values(), shards)
        config.hook.pytest_deselected(items=[i for i in items if placed[groups[i.nodeid]] != shard])
        items[:] = [i for i in items if placed[groups[i.nodeid]] == shard]


_server_version = pytest.StashKey[str]()


def _kubeconfig_server_version(config: pytest.Config) -> str:
    """The --kubeconfig cluster's Kubernetes version, as its API server reports it."""
    if _server_version not in config.stash:
        from kubernetes import client

        from clusters.api_client import client_for

        api = client_for(config.getoption("--kubeconfig"))
        config.stash[_server_version] = client.VersionApi(api).get_code().git_version
    return config.stash[_server_version]


def _skip_benchmark_beside_other_runs(item: pytest.Item) -> None:
    """A benchmark's figures need the machine to itself: beside other runs (--shard K/N, N > 1)
    they would measure those runs too (DA-11's scale harness ran 4.7 pods/s beside one, 19 alone)."""
    if item.get_closest_marker("benchmark") is not None and parse_shard(item.config.getoption("--shard"))[1] > 1:
        pytest.skip(
            "a benchmark, and this run shares the machine with others (--shard): its figures would measure "
            "them too; `dralab certify --shards 1` or `dralab perf` (PF-04) measures it alone"
        )


def _skip_where_not_applicable(item: pytest.Item) -> None:
    """A requirement that shipped after the labs' Kubernetes version, or whose gates that version
    lacks, does not apply: SKIP before any lab starts for it. On a kubeconfig cluster only its
    version decides (whether its gates are on is the cluster's own: its tests find out)."""
    config = item.config
    if item.get_closest_marker("e2e") is None:
        return
    ids = [m.args[0] for m in item.iter_markers("requirement")]
    if config.getoption("--cluster") == "kubeconfig":
        kubeconfig = config.getoption("--kubeconfig")
        if not (kubeconfig and Path(kubeconfig).exists()) or not any(r.since for i in ids if (r := catalogue.get(i))):
            return  # (a missing kubeconfig is the lab fixture's usage error)
        reasons = catalogue.not_applicable(
            ids, _kubeconfig_server_version(config), lambda: {g for i in ids if (r := catalogue.get(i)) for g in r.gates}
        )
    else:
        reasons = catalogue.not_applicable(ids, config.getoption("--kubernetes-version"), lambda: known_gates(config))
    if reasons:
        pytest.skip("; ".join(reasons))


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    option = request.config.getoption
    if option("--cluster") == "kubeconfig":
        kubeconfig = option("--kubeconfig")
        if not kubeconfig or not Path(kubeconfig).exists():
            raise pytest.UsageError(f"--cluster=kubeconfig needs --kubeconfig PATH of an existing file (got {kubeconfig!r})")
        from clusters.provision import provision

        logs = Path(tempfile.mkdtemp(prefix="dralab-logs-"))
        try:
            yield kubeconfig_lab(Path(kubeconfig), provision(offline=True).kubectl, logs, option("--kubelet-root-dir"))
        finally:
            with contextlib.suppress(OSError):  # kept when something was written there
                logs.rmdir()
        return
    cluster = _owned_cluster(request.config, SESSION_LAB)
    try:
        yield _owned_lab(cluster)
    finally:
        _down(request.config, cluster)


# The extra labs up, by the configuration's name: (LocalCluster or KindCluster, the run's Lab of it).
_extra_labs = pytest.StashKey[dict]()
# The fixtures that have given each extra lab (by id of its Lab) to a test.
_lab_fixtures = pytest.StashKey[dict]()


@pytest.fixture(scope="session")
def extra_lab(request: pytest.FixtureRequest) -> Iterator[Callable[[ClusterConfig], Lab]]:
    """Start further labs (other feature gates, other paths) on the run's provider, local or kind.
    Each is torn down after the last test that needs it (_down_labs_done_with), the rest at the
    end: a lab left up idle (a hundred kwok nodes renewing their leases) takes the CPU the
    tests after it need."""
    started = request.config.stash.setdefault(_extra_labs, {})

    def start(cfg: ClusterConfig) -> Lab:
        if cfg.name not in started:
            cluster = _owned_cluster(request.config, cfg)
            started[cfg.name] = (cluster, _owned_lab(cluster))
        return started[cfg.name][1]

    try:
        yield start
    finally:
        for cluster, _ in started.values():
            _down(request.config, cluster)
        started.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield
    _down_labs_done_with(item)


def _down_labs_done_with(item: pytest.Item) -> None:
    """After a test: tear down each extra lab no later test of the run needs, that is, no later
    test uses a fixture that has given it to a test (a lab a test started itself, the scale
    harness's, is done with after it; asked for again, it starts anew)."""
    started = item.config.stash.get(_extra_labs, {})
    if not started:
        return
    given = item.config.stash.setdefault(_lab_fixtures, {})
    for name, value in _fixture_values(item).items():
        if isinstance(value, Lab):
            given.setdefault(id(value), set()).add(name)
    items = item.session.items
    later = items[items.index(item) + 1 :] if item in items else []
    for key, (cluster, lab) in list(started.items()):
        if not any(name in i.fixturenames for i in later for name in given.get(id(lab), ())):
            del started[key]
            _down(item.config, cluster)


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
                deploy(lab, profile, variant, record_to=logs_dir(request.config) / "manifests")
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
        if lab.cfg is None or _kept_up(request.config):
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
    """The lab, if its nodes' processes run on this host (the local provider)."""
    lab.require(Capability.HOST_PROCESSES, "this check")
    return lab


@pytest.fixture
def host_access(lab: Lab) -> Lab:
    """The lab, if dralab started it (local or kind): its nodes' files and services are reachable
    and its hardware is known."""
    lab.require(Capability.HOST_ACCESS, "this check")
    return lab


_evidence = pytest.StashKey[Evidence]()


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    request.node.stash[_evidence] = Evidence()
    return request.node.stash[_evidence]


# LAB-07: each failing test gets what the components logged while it ran ---------------------

_log_marks = pytest.StashKey[dict[Path, int]]()


def _fixture_values(item: pytest.Item) -> dict[str, Any]:
    """The fixtures a test has set up so far, by name: its arguments, and those set up for them.
    A failing setup has filled no argument yet (funcargs), but the fixtures below the failing one,
    the driver under test among them, are cached in their definitions (pytest's own)."""
    values = dict(getattr(item, "funcargs", None) or {})  # None once torn down
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in info.name2fixturedefs.items() if info is not None else ():
        cached = defs[-1].cached_result
        if cached is not None and cached[2] is None:
            values.setdefault(name, cached[0])
    return values


_labs_used = pytest.StashKey[dict[int, Lab]]()


def _labs_of(item: pytest.Item) -> list[Lab]:
    """The labs a test uses: those among the fixtures it has set up, also once they are torn down
    (the run's last teardown tears the session lab down before its verdict is reached)."""
    used = item.stash.setdefault(_labs_used, {})
    for lab in _labs_set_up(item):
        used.setdefault(id(lab), lab)
    return list(used.values())


def _component_logs(item: pytest.Item) -> dict[Path, str]:
    """The component logs of the labs a test uses, each with a label naming lab and component."""
    return {
        path: f"{path.relative_to(lab.log_dir)} (lab {lab.log_dir.parent.name})"
        for lab in _labs_of(item)
        for path in sorted(lab.log_dir.rglob("*.log"))
    }


# Per lab (by its log dir), the first lasting fault of the run: a component that died, or a
# LabBroken. A check failing on that lab later cannot be laid on the driver, even once the
# component is back (a restart test starts it again): its failure is an ERROR.
_lab_faults = pytest.StashKey[dict[Path, str]]()


def _record_fault(config: pytest.Config, lab: Lab, fault: str, test: str) -> None:
    config.stash.setdefault(_lab_faults, {}).setdefault(lab.log_dir, f"{fault} (seen during {test})")


def _labs_set_up(item: pytest.Item) -> list[Lab]:
    """The labs among the fixtures the test has set up so far (before its setup: the session's)."""
    return list({id(v): v for v in _fixture_values(item).values() if isinstance(v, Lab)}.values())


def _dead(item: pytest.Item) -> list[str]:
    """The dead components of the labs the test has set up so far, each recorded as a fault."""
    found = []
    for lab in _labs_set_up(item):
        for part in dead_components(lab):
            _record_fault(item.config, lab, part, item.nodeid)
            found.append(part)
    return found


_gauges = pytest.StashKey[dict[Path, pace.Gauge]]()


def _pace(item: pytest.Item, fresh: bool) -> pace.Pace | None:
    """The pace of the slowest lab the test has set up so far, each lab measured by its own gauge."""
    gauges, labs = item.config.stash.setdefault(_gauges, {}), _labs_set_up(item)
    for lab in labs:
        if lab.log_dir not in gauges:
            gauges[lab.log_dir] = pace.Gauge(lab.api, [n.name for n in lab.nodes])
    return pace.slowest([gauges[lab.log_dir](fresh) for lab in labs])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Waits of the test, its fixtures included, end once a component of a lab it has died, and
    stretch by the pace of its labs; a component found dead before or after it is a fault of its lab
    for the rest of the run."""
    _dead(item)
    with waits.watching(waits.LabWatch(down=lambda: _dead(item), pace=lambda fresh: _pace(item, fresh))):
        yield
    _dead(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A requirement that does not apply on the labs' Kubernetes version SKIPs. A test on a lab that has had
    a fault ends at once, an ERROR: whatever it found there could not be laid on the driver, and
    waiting on the broken lab would only make the run longer."""
    _skip_where_not_applicable(item)
    _skip_benchmark_beside_other_runs(item)
    faults = item.config.stash.get(_lab_faults, {})
    for lab in _labs_set_up(item):
        if lab.log_dir in faults:
            raise LabBroken(
                f"lab {lab.log_dir.parent.name} had a fault earlier in the run, so no check can reach a "
                f"verdict on it: {faults[lab.log_dir]}"
            )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    item.stash[_log_marks] = {p: p.stat().st_size for p in _component_logs(item)}
    yield


def _requirements(item: pytest.Item) -> list[catalogue.Requirement]:
    return [r for r in map(catalogue.get, (m.args[0] for m in item.iter_markers("requirement"))) if r is not None]


def _levels(item: pytest.Item) -> list[str]:
    return [r.level.value for r in _requirements(item)]


def _driver_musts(item: pytest.Item) -> list[str]:
    return [r.id for r in _requirements(item) if r.checks is catalogue.Checks.DRIVER and r.level is catalogue.Level.MUST]


def _scenario_blocked(item: pytest.Item, error: BaseException) -> Blocked | None:
    """For a test whose fixture the driver failed (its scenario could not be set up): None when
    the failure is this test's FAIL, else what blocks it. The FAIL goes to the first driver MUST
    test sharing the failed fixture (module or session scope: pytest hands each of its tests the
    same error); the other tests of that fixture, MUSTs, SHOULDs and cluster checks alike, are
    BLOCKED by it. A failed fixture no driver MUST shares blocks all but a driver MUST's own test."""
    defs = getattr(item, "_fixtureinfo").name2fixturedefs
    failed = {
        name: d[-1].scope
        for name, d in defs.items()
        if (cached := d[-1].cached_result) is not None and cached[2] is not None and cached[2][0] is error
    }
    shared = [name for name, scope in failed.items() if scope != "function"]
    owner = next(
        (other for other in item.session.items if _driver_musts(other) and any(name in other.fixturenames for name in shared)), None
    )
    said = str(error).splitlines()[0] if str(error) else type(error).__name__
    if owner is not None and owner is not item:
        by = _driver_musts(owner)[0]
        return Blocked(
            by, f"the driver failed the scenario this check shares with {by} (fixture {', '.join(shared)}; {owner.nodeid}): {said}"
        )
    if owner is item or _driver_musts(item):
        return None
    return Blocked("the driver's scenario", f"the driver failed fixture {', '.join(failed) or '?'}, which this check needs: {said}")


def _blocked(item: pytest.Item, report: pytest.TestReport, blocked: Blocked) -> None:
    report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1], f"Skipped: {blocked}")
    item.user_properties += [(VERDICT, Verdict.BLOCKED), (BLOCKED_BY, blocked.by)]


def _drivers_evidence(item: pytest.Item, lab: Lab) -> list[tuple[str, str]]:
    """The driver's pods, logs and events, and the test's claims, pods and events."""
    args = _fixture_values(item)
    drivers = {d.profile.name: d.profile for d in args.values() if isinstance(d, DriverUnderTest)}
    namespaces = {v for k, v in args.items() if isinstance(v, str) and k.endswith("namespace")}
    namespaces |= {v.namespace for v in args.values() if isinstance(getattr(v, "namespace", None), str)}
    if not drivers and not namespaces:
        return []
    found: list[tuple[str, str]] = []
    try:
        api = lab.api()
        for profile in drivers.values():
            found += driver_evidence.of_driver(lab, api, profile)
        for ns in sorted(namespaces):
            found += driver_evidence.of_namespace(api, ns)
    except Exception as e:  # evidence is best effort: the verdict stands without it
        found.append(("driver evidence could not be collected", f"{type(e).__name__}: {e}"))
    return found


def _lab_problems(item: pytest.Item, labs: list[Lab]) -> list[str]:
    """What is wrong with the test's labs now, and the faults they had earlier in the run."""
    problems, faults = [], item.config.stash.get(_lab_faults, {})
    for lab in labs:
        now = diagnose(lab)
        problems += now
        if lab.log_dir in faults and not any(faults[lab.log_dir].startswith(p) for p in now):
            problems.append(
                f"lab {lab.log_dir.parent.name} had a fault earlier in the run, which may have left it broken: {faults[lab.log_dir]}"
            )
    return problems


def _component_log_sections(item: pytest.Item) -> list[tuple[str, str]]:
    marks, found = item.stash.get(_log_marks, {}), []
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
            found.append((f"component log {label} during the test", text))
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    try:
        _judge(item, call, report)
    finally:
        # The report copied the test's properties before they got this phase's verdict; the JUnit
        # XML writes them from the teardown's report.
        report.user_properties = list(item.user_properties)


def _judge(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    """This phase's verdict (docs/verdicts.md) with its evidence, onto the test's properties
    and its report."""
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, Blocked):  # kept from running by an earlier FAIL
        _blocked(item, report, error)
        return
    if isinstance(error, NotSupported):  # not applicable here
        report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1], f"Skipped: {error}")
        return
    evidence = item.stash.get(_evidence, Evidence())
    if report.when == "call":
        item.user_properties.extend((OBSERVED, f"{label}: {text}") for label, text in evidence.observed)
        item.user_properties.extend((WARNING, w) for w in evidence.warnings)
        if report.passed and evidence.warnings:
            item.user_properties.append((VERDICT, Verdict.WARNING))
    if not report.failed or error is None:
        return
    labs = _labs_of(item)
    problems = _lab_problems(item, labs)
    verdict = verdicts.classify(report.when, error, problems, _levels(item))
    if isinstance(error, LabBroken):
        for lab in labs:
            _record_fault(item.config, lab, str(error).splitlines()[0], item.nodeid)
    if report.when == "setup" and verdict.verdict in (Verdict.FAIL, Verdict.WARNING):
        blocked = _scenario_blocked(item, error)
        if blocked is not None:
            _blocked(item, report, blocked)
            return
    item.user_properties.append((VERDICT, verdict.verdict))
    attached = [(f"evidence: {label}", text) for label, text in evidence.items]
    if verdict.verdict == Verdict.ERROR:
        item.user_properties.append((DIAGNOSIS, verdict.why))
        attached.insert(0, ("lab diagnosis", verdict.why))
    elif labs:  # the driver is at fault: its side of the story
        attached += [(f"evidence: {label}", text) for label, text in _drivers_evidence(item, labs[0])]
    if verdict.verdict == Verdict.FAIL:  # what the suites know that reproduces it
        attached += [
            section for sections in item.config.hook.pytest_dralab_fail_attachments(item=item, message=str(error)) for section in sections
        ]
    if verdict.verdict == Verdict.WARNING:
        report.outcome, report.longrepr = "passed", None
        item.user_properties.append((WARNING, str(error).splitlines()[0] if str(error) else type(error).__name__))
    attached += _component_log_sections(item)
    report.sections.extend(attached)
    item.user_properties.extend((EVIDENCE, f"{title}\n{text}") for title, text in attached)
