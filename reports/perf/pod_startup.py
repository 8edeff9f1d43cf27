"""PF-02 and PF-03: pods with a DRA claim, from create to Running, and kubelet's
NodePrepareResources time, with the reference gpu driver's device metadata on and off.

Each round creates one pod per GPU of the lab at once, every pod with its own claim for one
GPU, watches them to Running, and deletes them; the next round starts once every claim is
gone. Kubelet's dra_operations_duration_seconds (operation PrepareResources) is read from every
node before and after each mode."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from kubernetes import client

from clusters.errors import LabBroken
from clusters.local import metrics
from clusters.providers import Lab
from drivers_under_test.deploy import deploy, remove
from drivers_under_test.profile import METADATA_DISABLED, load_profile
from fake_hardware.profile import load_node_profile
from suites.framework import claims, namespaces, pod_watch, slices
from suites.framework.claims import ClaimBuilder
from suites.framework.figures import percentiles
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

MODES = {"metadata on": None, "metadata off": METADATA_DISABLED}  # the gpu profile's variant
PREPARE = ("dra_operations_duration_seconds", {"operation_name": "PrepareResources", "is_error": "false"})
TIMEOUT = 180.0


def _prepare_histogram(lab: Lab) -> metrics.Histogram:
    assert lab.local is not None
    name, labels = PREPARE
    total = metrics.Histogram({})
    for node in lab.nodes:
        total = total + metrics.histogram(metrics.scrape_kubelet(lab.local, node.name), name, **labels)
    return total


def _round(api: client.ApiClient, device_class: str, pods: int) -> list[float]:
    """Seconds from each pod's create call to a watch seeing it Running."""
    core = client.CoreV1Api(api)
    with namespaces.fresh(api, prefix="perf-start") as namespace:
        for i in range(pods):
            claims.create(api, namespace, ClaimBuilder(f"p{i}").request("gpu", device_class))
        watcher = pod_watch.FirstSeen(api, namespace, pod_watch.running)
        created: dict[str, float] = {}
        for i in range(pods):
            created[f"p{i}"] = time.time()
            core.create_namespaced_pod(namespace, PodBuilder(f"p{i}").with_claim("gpu", claim=f"p{i}").build())
        running = watcher.wait(pods, TIMEOUT)
        if len(running) < pods:
            late = sorted(set(created) - set(running))
            raise LabBroken(f"{len(running)} of {pods} pods Running within {TIMEOUT:.0f}s; not: {', '.join(late[:5])}")
    wait_for(f"the claims of namespace {namespace} gone", lambda: not claims.listed(api, namespace), TIMEOUT)
    return [running[name] - created[name] for name in created]


def _summary(values: list[float]) -> dict[str, float | None]:
    return {**percentiles(values), "mean": statistics.fmean(values) if values else None}


def measure(lab: Lab, rounds: int, progress: Callable[[str], None]) -> dict[str, Any]:
    profile = load_profile("gpu")
    api = lab.api()
    driver = profile.drivers[0]
    pods = len(lab.nodes) * len(load_node_profile(profile.hardware).gpus)  # one per GPU of the lab
    results: dict[str, Any] = {"pods_per_round": pods, "rounds": rounds}
    try:
        for mode, variant in MODES.items():
            deploy(lab, profile, variant)
            wait_for(f"{pods} {driver} devices published and free", lambda: len(slices.free(api, driver)) == pods, 60)
            before = _prepare_histogram(lab)
            latencies: list[float] = []
            for i in range(rounds):
                latencies += _round(api, profile.device_classes[0], pods)
                progress(f"{mode}, round {i + 1}/{rounds}: {pods} pods, create to Running p50 "
                         f"{percentiles(latencies[-pods:])['p50']:.2f}s")
            prepare = _prepare_histogram(lab) - before
            results[mode] = {
                "create_to_running_s": {**_summary(latencies), "samples": latencies},
                "node_prepare_resources_s": {"mean": prepare.mean, "p50": prepare.quantile(0.5),
                                             "p99": prepare.quantile(0.99), "count": prepare.count,
                                             "buckets": prepare.buckets},
            }
    finally:
        remove(lab, profile)
    return results
