"""kwok nodes (LAB-09): Node objects with no kubelet, run by kwok's controller, for
scheduler-scale work; the lab's slice-only nodes.

dralab creates the Node objects, labelled so that kwok manages them. kwok, a supervised lab
component like the others, plays its default stages at the pinned version (`kwok-stages`): it
makes the nodes Ready, renews their Leases as a kubelet would (else the node lifecycle
controller taints them unreachable), brings pods bound to them to Running and removes them
once deleted. ResourceSlices for their devices are published by whoever needs devices there
(the harnesses), as a driver would.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from basics.errors import LabBroken
from clusters.config import ClusterConfig
from clusters.local.supervisor import Component
from clusters.local.waits import wait_for
from clusters.provision import Toolchain

SLICE_ONLY_LABEL = "dralab.dev/slice-only"
# As a kubelet's lease; kwok renews it every quarter of that, inside the node lifecycle
# controller's grace period (50 s).
LEASE_SECONDS = 40
CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "110"}
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
CREATORS = 8  # parallel API writers: a thousand nodes in seconds


def node(name: str) -> dict[str, Any]:
    """A kwok node as kwokctl's `scale node` makes one: kwok's annotation, so tools that know kwok
    recognise it, and its capacity; kwok's node-initialize stage adds conditions and addresses."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {SLICE_ONLY_LABEL: "true", "kubernetes.io/hostname": name},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"capacity": CAPACITY, "allocatable": CAPACITY},
    }


def create_nodes(api, names: Sequence[str]) -> None:
    """Create the Node objects (a node's status is taken on create); kwok makes them Ready."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    with ThreadPoolExecutor(CREATORS) as pool:
        list(pool.map(lambda name: core.create_node(node(name)), names))  # type: ignore[arg-type]  # validate_call builds the V1Node of the dict


def bring_up(api, names: Sequence[str], components: Sequence[Component]) -> float:
    """Create the nodes and wait until kwok has made them all Ready; the seconds that took."""
    start = time.monotonic()
    create_nodes(api, names)
    wait_ready(api, names, 60 + len(names) / 20, components)
    return time.monotonic() - start


def pod_cidr(cfg: ClusterConfig) -> str:
    """Where kwok takes its pods' IPs: nothing routes them, but they are the lab's own (apart from
    its kubelet nodes' 10.<100+slot>.0.0/16 and other labs'), 65536 of them for a scale run's pods."""
    return f"10.{200 + cfg.slot}.0.0/16"


def write_stages(tools: Toolchain, lab_dir: Path) -> Path:
    """kwok's default stages at the pinned version, as kwok-stages prints them, into the lab."""
    path = lab_dir / "kwok" / "stages.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(subprocess.run([str(tools.kwok_stages)], capture_output=True, text=True, check=True).stdout)
    return path


def command(tools: Toolchain, cfg: ClusterConfig, kubeconfig: Path, stages: Path) -> list[str]:
    return [
        str(tools.kwok),
        f"--kubeconfig={kubeconfig}",
        f"--config={stages}",
        f"--manage-nodes-with-label-selector={SLICE_ONLY_LABEL}",
        f"--node-lease-duration-seconds={LEASE_SECONDS}",
        f"--node-ip={cfg.host_ip}",
        f"--cidr={pod_cidr(cfg)}",
    ]


def environment(lab_dir: Path) -> dict[str, str]:
    """kwok's work dir in the lab, so no kwok configuration of the host's (~/.kwok) is read."""
    return {"KWOK_WORKDIR": str(lab_dir / "kwok")}


def _ready(node: dict[str, Any]) -> bool:
    """Ready, and the node lifecycle controller has lifted the taints it put on the node while it
    was not (until then the scheduler places nothing there)."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions", [])) and not [
        t for t in node["spec"].get("taints", []) if t["key"] in NOT_READY_TAINTS
    ]


def wait_ready(api, names: Sequence[str], timeout: float, components: Sequence[Component]) -> None:
    """Until every node of `names` is Ready; a dead component ends the wait at once with its log,
    a timeout names the nodes not Ready."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    missing = set(names)

    def all_ready() -> bool:
        # Raw JSON: the client's models take seconds to build for thousands of nodes.
        listed = json.loads(core.list_node(label_selector=SLICE_ONLY_LABEL, _preload_content=False).data)  # type: ignore[attr-defined]  # unloaded: the urllib3 response
        missing.difference_update(n["metadata"]["name"] for n in listed["items"] if _ready(n))
        return not missing

    try:
        wait_for(f"kwok to make {len(missing)} nodes Ready", all_ready, timeout, components)
    except LabBroken as e:
        raise LabBroken(f"{len(missing)} kwok nodes not Ready, e.g. {', '.join(sorted(missing)[:5])}: {e}") from None
