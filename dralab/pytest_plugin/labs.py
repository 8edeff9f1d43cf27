"""The labs of a run: the session `lab` and the `extra_lab`s, started on --cluster's provider as
this run's options configure them, each torn down (its logs kept) once no later test needs it, and
whatever an interrupted teardown left up at the end (LAB-05)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import pytest

from clusters import plugin_calls
from basics.children import interrupt_on_sigterm
from clusters.config import ClusterConfig
from clusters.lab_configurations import SESSION_LAB, at_version, renamed
from clusters.provider_registry import provider
from clusters.providers import Capability, Lab, Provider
from dralab.progress_lines import progress_note
from dralab.pytest_plugin import fixture_values
from drivers_under_test.profile import NO_HARDWARE


def pytest_configure(config: pytest.Config) -> None:
    # A CI job cancelled or a `timeout` sends SIGTERM: stop as Ctrl-C does, so the labs' teardown runs.
    interrupt_on_sigterm()


_known_gates = pytest.StashKey[set[str]]()


def known_gates(config: pytest.Config) -> set[str]:
    """The feature gates the components of --kubernetes-version have (built if they are not yet)."""
    if _known_gates not in config.stash:
        from clusters.local.preflight import known_feature_gates
        from clusters.provision import provision

        config.stash[_known_gates] = known_feature_gates(provision(kubernetes_version=config.getoption("--kubernetes-version")))
    return config.stash[_known_gates]


_server_version = pytest.StashKey[str]()


def kubeconfig_server_version(config: pytest.Config) -> str:
    """The --kubeconfig cluster's Kubernetes version, as its API server reports it."""
    if _server_version not in config.stash:
        from kubernetes import client

        from clusters.api_client import client_for

        api = client_for(config.getoption("--kubeconfig"))
        config.stash[_server_version] = client.VersionApi(api).get_code().git_version
    return config.stash[_server_version]


def run_provider(config: pytest.Config) -> Provider:
    """--cluster's provider."""
    return provider(config.getoption("--cluster"))


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


def logs_dir(config: pytest.Config) -> Path:
    """Where the run keeps component logs and the manifests it applied, under --results-dir."""
    return Path(config.getoption("--results-dir")) / "logs"


def kept_up(config: pytest.Config) -> bool:
    """Whether the labs dralab starts outlive the run: with --reuse-labs, on a provider that keeps them."""
    return bool(config.getoption("--reuse-labs")) and Capability.REUSED_LABS in run_provider(config).capabilities


def set_up_for(item: pytest.Item) -> list[Lab]:
    """The labs among the fixtures the test has set up so far (before its setup: the session's)."""
    return list({id(v): v for v in fixture_values.of(item).values() if isinstance(v, Lab)}.values())


# The labs this run started and has up. A Ctrl-C during fixture teardown makes pytest skip the
# finalizers after the interrupted one, so whatever is still up here goes at unconfigure (LAB-05).
_labs_up = pytest.StashKey[list[Lab]]()
# Each started lab's watch logs (clusters/watch_log.py) and when the run took the lab, by lab name.
_watch_logs = pytest.StashKey[dict[str, tuple[list, datetime]]]()


def _name(lab: Lab) -> str:
    return lab.started_config("naming its logs").name


def _started_lab(config: pytest.Config, cfg: ClusterConfig) -> Lab:
    """A lab dralab starts for the run on --cluster's provider (with --reuse-labs, one up from an
    earlier run, where the provider keeps them), its watch logs started."""
    chosen = run_provider(config)
    cfg = chosen.for_run(lab_config(config, cfg))
    lab = chosen.running(cfg) if kept_up(config) else None
    if lab is not None:
        progress_note(config, f"using {chosen.lab_noun} {cfg.name}, up from an earlier run (--reuse-labs)")
    else:
        progress_note(config, f"starting {chosen.lab_noun} {cfg.name}: {cfg.nodes} nodes, {cfg.slice_only_nodes} slice-only")
        lab = chosen.up(cfg)
    config.stash.setdefault(_labs_up, []).append(lab)
    from clusters import watch_log

    config.stash.setdefault(_watch_logs, {})[cfg.name] = (watch_log.start_all(lab.api(), lab.log_dir), datetime.now(timezone.utc))
    return lab


def _down(config: pytest.Config, lab: Lab) -> None:
    """Tear a lab down (with --reuse-labs, leave it to the next run), its component logs first
    copied under the results dir: every log path a report names must outlive the lab (LAB-07)."""
    config.stash[_labs_up].remove(lab)
    name = _name(lab)
    watch_logs, taken = config.stash.get(_watch_logs, {}).pop(name, ([], None))
    for log in watch_logs:
        log.stop()
    try:
        shutil.copytree(lab.log_dir, logs_dir(config) / name, dirs_exist_ok=True)
        # Every call between the lab's kubelets and plugins and every claim, slice and pod seen, beside the report (MUT-03).
        plugin_calls.append_to_run_trace(lab.log_dir, name, Path(config.getoption("--results-dir")) / "trace.jsonl", since=taken)
    finally:
        if not kept_up(config):
            lab.down()


def pytest_unconfigure(config: pytest.Config) -> None:
    up: list[Lab] = config.stash.get(_labs_up, [])
    for lab in list(up):
        if not config.getoption("--reuse-labs"):
            print(f"tearing down lab {_name(lab)}, left up by an interrupted teardown")
        _down(config, lab)


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    option = request.config.getoption
    chosen = run_provider(request.config)
    if Capability.LAB_STARTS not in chosen.capabilities:
        kubeconfig = option("--kubeconfig")
        if not kubeconfig or not Path(kubeconfig).exists():
            raise pytest.UsageError(f"--cluster={chosen.name} needs --kubeconfig PATH of an existing file (got {kubeconfig!r})")
        from clusters.provision import provision

        logs = Path(tempfile.mkdtemp(prefix="dralab-logs-"))
        try:
            yield chosen.attach(Path(kubeconfig), provision(offline=True).kubectl, logs, option("--kubelet-root-dir"))
        finally:
            with contextlib.suppress(OSError):  # kept when something was written there
                logs.rmdir()
        return
    session = _started_lab(request.config, SESSION_LAB)
    try:
        yield session
    finally:
        _down(request.config, session)


# The extra labs up, by the configuration's name.
_extra_labs = pytest.StashKey[dict[str, Lab]]()
# The fixtures that have given each extra lab (by id of its Lab) to a test.
_lab_fixtures = pytest.StashKey[dict[int, set[str]]]()


@pytest.fixture(scope="session")
def extra_lab(request: pytest.FixtureRequest) -> Iterator[Callable[[ClusterConfig], Lab]]:
    """Start further labs (other feature gates, other paths) on the run's provider.
    Each is torn down after the last test that needs it (_down_labs_done_with), the rest at the
    end: a lab left up idle (a hundred kwok nodes renewing their leases) takes the CPU the
    tests after it need."""
    started = request.config.stash.setdefault(_extra_labs, {})

    def start(cfg: ClusterConfig) -> Lab:
        if cfg.name not in started:
            started[cfg.name] = _started_lab(request.config, cfg)
        return started[cfg.name]

    try:
        yield start
    finally:
        for extra in started.values():
            _down(request.config, extra)
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
    for name, value in fixture_values.of(item).items():
        if isinstance(value, Lab):
            given.setdefault(id(value), set()).add(name)
    items = item.session.items
    later = items[items.index(item) + 1 :] if item in items else []
    for key, lab in list(started.items()):
        if not any(name in getattr(i, "fixturenames", ()) for i in later for name in given.get(id(lab), ())):
            del started[key]
            _down(item.config, lab)
