"""A node reboot (MD-18's "node" case): which of the node's mounts a reboot loses, and how the
check reads the runtime's refusal to start a container whose CDI spec is gone (kubernetes#141433)."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from clusters.local.node import volatile_mounts
from suites.device_metadata import restart_comparison
from suites.framework import restarts
from suites.framework.waits import DriverTimedOut

# /proc/self/mountinfo inside a node: the host's root, the node's private dirs bound over the
# host's, and what its processes mounted below them.
MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:1 /srv/dralab/labs/l/nodes/node-1/var-lib /var/lib rw shared:40 - ext4 /dev/sda1 rw
31 22 8:1 /srv/dralab/labs/l/nodes/node-1/run /run rw shared:41 - ext4 /dev/sda1 rw
32 22 8:1 /srv/dralab/labs/l/nodes/node-1/etc-cdi /etc/cdi rw shared:42 - ext4 /dev/sda1 rw
33 31 0:4 net:[4026532] /run/netns/cni-1f2e rw shared:43 - nsfs nsfs rw
34 31 0:50 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw shared:44 - overlay overlay rw
35 31 0:51 / /run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm rw shared:45 - tmpfs shm rw
36 30 0:52 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access-x rw shared:46 - tmpfs tmpfs rw
37 30 0:53 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with\\040space rw shared:47 - tmpfs tmpfs rw
38 22 0:54 / /var/library rw shared:48 - tmpfs tmpfs rw
39 31 0:4 net:[4026533] /run/netns rw shared:49 - nsfs nsfs rw
40 30 0:55 / /var/lib/dralab-hardware/sys rw shared:50 - fuse.dralab-sysfs dralab-sysfs rw
"""


def test_a_reboot_loses_every_mount_below_the_private_dirs_but_not_the_dirs_themselves() -> None:
    """Nor the emulated sysfs, the machine's: a driver restarted after the reboot needs it."""
    mounts = volatile_mounts(MOUNTINFO)
    assert set(mounts) == {
        "/run/netns/cni-1f2e",
        "/run/netns",
        "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
        "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm",
        "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access-x",
        "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with space",  # mountinfo's octal escape read
    }
    # Deepest first: a mount is unmounted before the one it sits in.
    assert mounts.index("/run/netns/cni-1f2e") < mounts.index("/run/netns")
    assert [m.count("/") for m in mounts] == sorted((m.count("/") for m in mounts), reverse=True)


def test_a_node_without_mounts_of_its_own_loses_none() -> None:
    assert volatile_mounts("\n".join(MOUNTINFO.splitlines()[:4])) == []


CDI_ERROR = "failed to create containerd container: CDI device injection failed: unresolvable CDI devices gpu.dralab.dev/gpu=3f2a-uid-gpu-1"


def _waiting(message: str) -> client.V1ContainerStatus:
    state = client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason="CreateContainerError", message=message))
    return client.V1ContainerStatus(name="main", image="i", image_id="", ready=False, restart_count=1, state=state)


def _event(kind: str, message: str) -> client.CoreV1Event:
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(), involved_object=client.V1ObjectReference(), type=kind, reason="Failed", message=message
    )


def test_the_runtimes_cdi_refusal_is_read_from_the_waiting_container_first() -> None:
    assert restarts.unresolved_cdi(_waiting(CDI_ERROR), []) == CDI_ERROR
    assert (
        restarts.unresolved_cdi(_waiting("back-off 10s restarting"), [_event("Warning", f"Error: {CDI_ERROR}"), _event("Normal", "Pulled")])
        == f"Error: {CDI_ERROR}"
    )


def test_other_failures_are_not_read_as_a_missing_cdi_spec() -> None:
    assert (
        restarts.unresolved_cdi(_waiting("failed to create containerd container: no space left on device"), [_event("Normal", CDI_ERROR)])
        is None
    )
    assert restarts.unresolved_cdi(None, []) is None


STREAM = "\n".join(
    json.dumps(
        {
            "apiVersion": v,
            "kind": "DeviceMetadata",
            "metadata": {"name": "c", "namespace": "n", "uid": "u", "generation": g},
            "requests": [{"name": "dev", "devices": []}],
        }
    )
    for v, g in (("metadata.resource.k8s.io/v1beta1", 3), ("metadata.resource.k8s.io/v1alpha1", 3))
)


def test_metadata_files_compare_apart_from_their_generation_and_cdi_specs_as_json() -> None:
    comparable = restart_comparison.comparable
    assert comparable("on the node", STREAM) == comparable("on the node", STREAM.replace('"generation": 3', '"generation": 1'))
    assert comparable("on the node", STREAM) != comparable("on the node", STREAM.replace('"uid": "u"', '"uid": "v"'))
    assert restart_comparison.comparable("CDI spec", '{"kind": "k", "cdiVersion": "0.3.0"}') == restart_comparison.comparable(
        "CDI spec", '{"cdiVersion":"0.3.0","kind":"k"}'
    )
    assert restart_comparison.comparable("in the container", None) is None


class _Node:
    name = "node-1"
    kubelet_restarts = 0

    def restart_kubelet(self) -> None:
        self.kubelet_restarts += 1

    def restart_containerd(self) -> None:
        raise AssertionError("containerd was not to restart")

    def kill_pod_sandbox(self, pod_uid: str) -> None:
        pass


def test_a_restart_whose_container_stays_refused_ends_the_wait_with_the_refusal(monkeypatch) -> None:
    # The runtime refuses the container for its CDI devices on every retry: the wait ends once the
    # refusal has lasted REFUSAL_GRACE, not after the whole timeout, and says why.
    node = _Node()
    pod = client.V1Pod(metadata=client.V1ObjectMeta(uid="u1"), spec=client.V1PodSpec(node_name="node-1", containers=[]))
    monkeypatch.setattr(restarts.client, "CoreV1Api", lambda api: type("Core", (), {"read_namespaced_pod": lambda self, name, ns: pod})())
    monkeypatch.setattr(restarts, "container_status", lambda *a: _waiting(CDI_ERROR))
    monkeypatch.setattr(restarts, "refused_start", lambda *a: (CDI_ERROR, None))
    monkeypatch.setattr(restarts, "REFUSAL_GRACE", 0.2)
    host = type("Host", (), {"node": lambda self, name: node})()
    started = time.monotonic()
    with pytest.raises(
        DriverTimedOut,
        match=r"still refused 0.2s after its first refusal following the kubelet restart: "
        r".*unresolvable CDI devices",
    ):
        restarts.prepare_again(host, None, "kubelet", "ns", "restart")  # type: ignore[arg-type]  # a stand-in host and no API: the kubelet restart is faked
    assert node.kubelet_restarts == 1 and time.monotonic() - started < restarts.SANDBOX_TIMEOUT / 10


def test_what_a_lab_lets_dralab_restart_depends_on_who_runs_its_nodes() -> None:
    from pathlib import Path

    from clusters.config import ClusterConfig
    from clusters.provider_registry import provider
    from clusters.providers import Lab

    def lab(name: str, cfg: ClusterConfig | None, local: object = None) -> Lab:
        return Lab(provider(name), Path("kubeconfig"), Path("kubectl"), Path("logs"), [], cfg=cfg, local=local)  # type: ignore[arg-type]  # local: any stand-in, the check reads only whether there is one

    assert lab("kubeconfig", None).restartable == ()
    assert lab("kind", ClusterConfig()).restartable == ("kubelet", "containerd"), "a kind node is not rebooted"
    assert lab("local", ClusterConfig(), local=object()).restartable == tuple(restarts.RESTARTS)
