"""LAB-08: a node's mounts propagate as on a real (systemd) node. A pod's HostToContainer hostPath
sees what the node mounts after the pod started (a network namespace `ip netns add` pins under
/run/netns), a privileged pod's Bidirectional mounts reach the node, and neither reaches the host
or another node. The lab is this module's own, so its teardown and residue are checked too (LAB-05)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from clusters.config import ClusterConfig, labs_root
from clusters.lab_configurations import PREFIX, renamed
from clusters.local.cluster import LocalCluster, remove
from clusters.local.node import LocalNode
from clusters.local.provider import local_lab
from clusters.providers import Lab
from suites.framework import namespaces, pods
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e

# Two nodes (one to look for leaks on) and a non-default kubelet root dir (LAB-04): it must be shared too.
MOUNTS_LAB = ClusterConfig(name=f"{PREFIX}-mounts", nodes=2, kubelet_root_dir="/var/lib/kubelet-mounts")


@pytest.fixture(scope="module")
def mounts_lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The module's lab; its teardown must leave nothing behind (LAB-05)."""
    cluster = LocalCluster.up(renamed(MOUNTS_LAB, request.config.getoption("--lab-prefix")))
    try:
        yield local_lab(cluster)
    finally:
        left = remove(cluster.cfg)
        assert not left, "teardown left behind:\n" + "\n".join(left)


@pytest.fixture
def namespace(mounts_lab: Lab) -> Iterator[str]:
    """In this module's lab: the plugin's namespace fixture would start the session lab."""
    with namespaces.fresh(mounts_lab.api(), "lab08") as name:
        yield name


def mounts(mountinfo: str) -> list[tuple[str, str, list[str]]]:
    """(mount point, filesystem type, optional fields such as shared:N) per line of a mountinfo."""
    found: list[tuple[str, str, list[str]]] = []
    for line in mountinfo.splitlines():
        before, after = line.split(" - ", 1)
        fields = before.split()
        found.append((fields[4], after.split()[0], fields[6:]))
    return found


def fstype_at(mountinfo: str, point: str) -> str | None:
    """The filesystem on top at `point` (the last mount there), or None if nothing is mounted there."""
    types = [fstype for p, fstype, _ in mounts(mountinfo) if p == point]
    return types[-1] if types else None


def peer_groups(mountinfo: str) -> set[str]:
    """Every peer group a mount namespace takes part in, as shared:N or master:N."""
    return {f.split(":")[1] for _, _, optional in mounts(mountinfo) for f in optional if ":" in f}


def node_mountinfo(node: LocalNode) -> str:
    return node.run("cat", "/proc/self/mountinfo").stdout


def pod_mountinfo(lab: Lab, namespace: str, pod: str) -> str:
    result = pods.exec_in(lab, namespace, pod, "cat", "/proc/self/mountinfo")
    assert result.returncode == 0, f"reading the mounts of pod {pod}: {result.stderr}"
    return result.stdout


def host_path_pod(name: str, node: str, host_path: str, mount_path: str, propagation: str, privileged: bool = False) -> dict[str, Any]:
    body = PodBuilder(name).on_node(node).build()
    body["spec"]["volumes"] = [{"name": "host", "hostPath": {"path": host_path, "type": "DirectoryOrCreate"}}]
    container = body["spec"]["containers"][0]
    container["volumeMounts"] = [{"name": "host", "mountPath": mount_path, "mountPropagation": propagation}]
    if privileged:  # the API server refuses Bidirectional for unprivileged containers
        container["securityContext"] = {"privileged": True}
    return body


def nodes_of(lab: Lab) -> tuple[LocalNode, LocalNode]:
    return lab.local_node(lab.nodes[0].name), lab.local_node(lab.nodes[1].name)


@pytest.mark.requirement("LAB-08")
def test_node_mounts_are_shared_within_the_node_only(mounts_lab: Lab) -> None:
    node, other = nodes_of(mounts_lab)
    info = node_mountinfo(node)
    for path in ("/", "/run", "/var/lib", node.kubelet_root_dir):
        # The mount a path is on: the last one at the longest mount point that contains it.
        containing = [(p, optional) for p, _, optional in mounts(info) if path == p or path.startswith(p.rstrip("/") + "/")]
        point, optional = max(reversed(containing), key=lambda m: len(m[0]))
        assert any(f.startswith("shared:") for f in optional), f"{path} on {node.name} is on {point}, not shared: {optional}"
    # Copies of the host's mounts of lab namespaces would keep them alive after their labs delete them.
    copies = [p for p, _, _ in mounts(info) if p.startswith(("/run/netns/dralab-", f"{labs_root()}/"))]
    assert not copies, f"{node.name} holds copies of the host's namespace mounts: {copies}"
    groups = peer_groups(info)
    assert groups, f"no shared mount on {node.name}"
    with_host = groups & peer_groups(Path("/proc/self/mountinfo").read_text())
    assert not with_host, f"{node.name} shares peer groups {sorted(with_host)} with the host"
    with_other = groups & peer_groups(node_mountinfo(other))
    assert not with_other, f"{node.name} shares peer groups {sorted(with_other)} with {other.name}"


@pytest.mark.requirement("LAB-08")
def test_host_to_container_sees_a_netns_the_node_adds_later(mounts_lab: Lab, namespace: str) -> None:
    api = mounts_lab.api()
    node, other = nodes_of(mounts_lab)
    pods.create(api, namespace, host_path_pod("netns-watcher", node.name, "/run/netns", "/run/netns", "HostToContainer"))
    pods.wait_phase(api, namespace, "netns-watcher")
    netns = f"lab08-{uuid.uuid4().hex[:8]}"
    point = f"/run/netns/{netns}"
    assert fstype_at(pod_mountinfo(mounts_lab, namespace, "netns-watcher"), point) is None
    node.run("ip", "netns", "add", netns)
    try:
        wait_for(
            f"pod netns-watcher to see {point} as nsfs",
            lambda: fstype_at(pod_mountinfo(mounts_lab, namespace, "netns-watcher"), point) == "nsfs",
            10,
        )
        magic = pods.exec_in(mounts_lab, namespace, "netns-watcher", "stat", "-f", "-c", "%t", point)
        assert magic.stdout.strip() == "6e736673", f"stat -f of {point} in the pod: {magic.stdout}{magic.stderr}"
        assert netns not in Path("/proc/self/mountinfo").read_text(), "the node's netns is mounted on the host"
        assert fstype_at(node_mountinfo(other), point) is None, f"{node.name}'s netns is mounted on {other.name}"
    finally:
        node.run("ip", "netns", "delete", netns)
    assert netns not in node.run("ip", "netns", "list").stdout.split()
    assert not node.host_path(point).exists()
    wait_for(
        f"{point} gone from pod netns-watcher", lambda: fstype_at(pod_mountinfo(mounts_lab, namespace, "netns-watcher"), point) is None, 10
    )


@pytest.mark.requirement("LAB-08")
def test_bidirectional_mount_of_a_privileged_pod_reaches_the_node(mounts_lab: Lab, namespace: str) -> None:
    api = mounts_lab.api()
    node, other = nodes_of(mounts_lab)
    shared_dir = "/var/lib/lab08-bidirectional"
    pods.create(api, namespace, host_path_pod("mounter", node.name, shared_dir, "/shared", "Bidirectional", privileged=True))
    pods.wait_phase(api, namespace, "mounter")
    point = f"{shared_dir}/tmpfs"
    made = pods.exec_in(
        mounts_lab,
        namespace,
        "mounter",
        "sh",
        "-ec",
        "mkdir -p /shared/tmpfs && mount -t tmpfs lab08 /shared/tmpfs && echo seen > /shared/tmpfs/f",
    )
    assert made.returncode == 0, f"mounting a tmpfs in the pod: {made.stderr}"
    try:
        assert fstype_at(node_mountinfo(node), point) == "tmpfs", f"{node.name} does not see the pod's tmpfs"
        assert node.run("cat", f"{point}/f").stdout.strip() == "seen"
        leaked = [p for p, _, _ in mounts(Path("/proc/self/mountinfo").read_text()) if p.startswith(str(node.dir))]
        assert not leaked, f"mounts of {node.name} reached the host: {leaked}"
        assert fstype_at(node_mountinfo(other), point) is None, f"{node.name}'s tmpfs is mounted on {other.name}"
    finally:
        unmounted = pods.exec_in(mounts_lab, namespace, "mounter", "umount", "/shared/tmpfs")
    assert unmounted.returncode == 0, f"unmounting the tmpfs in the pod: {unmounted.stderr}"
    assert fstype_at(node_mountinfo(node), point) is None, f"the pod unmounted {point} but {node.name} still has it"
