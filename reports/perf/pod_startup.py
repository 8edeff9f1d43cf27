"""PF-02, PF-03 and PF-06: pods with a DRA claim, from create to Running, kubelet's
NodePrepareResources time and its split (prepare_split.py), with the driver's device metadata on
and, where its profile has the `metadata-disabled` variant, off. The driver is the reference gpu
one unless `dralab perf --profile` names another.

Each round creates one pod per free device of the driver (at most `max_pods`) at once, every pod
with its own claim for one device of the profile's first device class, watches them to Running,
and deletes them; the next round starts once every claim is gone. The kubelets' and the driver's
metrics are read before and after each round."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from kubernetes import client

from basics.errors import LabBroken
from clusters.providers import Lab
from drivers_under_test.deploy import deploy, remove
from drivers_under_test.profile import METADATA_DISABLED, DriverProfile
from reports.perf import prepare_split
from suites.framework import claims, namespaces, pod_watch, slices
from suites.framework.claims import ClaimBuilder
from suites.framework.figures import percentiles
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

MODES = {"metadata on": None, "metadata off": METADATA_DISABLED}  # the profile's variant
TIMEOUT = 180.0
SETTLE_S = 5.0  # a driver's device count unchanged this long is all it publishes
SEQUENTIAL = 8  # pods per round started one after the other


def _round(api: client.ApiClient, device_class: str, pods: int, at_once: bool = True) -> list[float]:
    """Seconds from each pod's create call to a watch seeing it Running: the pods created at once,
    or one after the other, each once the one before runs."""
    core = client.CoreV1Api(api)
    with namespaces.fresh(api, prefix="perf-start") as namespace:
        for i in range(pods):
            claims.create(api, namespace, ClaimBuilder(f"p{i}").request("dev", device_class))
        watcher = pod_watch.FirstSeen(api, namespace, pod_watch.running)
        created: dict[str, float] = {}
        for i in range(pods):
            created[f"p{i}"] = time.time()
            core.create_namespaced_pod(namespace, PodBuilder(f"p{i}").with_claim("dev", claim=f"p{i}").build())  # type: ignore[arg-type]  # validate_call builds the V1Pod
            if not at_once:
                watcher.wait(i + 1, TIMEOUT, keep_watching=True)
        running = watcher.wait(pods, TIMEOUT)
        if len(running) < pods:
            late = sorted(set(created) - set(running))
            raise LabBroken(f"{len(running)} of {pods} pods Running within {TIMEOUT:.0f}s; not: {', '.join(late[:5])}")
    wait_for(f"the claims of namespace {namespace} gone", lambda: not claims.listed(api, namespace), TIMEOUT)
    return [running[name] - created[name] for name in created]


def _summary(values: list[float]) -> dict[str, float | None]:
    return {**percentiles(values), "mean": statistics.fmean(values) if values else None}


def _published(api: client.ApiClient, driver: str) -> int:
    """How many free devices the driver publishes, once the count has settled (at least one)."""
    seen = {"count": -1, "since": time.monotonic()}

    def settled() -> bool:
        count = len(slices.free(api, driver))
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return count > 0 and time.monotonic() - seen["since"] >= SETTLE_S

    wait_for(f"{driver} devices published and free", settled, 60)
    return int(seen["count"])  # stored as an int; seen's values infer as float, for its "since"


def measure(lab: Lab, profile: DriverProfile, rounds: int, max_pods: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """Rounds of each mode, the modes taking turns (the driver deployed anew for each round), so
    that the lab's drift over the run, its API server busier as namespaces go, weighs on both.
    After each round's burst, SEQUENTIAL pods one after the other give PF-06 the prepare path
    without the burst's queueing for 2 cores."""
    api = lab.api()
    driver = profile.drivers[0]
    modes = {m: v for m, v in MODES.items() if v is None or v in profile.variants}
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    observed: dict[tuple[str, bool], prepare_split.Snapshot] = {(m, b): {} for m in modes for b in (True, False)}
    results: dict[str, Any] = {"profile": profile.name, "driver": driver, "rounds": rounds}
    try:
        for i in range(rounds):
            for mode, variant in modes.items():
                deploy(lab, profile, variant)
                pods = min(_published(api, driver), max_pods)
                results["pods_per_round"] = pods
                for at_once in (True, False):
                    before = prepare_split.snapshot(lab, driver, profile.namespace)
                    took = _round(api, profile.device_classes[0], pods if at_once else min(pods, SEQUENTIAL), at_once)
                    after = prepare_split.snapshot(lab, driver, profile.namespace)
                    observed[mode, at_once] = prepare_split.together(observed[mode, at_once], prepare_split.between(before, after))
                    if at_once:
                        latencies[mode] += took
                progress(
                    f"{mode}, round {i + 1}/{rounds}: {pods} pods, create to Running p50 {percentiles(latencies[mode][-pods:])['p50']:.2f}s"
                )
    finally:
        remove(lab, profile)
    for mode in modes:
        split = prepare_split.split(observed[mode, True])
        results[mode] = {
            "create_to_running_s": {**_summary(latencies[mode]), "samples": latencies[mode]},
            "node_prepare_resources_s": split.pop("kubelet_prepare_resources"),
            "prepare_split": split,
            "prepare_split_sequential": prepare_split.split(observed[mode, False]),
        }
    return results
