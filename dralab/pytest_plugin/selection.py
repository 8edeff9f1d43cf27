"""Which tests run, in what order and in which shard, and which do not apply: a requirement the
labs' Kubernetes version lacks, a benchmark beside other runs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from basics.junit_properties import REQUIREMENT
from clusters.providers import Capability
from basics import shards as shards_of_run
from dralab.pytest_plugin import labs
from basics.shards import parse as parse_shard
from suites import catalogue


def requirement_ids(item: pytest.Item) -> list[str]:
    return [m.args[0] for m in item.iter_markers("requirement")]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Allure labels from each test's requirement marker, so reports group by KEP and ID; with
    --requirement-ids only the tests of those IDs run, and DEP-01 with them; DEP tests first,
    so a driver that does not come up blocks the rest instead of failing each of them, and those
    over the whole run last (the generated workloads' containers they judge come from the KP suite)."""
    for item in items:
        for req in requirement_ids(item):
            item.user_properties.append((REQUIREMENT, req))
            item.add_marker(pytest.mark.allure_label(catalogue.family(req), label_type="feature"))
            item.add_marker(pytest.mark.allure_label(req, label_type="story"))
    wanted = config.getoption("--requirement-ids")
    if wanted:
        _keep(config, items, lambda i: _wanted_by(wanted, i))
    items.sort(key=_run_order)
    shard, shards = parse_shard(config.getoption("--shard"))
    if shards > 1:
        groups = {i.nodeid: _shard_group(i) for i in items}
        placed = shards_of_run.assign(groups.values(), shards)
        _keep(config, items, lambda i: placed[groups[i.nodeid]] == shard)


def _keep(config: pytest.Config, items: list[pytest.Item], keep: Callable[[pytest.Item], bool]) -> None:
    config.hook.pytest_deselected(items=[i for i in items if not keep(i)])
    items[:] = [i for i in items if keep(i)]


def _wanted_by(option: str, item: pytest.Item) -> bool:
    """Whether --requirement-ids `option` (IDs or ID prefixes) selects the test; DEP's always run."""
    ids = {i.strip().upper() for i in option.split(",")} | {"DEP"}
    return bool(ids & {part for req in requirement_ids(item) for part in (req, req.split("-")[0])})


def _run_order(item: pytest.Item) -> tuple[bool, bool]:
    """DEP tests first, those over the whole run last, the rest as collected (the sort is stable)."""
    return (not any(req.startswith("DEP-") for req in requirement_ids(item)), item.get_closest_marker("over_the_run") is not None)


def _shard_group(item: pytest.Item) -> str:
    """What a test's shard goes by: its driver, else its suite (basics.shards)."""
    callspec = getattr(item, "callspec", None)  # a parametrized test's
    return shards_of_run.group_of(callspec.params if callspec is not None else {}, item.nodeid.split("::")[0].rsplit("/", 1)[0])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that does not apply SKIPs before anything else of its setup (no lab starts for it)."""
    _skip_where_not_applicable(item)
    _skip_benchmark_beside_other_runs(item)


def _skip_where_not_applicable(item: pytest.Item) -> None:
    """A requirement that shipped after the labs' Kubernetes version, or whose gates that version
    lacks, does not apply: SKIP before any lab starts for it. On a cluster dralab did not start only its
    version decides (whether its gates are on is the cluster's own: its tests find out)."""
    config = item.config
    if item.get_closest_marker("e2e") is None:
        return
    ids = requirement_ids(item)
    if Capability.LAB_STARTS not in labs.run_provider(config).capabilities:
        kubeconfig = config.getoption("--kubeconfig")
        if not (kubeconfig and Path(kubeconfig).exists()) or not any(r.since for i in ids if (r := catalogue.get(i))):
            return  # (a missing kubeconfig is the lab fixture's usage error)
        reasons = catalogue.not_applicable(
            ids, labs.kubeconfig_server_version(config), lambda: {g for i in ids if (r := catalogue.get(i)) for g in r.gates}
        )
    else:
        reasons = catalogue.not_applicable(ids, config.getoption("--kubernetes-version"), lambda: labs.known_gates(config))
    if reasons:
        pytest.skip("; ".join(reasons))


def _skip_benchmark_beside_other_runs(item: pytest.Item) -> None:
    """A benchmark's figures need the machine to itself: beside other runs (--shard K/N, N > 1)
    they would measure those runs too (DA-11's scale harness ran 4.7 pods/s beside one, 19 alone)."""
    if item.get_closest_marker("benchmark") is not None and parse_shard(item.config.getoption("--shard"))[1] > 1:
        pytest.skip(
            "a benchmark, and this run shares the machine with others (--shard): its figures would measure "
            "them too; `dralab certify --shards 1` or `dralab perf` (PF-04) measures it alone"
        )
