"""PF-08 (LAB-09): the real kube-scheduler placing pods with DRA claims on thousands of kwok
nodes, literal and derived attributes side by side in one run, beside upstream's published
scheduler_perf figures per CPU.

A lab with N kwok nodes comes up (timed: the whole lab, and kwok's part from creating the nodes
to all Ready). Every kwok node gets the DA harness's devices (M of each of its two drivers, DA-11)
as ResourceSlices. Then, per mode, K pods with a claim each (a GPU and a NIC on one NUMA node:
literal matchAttribute, or derived attributes) are created at once; the scheduler places them
and kwok brings them to Running. Per mode: throughput (pods from the first create to the last
bound, per second, and per CPU of this machine), per-pod scheduling latency (create to bound as
a watch saw it, and the scheduler's own SLI histogram) and create to Running, p50 and p99."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from kubernetes import client

from basics.errors import LabBroken
from clusters.lab_configurations import renamed, scale
from clusters.local import metrics
from clusters.local.cluster import LocalCluster
from clusters.local.provider import local_lab
from clusters.providers import Lab
from suites.derived_attributes import scale as da_scale
from suites.framework import claims, namespaces, pod_watch
from suites.framework.figures import percentiles
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

DEFAULT_SIZE = "1000x8x2000"
LAB_PREFIX = "perf-kwok"  # perf-kwok-scale: apart from PF-04's perf-scale
# The anchor the issue names: scheduler_perf SchedulingWithResourceClaimTemplate at 5000 nodes,
# match_empty, 109-117 pods/s on 6 CPUs (control plane in the same process, no kwok, no leases).
UPSTREAM: dict[str, Any] = {
    "benchmark": "scheduler_perf SchedulingWithResourceClaimTemplate, 5000 nodes, match_empty",
    "pods_per_s": [109.0, 117.0],
    "cpus": 6,
}
SLI = da_scale.HISTOGRAMS["scheduler_sli"]
CREATORS = 8  # parallel API writers: pods arrive faster than the scheduler places them


def _in_parallel(work: Callable[[int], object], count: int) -> None:
    with ThreadPoolExecutor(CREATORS) as pool:
        list(pool.map(work, range(count)))


def _sli(lab: Lab) -> metrics.Histogram:
    local = lab.local_cluster("reading the scheduler's metrics")
    name, labels = SLI
    return metrics.histogram(metrics.scrape(local, "kube-scheduler"), name, **labels)


def workload(lab: Lab, mode: str, size: da_scale.Size, timeout: float) -> dict[str, Any]:
    """K pods with `mode` claims in a fresh namespace, to Running; the figures. The namespace and
    the claims are gone afterwards, so the next workload finds every device free."""
    api = lab.api()
    core = client.CoreV1Api(api)
    with namespaces.fresh(api, prefix=f"kwok-{mode}") as namespace:
        _in_parallel(lambda i: claims.create(api, namespace, da_scale.claim(f"p{i}", mode)), size.pods)
        bound = pod_watch.FirstSeen(api, namespace, pod_watch.bound)
        running = pod_watch.FirstSeen(api, namespace, pod_watch.running)
        before = _sli(lab)
        created: dict[str, float] = {}

        def create(i: int) -> None:
            created[f"p{i}"] = time.time()
            core.create_namespaced_pod(namespace, PodBuilder(f"p{i}").with_claim("c", claim=f"p{i}").build())  # type: ignore[arg-type]  # validate_call builds the V1Pod

        start = time.time()
        _in_parallel(create, size.pods)
        ran = running.wait(size.pods, timeout)
        scheduled = bound.wait(size.pods, 10)  # bound before Running: seen by now
        sli = _sli(lab) - before
        if len(ran) < size.pods:
            raise LabBroken(
                f"{mode}: {len(scheduled)} of {size.pods} pods bound and {len(ran)} Running within "
                f"{timeout:.0f}s; not Running: {', '.join(sorted(set(created) - set(ran))[:5])}"
            )
        listed: list[Any] = core.list_namespaced_pod(namespace).items  # all Running: each has a node_name, the client types Optional
        elsewhere = {p.spec.node_name for p in listed} - set(lab.slice_only_nodes)
        if elsewhere:
            raise LabBroken(f"{mode}: pods went to {sorted(elsewhere)}, not kwok nodes")
    wait_for(f"the {size.pods} claims of namespace {namespace} gone", lambda: not claims.listed(api, namespace), timeout)
    seconds = max(scheduled.values()) - start
    return {
        "mode": mode,
        "pods": size.pods,
        "seconds_to_last_bound": seconds,
        "throughput_pods_per_s": size.pods / seconds,
        "throughput_pods_per_s_per_cpu": size.pods / seconds / (os.cpu_count() or 1),
        "scheduling_s": percentiles([scheduled[n] - created[n] for n in scheduled]),
        "scheduler_sli_s": {"p50": sli.quantile(0.50), "p99": sli.quantile(0.99), "mean": sli.mean},
        "create_to_running_s": percentiles([ran[n] - created[n] for n in ran]),
    }


def run(size: da_scale.Size, progress: Callable[[str], None]) -> dict[str, Any]:
    """Bring up a lab of `size.nodes` kwok nodes, both workloads on it, and down again."""
    cfg = renamed(scale(size.nodes), LAB_PREFIX)
    start = time.monotonic()
    cluster = LocalCluster.up(cfg, offline=True)
    up_s = time.monotonic() - start
    progress(
        f"lab up with {size.nodes} kwok nodes: {up_s:.1f}s, kwok's nodes Ready {cluster.kwok_nodes_ready_s:.1f}s after their creation began"
    )
    try:
        lab = local_lab(cluster)
        start = time.monotonic()
        with da_scale.published(lab.api(), lab.slice_only_nodes, size.devices):
            publish_s = time.monotonic() - start
            progress(f"{2 * size.nodes} ResourceSlices ({size.devices} devices each) published in {publish_s:.1f}s")
            per_mode = {}
            for mode in da_scale.MODES:
                figures = per_mode[mode] = workload(lab, mode, size, max(300.0, size.pods * 0.5))
                progress(
                    f"{mode}: {figures['throughput_pods_per_s']:.1f} pods/s "
                    f"({figures['throughput_pods_per_s_per_cpu']:.1f} per CPU); create to bound "
                    f"p50 {figures['scheduling_s']['p50']:.2f}s p99 {figures['scheduling_s']['p99']:.2f}s; "
                    f"create to Running p99 {figures['create_to_running_s']['p99']:.2f}s"
                )
    finally:
        cluster.down()
    return {
        "size": str(size),
        "cpus": os.cpu_count(),
        "lab_up_s": up_s,
        "kwok_nodes_ready_s": cluster.kwok_nodes_ready_s,
        "slices_published_s": publish_s,
        "per_mode": per_mode,
        "upstream": {**UPSTREAM, "pods_per_s_per_cpu": [v / UPSTREAM["cpus"] for v in UPSTREAM["pods_per_s"]]},
    }


def note(measured: dict[str, Any]) -> str:
    """PF-08 beside upstream's figure, per CPU (the closing note of `dralab perf`)."""
    up = measured["upstream"]
    low, high = up["pods_per_s_per_cpu"]
    modes = "; ".join(
        f"{m} {f['throughput_pods_per_s']:.1f} pods/s = {f['throughput_pods_per_s_per_cpu']:.1f} per CPU, "
        f"scheduling p50 {f['scheduling_s']['p50']:.2f}s p99 {f['scheduling_s']['p99']:.2f}s"
        for m, f in measured["per_mode"].items()
    )
    return (
        f"PF-08 at {measured['size']} (nodes x devices x pods) on {measured['cpus']} CPUs: {modes}. Upstream "
        f"{up['benchmark']}: {up['pods_per_s'][0]:.0f}-{up['pods_per_s'][1]:.0f} pods/s on {up['cpus']} CPUs = "
        f"{low:.1f}-{high:.1f} per CPU. kwok made {measured['size'].split('x')[0]} nodes Ready in "
        f"{measured['kwok_nodes_ready_s']:.1f}s (lab up {measured['lab_up_s']:.1f}s)"
    )
