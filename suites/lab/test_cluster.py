"""LAB checks on the cluster under test: nodes, pods, networking, identities, CDI, NRI, slice-only nodes."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from kubernetes import client

from clusters import versions
from basics.errors import HarnessError
from clusters.local.configs import NRI_SOCKET
from clusters.providers import Capability, Lab, NodeHandle
from clusters.provision import provision
from suites.framework import pods, slices, spec_drift
from suites.framework.claims import ClaimBuilder
from suites.framework.pods import PodBuilder
from suites.framework.spec_drift import Drift
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e


@pytest.mark.requirement("LAB-02")
def test_every_kubelet_node_is_ready_at_the_pinned_version(lab: Lab, api) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    for handle in lab.nodes:
        node = nodes[handle.name]
        ready = {c.type: c.status for c in node.status.conditions}["Ready"]
        assert ready == "True", f"{handle.name} Ready={ready}: {node.status.conditions}"
        if Capability.HOST_PROCESSES in lab.capabilities:  # the components dralab built and runs
            assert node.status.node_info.kubelet_version == lab.local_cluster("its versions").cfg.kubernetes_version
            assert node.status.node_info.container_runtime_version == f"containerd://{versions.CONTAINERD.lstrip('v')}"
    assert len(lab.nodes) >= 2, f"LAB-03 needs at least 2 kubelet nodes, the cluster has {[n.name for n in lab.nodes]}"


@pytest.mark.requirement("LAB-02")
def test_a_pod_on_each_node_runs_the_workload_image_and_prints_its_node(lab: Lab, api, namespace: str) -> None:
    for node in lab.nodes:
        pod = (
            PodBuilder(f"hello-{node.name}")
            .on_node(node.name)
            .with_env_from_field("NODE_NAME", "spec.nodeName")
            .running(*pods.until_stopped("echo running on $NODE_NAME"))
        )
        pods.run(api, namespace, pod)
    for node in lab.nodes:
        assert pods.logs(api, namespace, f"hello-{node.name}").strip() == f"running on {node.name}"


@pytest.mark.requirement("LAB-03")
def test_pods_on_different_nodes_reach_each_other(lab: Lab, api, namespace: str) -> None:
    first, second = lab.nodes[0].name, lab.nodes[1].name
    token = uuid.uuid4().hex
    server = pods.run(
        api,
        namespace,
        PodBuilder("server")
        .on_node(first)
        .running("sh", "-c", f"mkdir -p /tmp/www && echo {token} > /tmp/www/token && httpd -f -p 8080 -h /tmp/www"),
    )
    pods.run(api, namespace, PodBuilder("client").on_node(second))
    address = f"{server.status.pod_ip}:8080"

    def fetch() -> str:
        # busybox's wget is unusable in a static glibc build (it crashes resolving); nc is not.
        r = pods.exec_in(
            lab, namespace, "client", "sh", "-c", f"printf 'GET /token HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {server.status.pod_ip} 8080"
        )
        if r.returncode != 0:
            raise RuntimeError(f"exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    response = wait_for(f"client on {second} to fetch /token from the server on {first} at {address}", fetch, timeout=30)
    assert response.rstrip().endswith(token), response


@pytest.mark.requirement("LAB-02")
def test_in_cluster_client_reaches_api_through_kubernetes_service_with_node_bound_token(lab: Lab, api, namespace: str) -> None:
    node = lab.nodes[0].name
    pods.create(api, namespace, PodBuilder("whoami").on_node(node).running("incluster-whoami").once())
    pod = pods.wait_phase(api, namespace, "whoami", ("Succeeded", "Failed"))
    output = pods.logs(api, namespace, "whoami")
    assert pod.status.phase == "Succeeded", f"incluster-whoami failed:\n{output}"
    report = json.loads(output)
    service = client.CoreV1Api(api).read_namespaced_service("kubernetes", "default")
    assert report["server"].startswith(f"https://{service.spec.cluster_ip}:443/"), report["server"]
    user = report["review"]["status"]["userInfo"]
    assert user["username"] == f"system:serviceaccount:{namespace}:default"
    assert user["extra"]["authentication.kubernetes.io/node-name"] == [node]
    assert report["tokenClaims"]["kubernetes.io"]["node"]["name"] == node


class NRIProbe:
    """The lab's NRI test plugin connected to one node's NRI socket; its events, as dicts."""

    CDI_DEVICE_ANNOTATION = "nri-probe.dralab.dev/cdi-device"

    def __init__(self, node: NodeHandle, events: Path) -> None:
        self.node, self.events = node, events
        self.socket = node.host_path(NRI_SOCKET)  # containerd's default, on local and kind nodes
        probe = provision(offline=True).drivers_under_test / "nri-probe"
        self.process = subprocess.Popen(
            [str(probe), "--socket", str(self.socket), "--events", str(events)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def seen(self) -> list[dict[str, str]]:
        return [json.loads(line) for line in self.events.read_text().splitlines()] if self.events.exists() else []

    def wait_for_event(self, event: str, namespace: str, pod: str) -> None:
        wait_for(
            f"nri-probe on {self.socket} to record {event} of {namespace}/{pod}",
            lambda: [e for e in self.seen() if (e["event"], e["namespace"], e["name"]) == (event, namespace, pod)],
            30,
        )

    def stop(self) -> str:
        self.process.kill()
        return self.process.communicate()[0]


@pytest.fixture
def nri_probe(host_access: Lab, tmp_path: Path) -> Iterator[NRIProbe]:
    probe = NRIProbe(host_access.nodes[-1], tmp_path / "nri-events.jsonl")
    # The plugin is registered once the runtime has sent it Synchronize.
    time.sleep(1)
    if probe.process.poll() is not None:
        raise HarnessError(f"nri-probe exited: {probe.stop()}")
    yield probe
    probe.stop()


@pytest.mark.requirement("LAB-02")
def test_nri_plugin_on_node_socket_observes_run_pod_sandbox(api, namespace: str, nri_probe: NRIProbe) -> None:
    pods.run(api, namespace, PodBuilder("nri-observed").on_node(nri_probe.node.name))
    nri_probe.wait_for_event("RunPodSandbox", namespace, "nri-observed")


@pytest.mark.requirement("LAB-02")
def test_cdi_spec_in_node_cdi_dir_is_applied_to_a_container_that_asks_for_it(api, namespace: str, nri_probe: NRIProbe) -> None:
    # kubelet passes no pod annotation to the runtime, so the container asks for the CDI device
    # through the NRI probe, which containerd resolves against its configured CDI spec dirs.
    node = nri_probe.node
    value = uuid.uuid4().hex
    spec = {
        "cdiVersion": "0.6.0",
        "kind": "lab.dralab.dev/probe",
        "devices": [{"name": value, "containerEdits": {"env": [f"DRALAB_CDI_PROBE={value}"]}}],
    }
    spec_file = node.host_path("/var/run/cdi") / f"lab-probe-{value}.json"
    spec_file.write_text(json.dumps(spec))
    try:
        pod = (
            PodBuilder("cdi")
            .on_node(node.name)
            .running(*pods.until_stopped("echo $DRALAB_CDI_PROBE"))
            .with_annotation(NRIProbe.CDI_DEVICE_ANNOTATION, f"lab.dralab.dev/probe={value}")
        )
        pods.run(api, namespace, pod)
        nri_probe.wait_for_event("CreateContainer", namespace, "cdi")
        assert pods.logs(api, namespace, "cdi").strip() == value
    finally:
        spec_file.unlink()


@pytest.mark.requirement("LAB-03")
def test_slice_only_node_is_listed_ready_and_schedulable(lab: Lab, api, namespace: str) -> None:
    if not lab.slice_only_nodes:
        pytest.skip("the cluster has no slice-only nodes")
    name = lab.slice_only_nodes[0]
    node = client.CoreV1Api(api).read_node(name)
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"
    assert not [t for t in node.spec.taints or [] if t.effect in ("NoSchedule", "NoExecute")], node.spec.taints
    pods.create(api, namespace, PodBuilder("on-slice-node").on_node(name))

    def scheduled() -> str | None:
        return client.CoreV1Api(api).read_namespaced_pod("on-slice-node", namespace).spec.node_name

    assert wait_for(f"the scheduler to bind a pod to slice-only node {name}", scheduled, 30) == name


CONFIG_DRIVER = "cfg.dralab.dev"


@pytest.mark.requirement("LAB-02")
def test_allocation_config_names_its_requests_as_the_upstream_allocator_does(lab: Lab, api, namespace: str, request) -> None:
    """The lab's scheduler is upstream's: v1.37's allocation result clears a configuration's requests
    when it applies to every request of the claim ("empty means all"), which a driver must read as
    applying to all; v1.36.3's names them. An SR-IOV driver's claim config `requests: [vf]` came back
    with no requests: upstream's doing (k8s.io/dynamic-resource-allocation, structured allocator)."""
    node = (lab.slice_only_nodes or [n.name for n in lab.nodes])[0]

    def parameters(tag: str) -> dict[str, str]:
        return {"kind": "Config", "tag": tag}

    klass = f"cfg-{uuid.uuid4().hex[:8]}"
    resource = client.ResourceV1Api(api)
    resource.create_device_class(
        {  # type: ignore[arg-type]  # a dict: validate_call builds the model
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": klass},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{CONFIG_DRIVER}"'}}],
                "config": [{"opaque": {"driver": CONFIG_DRIVER, "parameters": parameters("class")}}],
            },
        }
    )
    claim = ClaimBuilder("configs").request("a", klass).request("b", klass)
    claim.opaque(CONFIG_DRIVER, parameters("a"), requests=("a",))
    claim.opaque(CONFIG_DRIVER, parameters("a-and-b"), requests=("a", "b"))
    try:
        with slices.publishing(api, [slices.resource_slice(CONFIG_DRIVER, node, [{"name": "d0"}, {"name": "d1"}])]):
            allocated = pods.allocate_through(api, namespace, claim, node, pod="holder")
    finally:
        resource.delete_device_class(klass)
    got = {c["opaque"]["parameters"]["tag"]: c.get("requests") or [] for c in allocated["status"]["allocation"]["devices"]["config"]}
    # Read as a driver must: empty means every request of the claim.
    applies_to = {tag: sorted(requests or ["a", "b"]) for tag, requests in got.items()}
    assert applies_to == {"class": ["a", "b"], "a": ["a"], "a-and-b": ["a", "b"]}, f"allocation.devices.config requests by config: {got}"
    if got["a-and-b"] or got["class"]:
        return  # as v1.36.3 does: no drift
    spec_drift.record(
        request,
        Drift(
            "KEP-4381",
            "allocation config requests",
            "the allocation result carries each claim configuration with the requests it names, and a class's "
            "configuration with the requests of that class",
            f"a configuration that applies to every request of the claim has its requests cleared (empty means all): "
            f"claim config naming [a, b] -> {got['a-and-b']}, the class's config (class of a and b) -> {got['class']}; "
            f"one naming [a] keeps {got['a']} (kube-scheduler {client.VersionApi(api).get_code().git_version})",
        ),
    )
