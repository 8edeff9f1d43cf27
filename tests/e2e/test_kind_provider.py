"""LAB-06: a kind cluster from a lab config, where a Docker engine and kind exist (skipped with
the reason elsewhere; this machine has no Docker engine)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from kubernetes import client, config

from clusters.config import ClusterConfig
from clusters.kind import KindCluster

pytestmark = pytest.mark.e2e


def _missing() -> str | None:
    tools = [t for t in ("docker", "kind") if not shutil.which(t)]
    if tools:
        return f"needs {' and '.join(tools)} on PATH"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "needs a running Docker engine (`docker info` failed)"
    return None


@pytest.mark.requirement("LAB-06")
def test_kind_cluster_with_gates_comes_up_and_goes(tmp_path) -> None:
    reason = _missing()
    if reason:
        pytest.skip(f"the kind provider {reason}")
    from clusters.provision import provision

    cluster = KindCluster(ClusterConfig(name="kind-e2e", nodes=1, feature_gates={"DRADerivedAttributes": True}), tmp_path)
    cluster.up(images=[provision().drivers_image.archive])
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        assert len(nodes) == 2 and all(c.status == "True" for n in nodes for c in n.status.conditions if c.type == "Ready")
    finally:
        cluster.down()
    assert "dralab-kind-e2e" not in subprocess.run(["kind", "get", "clusters"], capture_output=True, text=True).stdout
