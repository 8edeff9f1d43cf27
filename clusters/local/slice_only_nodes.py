"""Slice-only nodes: Node objects with no kubelet, for scheduler-scale work (LAB-03).

The node lifecycle controller marks a node unreachable (and taints it) when its Lease is not
renewed, so a small agent, supervised like every lab component, renews their Leases as a
kubelet would.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from kubernetes import client, config

LEASE_SECONDS = 40
RENEW_EVERY = 10
SLICE_ONLY_LABEL = "dralab.dev/slice-only"


def register(api: client.ApiClient, names: list[str]) -> None:
    core = client.CoreV1Api(api)
    now = datetime.datetime.now(datetime.timezone.utc)
    for name in names:
        core.create_node({"metadata": {"name": name, "labels": {SLICE_ONLY_LABEL: "true", "kubernetes.io/hostname": name}}})
        capacity = {"cpu": "64", "memory": "256Gi", "pods": "110"}
        core.patch_node_status(name, {"status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "SliceOnlyNode",
                            "message": "dralab slice-only node: no kubelet", "lastHeartbeatTime": now.isoformat(),
                            "lastTransitionTime": now.isoformat()}],
        }})
    renew(api, names)


def renew(api: client.ApiClient, names: list[str]) -> None:
    coord = client.CoordinationV1Api(api)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for name in names:
        body = {"metadata": {"name": name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now}}
        try:
            coord.patch_namespaced_lease(name, "kube-node-lease", body)
        except client.ApiException as e:
            if e.status != 404:
                raise
            coord.create_namespaced_lease("kube-node-lease", body)


def agent_command(kubeconfig: Path, names: list[str]) -> list[str]:
    return [sys.executable, "-m", "clusters.local.slice_only_nodes", "--kubeconfig", str(kubeconfig),
            "--nodes", ",".join(names)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--nodes", required=True)
    args = parser.parse_args()
    api = config.new_client_from_config(config_file=args.kubeconfig)
    names = args.nodes.split(",")
    while True:
        try:
            renew(api, names)
        except Exception as e:  # the API server may be restarting: try again next round
            print(f"renewing leases failed: {e}", flush=True)
        time.sleep(RENEW_EVERY)


if __name__ == "__main__":
    main()
