"""What the device plugin checks observe, through the API server and a pod per node: the kubelet's
device manager checkpoint, the node's CDI specs and device files, and a container's view of itself.
Each raises ObservationFailed (an ERROR) when it cannot see its subject, never returns empty."""

from __future__ import annotations

from kubernetes import client

from clusters.providers import Lab
from suites.device_plugin import allocation, checkpoint
from suites.device_plugin.allocation import ContainerView
from suites.device_plugin.checkpoint import Checkpoint, Entry
from suites.framework import pods
from suites.framework.node_files import NodeFiles
from suites.framework.pods import ObservationFailed


def kubelet_checkpoint(files: NodeFiles, node: str) -> Checkpoint:
    text = files.read(node, checkpoint.PATH)
    if text is None:
        raise ObservationFailed(f"{node} has no device manager checkpoint at {checkpoint.PATH}")
    return checkpoint.parse(text)


def allocation_of(files: NodeFiles, pod: client.V1Pod, resource: str) -> Entry:
    """The kubelet's record of what the pod's (first) container was granted of `resource` and
    what the plugin answered to Allocate for it."""
    return entry_of(kubelet_checkpoint(files, pod.spec.node_name), pod, resource)  # type: ignore[arg-type]  # a Running pod's, set


def entry_of(held: Checkpoint, pod: client.V1Pod, resource: str) -> Entry:
    """allocation_of in a checkpoint already read (the pod's node's)."""
    node, uid, container = pod.spec.node_name, pod.metadata.uid, pod.spec.containers[0].name
    entry = held.entry(uid, container, resource)  # type: ignore[arg-type]  # the pod's uid, Optional in the client, is set
    if entry is None:
        raise ObservationFailed(
            f"the kubelet's checkpoint on {node} has no entry for pod {pod.metadata.namespace}/{pod.metadata.name} "
            f"(UID {uid}) container {container} resource {resource}; it has: "
            f"{[(e.pod_uid, e.container, e.resource) for e in held.entries]}"
        )
    return entry


def file_kind(files: NodeFiles, node: str, path: str) -> str:
    """The type of the node's file at `path` as stat %F names it, "" if there is none."""
    entry = files.listing(node, path).get(path)
    return entry.kind if entry else ""


def container_view(lab: Lab, namespace: str, pod: str, nodes: list[str], mounts: list[str]) -> ContainerView:
    """The env and mounts of the pod's (first) container, the file type of each of `nodes` and
    where each of `mounts` resolves in it."""
    out = pods.observe(lab, namespace, pod, allocation.view_script(nodes, mounts))
    if out is None:  # the script never exits ABSENT: something else did
        raise ObservationFailed(f"observing pod {namespace}/{pod}'s container answered 'absent'")
    return allocation.parse_view(out)
