"""PF-06: where NodePrepareResources spends its time, for any driver under test.

From the kubelet, for every driver: its whole PrepareResources operation and the gRPC call to the
driver within it. Its histograms start at 100 ms (DRADurationBuckets), so below that they give an
exact mean but only an upper bound for quantiles. From the driver, when it serves them: the
phases of each call in `dralab_driver_prepare_seconds{phase}` (the reference drivers do; see
drivers_under_test/dradriver/timing.go for the contract), scraped through the API server
from the pods of its namespace annotated `prometheus.io/scrape: "true"` (with `prometheus.io/port`
and optionally `prometheus.io/path`), the usual Prometheus convention. Vendor figures are reported,
not judged."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from clusters.local import metrics
from clusters.providers import Lab

DRIVER_PHASES = "dralab_driver_prepare_seconds"
PHASES = ("claim_reads", "cdi_write", "api_write", "checkpoint", "driver_other", "metadata_write")
KUBELET_OPERATION = ("dra_operations_duration_seconds", {"operation_name": "PrepareResources", "is_error": "false"})
KUBELET_GRPC = (
    "dra_grpc_operations_duration_seconds",
    {"method_name": "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", "grpc_status_code": "OK"},
)
KUBELET_SMALLEST_BUCKET_S = 0.1  # DRADurationBuckets = ExponentialBucketsRange(.1, 40, 15)

Snapshot = dict[str, metrics.Histogram]


def _kubelet(lab: Lab, driver: str) -> Snapshot:
    local = lab.local_cluster("reading the kubelets' metrics")
    operation, grpc = metrics.Histogram({}), metrics.Histogram({})
    for node in lab.nodes:
        text = metrics.scrape_kubelet(local, node.name)
        operation = operation + metrics.histogram(text, KUBELET_OPERATION[0], **KUBELET_OPERATION[1])
        grpc = grpc + metrics.histogram(text, KUBELET_GRPC[0], driver_name=driver, **KUBELET_GRPC[1])
    return {"kubelet_prepare_resources": operation, "kubelet_grpc_node_prepare_resources": grpc}


def _scraped_pods(api: client.ApiClient, namespace: str) -> list[tuple[str, str, str]]:
    """(pod, port, path) of the namespace's running pods that ask to be scraped."""
    out = []
    listed: list[Any] = client.CoreV1Api(api).list_namespaced_pod(namespace).items  # the client types metadata.name Optional
    for pod in listed:
        notes = pod.metadata.annotations or {}
        live = pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None
        if live and notes.get("prometheus.io/scrape") == "true" and notes.get("prometheus.io/port"):
            out.append((pod.metadata.name, notes["prometheus.io/port"], notes.get("prometheus.io/path", "/metrics")))
    return out


def _driver(api: client.ApiClient, namespace: str) -> Snapshot:
    """Each pod's phases apart ("driver_{phase}@{pod}"): a pod replaced between two snapshots
    must not count as observations lost."""
    core = client.CoreV1Api(api)
    out: Snapshot = {}
    for pod, port, path in _scraped_pods(api, namespace):
        text = core.connect_get_namespaced_pod_proxy_with_path(f"{pod}:{port}", namespace, path.lstrip("/"))
        for phase in ("total", *PHASES):
            out[f"driver_{phase}@{pod}"] = metrics.histogram(text, DRIVER_PHASES, phase=phase)
    return out


def snapshot(lab: Lab, driver: str, namespace: str) -> Snapshot:
    return {**_kubelet(lab, driver), **_driver(lab.api(), namespace)}


def between(before: Snapshot, after: Snapshot) -> Snapshot:
    """What was observed between two snapshots: what the series of the second gained since the first."""
    return {k: after[k] - before.get(k, metrics.Histogram({})) for k in after}


def together(a: Snapshot, b: Snapshot) -> Snapshot:
    """Two periods' observations as one (rounds on separate deployments of the driver)."""
    return {k: a.get(k, metrics.Histogram({})) + b.get(k, metrics.Histogram({})) for k in set(a) | set(b)}


def _stats(h: metrics.Histogram) -> dict[str, Any]:
    return {"count": h.count, "mean": h.mean, "p50": h.quantile(0.5), "p99": h.quantile(0.99)}


def split(observed: Snapshot) -> dict[str, Any]:
    """The kubelet's figures, the driver's phases over all its pods (if it reported any), and the
    metadata write's share of the driver's prepare time."""
    out: dict[str, Any] = {k: _stats(h) for k, h in observed.items() if not k.startswith("driver_")}
    phases: dict[str, metrics.Histogram] = {}
    for key, h in observed.items():
        if key.startswith("driver_"):
            phase = key.removeprefix("driver_").split("@")[0]
            phases[phase] = phases.get(phase, metrics.Histogram({})) + h
    total = phases.get("total")
    if total is None or not total.count:
        out["driver_phases"] = None  # the driver serves no dralab_driver_prepare_seconds
        return out
    out["driver_phases"] = {phase: _stats(h) for phase, h in phases.items()}
    out["metadata_write_share"] = phases["metadata_write"].sum / total.sum if total.sum else None
    return out
