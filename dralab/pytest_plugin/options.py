"""The plugin's command-line options (the `dralab` group of `pytest --help`) and markers, and what is
checked of them before any test: bad input is a usage error, not a run of failed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters import versions
from basics.errors import BadInput
from clusters.lab_configurations import PREFIX, SESSION_LAB
from clusters.provider_registry import DEFAULT, PROVIDERS
from dralab.progress_lines import PLUGIN_NAME, Progress
from basics.shards import parse as parse_shard
from drivers_under_test.profile import NO_HARDWARE


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dralab")
    group.addoption(
        "--cluster",
        # The registry's live view: a provider registered after this is offered too.
        choices=PROVIDERS.keys(),
        default=DEFAULT,
        help="; ".join(f"{p.name}: {p.description}{' (default)' if p.name == DEFAULT else ''}" for p in PROVIDERS.values()),
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
