"""LAB-06: a kind cluster from a lab config, on dralab's offline node image: the nodes Ready (a
slice-only one, kwok's, too), containerd's CDI and NRI on, a node's files and kubelet reached
through its handle, pods on two nodes reaching each other over the pod network, node-1's
emulated hardware (tree and netdevs) inside its container where a local lab's node has it, and
after `down` nothing of the run left: in the engine (containers, networks), of the hardware on the
host (dralab residue), of a dockerd dralab started (its iptables chains, its
bridge)."""

from __future__ import annotations

import subprocess
import time

import pytest
from kubernetes import client

from clusters import plugin_calls, residue, versions
from clusters.config import ClusterConfig
from clusters.kind import engine
from clusters.kind.cluster import KIND_CLUSTER_LABEL, KIND_NETWORK, KindCluster
from clusters.local.kwok import SLICE_ONLY_LABEL
from clusters.provision import provision
from fake_hardware.lab import NODE_SYSFS_ROOT, HardwareLab
from suites.framework import pods

pytestmark = pytest.mark.e2e
CFG = ClusterConfig(
    name="kind-e2e",
    nodes=2,
    slice_only_nodes=1,
    feature_gates={"DRADerivedAttributes": True},
    runtime_config={"resource.k8s.io/v1beta2": True},
    hardware={"node-1": "l40-e810"},
)


def _pod(name: str, node: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_name=node,
            restart_policy="Never",
            termination_grace_period_seconds=0,
            containers=[
                client.V1Container(name="c", image=versions.WORKLOAD_IMAGE, image_pull_policy="Never", command=pods.until_stopped())
            ],
        ),
    )


def _running(core: client.CoreV1Api, name: str, timeout: float = 120) -> client.V1Pod:
    deadline = time.monotonic() + timeout
    while (pod := core.read_namespaced_pod(name, "default")).status.phase != "Running":
        assert time.monotonic() < deadline, f"pod {name} not Running after {timeout}s: {pod.status}"
        time.sleep(1)
    return pod


def _engine_leftovers() -> list[str]:
    docker = engine.docker()
    containers = subprocess.run(
        [docker, "ps", "-aq", "--filter", f"label={KIND_CLUSTER_LABEL}"], capture_output=True, text=True, check=True
    ).stdout.split()
    networks = subprocess.run(
        [docker, "network", "ls", "-q", "--filter", f"name=^{KIND_NETWORK}$"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [f"container {c}" for c in containers] + [f"network {n}" for n in networks]


@pytest.mark.requirement("LAB-06")
@pytest.mark.timeout(1200)  # cold, it builds kind, kubeadm, CoreDNS and the node image first (about 3 minutes)
def test_kind_cluster_comes_up_with_cdi_nri_hardware_and_pod_network_and_goes_without_residue() -> None:
    tools = provision()
    cluster = KindCluster(CFG, tools)
    engine_was_running = engine.engine_running()
    netfilter_was_there = engine.host_has_docker_netfilter()
    cluster.up(images=(tools.drivers_image,))
    try:
        print(f"kind bring-up timings (s, cumulative): {cluster.timings}")
        api = cluster.api()
        core = client.CoreV1Api(api)
        nodes = core.list_node().items
        assert len(nodes) == 4 and all(c.status == "True" for n in nodes for c in n.status.conditions if c.type == "Ready")
        slice_only = [n.metadata.name for n in nodes if SLICE_ONLY_LABEL in n.metadata.labels]
        assert slice_only == CFG.slice_only_node_names(), "kwok's slice-only nodes are missing"
        workers = sorted(
            n.metadata.name
            for n in nodes
            if "node-role.kubernetes.io/control-plane" not in n.metadata.labels and n.metadata.name not in slice_only
        )
        assert workers == CFG.node_names(), "kind's workers are registered as the lab's nodes"
        container = next(n.spec.provider_id.rsplit("/", 1)[-1] for n in nodes if n.metadata.name == workers[0])
        dump = subprocess.run(
            [engine.docker(), "exec", container, "containerd", "config", "dump"], capture_output=True, text=True, check=True
        ).stdout
        assert "enable_cdi = true" in dump, "containerd's CDI is off in the kind node"
        nri = dump[dump.index("[plugins.'io.containerd.nri.v1.nri']") :]
        assert "disable = false" in nri.split("[plugins.", 2)[1], "containerd's NRI is off in the kind node"
        plan = HardwareLab(cluster.cfg.hardware_site()).node("node-1").plan
        tree = subprocess.run(
            [engine.docker(), "exec", container, "ls", f"{NODE_SYSFS_ROOT}/bus/pci/devices"], capture_output=True, text=True, check=True
        ).stdout.split()
        assert sorted(tree) == sorted(fn.bdf for fn in plan.at_boot()), "node-1's tree is not where its drivers look"
        links = subprocess.run([engine.docker(), "exec", container, "ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
        missing = [fn.netdev for fn in plan.at_boot() if fn.netdev and f" {fn.netdev}@" not in links]
        assert not missing, f"netdevs of node-1's profile missing in its container's netns: {missing}"
        # HW-08 inside the worker: the tree is served there with the kernel's write semantics.
        numvfs = f"{NODE_SYSFS_ROOT}/bus/pci/devices/{plan.by_name('nic0').bdf}/sriov_numvfs"
        writes = subprocess.run(
            [engine.docker(), "exec", container, "bash", "-c", f"echo 0 > {numvfs}; echo 2 > {numvfs}; cat {numvfs}; echo 99 > {numvfs}"],
            capture_output=True,
            text=True,
        )
        assert writes.stdout == "2\n" and writes.returncode != 0 and "out of range" in writes.stderr, writes
        # The node handle the suites use: its files from the host (/var/run is a link to /run in the
        # node, not the host's), its kubelet restarted.
        handle = cluster.nodes()[0]
        probe = handle.host_path("/var/run/cdi/dralab-e2e-probe.json")
        probe.parent.mkdir(exist_ok=True)
        probe.write_text("{}")
        seen = subprocess.run([engine.docker(), "exec", container, "cat", "/run/cdi/dralab-e2e-probe.json"], capture_output=True, text=True)
        probe.unlink()
        assert seen.stdout == "{}", f"host_path wrote {probe}, which the node does not see: {seen.stderr}"
        handle.restart_kubelet()
        assert cluster.dead_parts() == [], "the plugin recorder runs in every worker, beside the kubelet it outlives"
        faults = (handle.log_dir / plugin_calls.FAULT_LOG).read_text()
        assert '"fault": "kubelet restarted"' in faults, f"the restart is not in the node's fault log: {faults}"
        for i, node in enumerate(workers):
            core.create_namespaced_pod("default", _pod(f"p{i}", node))
        peer_ip = _running(core, "p1").status.pod_ip
        _running(core, "p0")
        ping = subprocess.run(
            [str(tools.kubectl), "--kubeconfig", str(cluster.kubeconfig), "exec", "p0", "--", "ping", "-c", "1", "-W", "5", peer_ip],
            capture_output=True,
            text=True,
        )
        assert ping.returncode == 0, f"pod p0 on {workers[0]} cannot reach p1 ({peer_ip}) on {workers[1]}: {ping.stdout}{ping.stderr}"
    finally:
        cluster.down(stop_engine=False)
        left = _engine_leftovers()
        if not engine_was_running:
            engine.stop()
    assert left == [], f"left in the Docker engine after down: {left}"
    assert engine_was_running or netfilter_was_there or not engine.host_has_docker_netfilter(), (
        "the dockerd dralab started and stopped left its iptables chains or docker0 on the host"
    )
    assert [str(r) for r in residue.find(CFG.name)] == [], "the emulated hardware left residue"
    assert not engine_was_running or engine.engine_running(), "an engine dralab did not start must be left running"
