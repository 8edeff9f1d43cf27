"""The Prometheus metrics a local lab's control-plane components serve, and quantiles of their
histograms between two scrapes (what the performance harnesses read, e.g. from the scheduler)."""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass

import urllib3
from prometheus_client.parser import text_string_to_metric_families

from clusters.local import configs
from clusters.local.cluster import LocalCluster

# The components serve /metrics on their secure ports; the lab's admin certificate is authorised.
PORTS = {"kube-scheduler": configs.SCHEDULER_PORT, "kube-controller-manager": configs.CONTROLLER_MANAGER_PORT}
KUBELET_PORT = 10250

Buckets = dict[float, float]  # upper bound ("le") -> cumulative count


@dataclass(frozen=True)
class Histogram:
    buckets: Buckets
    sum: float = 0.0
    count: float = 0.0

    def __sub__(self, before: "Histogram") -> "Histogram":
        """What was observed between two scrapes."""
        return Histogram(
            {le: n - before.buckets.get(le, 0.0) for le, n in self.buckets.items()}, self.sum - before.sum, self.count - before.count
        )

    def __add__(self, other: "Histogram") -> "Histogram":
        """Two series together (e.g. the same histogram from every node)."""
        bounds = set(self.buckets) | set(other.buckets)
        return Histogram(
            {le: self.buckets.get(le, 0.0) + other.buckets.get(le, 0.0) for le in bounds}, self.sum + other.sum, self.count + other.count
        )

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """Like PromQL's histogram_quantile: linear within the bucket the q-th observation falls
        in; the highest finite bound if it falls in +Inf; None without observations."""
        bounds = sorted(self.buckets)
        total = self.buckets[bounds[-1]] if bounds else 0.0
        if total <= 0:
            return None
        rank, lower, below = q * total, 0.0, 0.0
        for le in bounds:
            n = self.buckets[le]
            if n >= rank:
                if math.isinf(le):
                    return lower
                return lower + (le - lower) * (rank - below) / (n - below) if n > below else le
            lower, below = le, n
        return lower


def scrape(cluster: LocalCluster, component: str) -> str:
    return _get(cluster, f"https://{cluster.cfg.host_ip}:{PORTS[component]}/metrics")


def scrape_kubelet(cluster: LocalCluster, node: str) -> str:
    """A kubelet's /metrics, on its node's address (the lab's admin is authorised by its webhook)."""
    return _get(cluster, f"https://{cluster.node(node).ip}:{KUBELET_PORT}/metrics")


def _get(cluster: LocalCluster, url: str) -> str:
    pki = cluster.lab_dir / "pki"
    # The components serve a self-signed certificate of their own: not verified, on the lab's bridge.
    http = urllib3.PoolManager(cert_file=str(pki / "admin.crt"), key_file=str(pki / "admin.key"), cert_reqs="CERT_NONE")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        answer = http.request("GET", url, timeout=10)
    if answer.status != 200:
        raise RuntimeError(f"GET {url}: HTTP {answer.status}: {answer.data[:200]!r}")
    return answer.data.decode()


def histogram(text: str, name: str, **labels: str) -> Histogram:
    """The histogram's buckets, sum and count, added up over the series whose labels include `labels`."""
    buckets: Buckets = defaultdict(float)
    total = {"_sum": 0.0, "_count": 0.0}
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if not all(sample.labels.get(k) == v for k, v in labels.items()):
                continue
            suffix = sample.name[len(name) :]
            if suffix == "_bucket":
                buckets[float(sample.labels["le"])] += sample.value
            elif suffix in total:
                total[suffix] += sample.value
    return Histogram(dict(buckets), total["_sum"], total["_count"])
