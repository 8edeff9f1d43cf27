"""What the device plugin checks observe, through the API server and a pod per node: the kubelet's
device manager checkpoint, the node's CDI specs and device files, and a container's view of itself.
Each raises ObservationFailed (an ERROR) when it cannot see its subject, never returns empty."""

from __future__ import annotations

from kubernetes import client

from clusters.providers import Lab
from suites.device_plugin import allocation, checkpoint
from suites.device_plugin.allocation import ContainerView, DeviceFile, Observed
from suites.device_plugin.checkpoint import Checkpoint, Entry
from suites.framework import cdi_specs, pods
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


def entry_of(held: Checkpoint, pod: client.V1Pod, resource: str, container: str | None = None) -> Entry:
    """allocation_of in a checkpoint already read (the pod's node's), of `container` (default: the first)."""
    node, uid = pod.spec.node_name, pod.metadata.uid
    container = container or pod.spec.containers[0].name
    entry = held.entry(uid, container, resource)  # type: ignore[arg-type]  # the pod's uid, Optional in the client, is set
    if entry is None:
        raise ObservationFailed(
            f"the kubelet's checkpoint on {node} has no entry for pod {pod.metadata.namespace}/{pod.metadata.name} "
            f"(UID {uid}) container {container} resource {resource}; it has: "
            f"{[(e.pod_uid, e.container, e.resource) for e in held.entries]}"
        )
    return entry


def host_files(files: NodeFiles, node: str, paths: list[str]) -> dict[str, DeviceFile]:
    """What the node has at each of `paths` that exists, as stat names it."""
    return {path: DeviceFile(e.kind, e.numbers) for path, e in files.entries(node, paths).items()}


def container_view(lab: Lab, namespace: str, pod: str, nodes: list[str], mounts: list[str], container: str | None = None) -> ContainerView:
    """The env and mounts of the pod's container (default: the first), what each of `nodes` and
    each device file under /dev is in it, and where each of `mounts` resolves in it."""
    out = pods.observe(lab, namespace, pod, allocation.view_script(nodes, mounts), container=container)
    if out is None:  # the script never exits ABSENT: something else did
        raise ObservationFailed(f"observing pod {namespace}/{pod}'s container answered 'absent'")
    return allocation.parse_view(out)


def observe(lab: Lab, files: NodeFiles, held: Checkpoint, pod: client.V1Pod, container: str, resource: str) -> Observed:
    """One running container of `pod` and its allocation of `resource`: the kubelet's record of it
    in `held` (its node's checkpoint), the node's CDI specs where the answer names CDI devices,
    what the container holds and what the node has at the answer's device nodes' host paths."""
    node: str = pod.spec.node_name  # type: ignore[assignment]  # a scheduled pod's, Optional in the client
    inits = pod.spec.init_containers or []
    spec = next(c for c in [*inits, *pod.spec.containers] if c.name == container)
    entry = entry_of(held, pod, resource, container)
    specs = list(cdi_specs.on_node(files, node).values()) if entry.answer.cdi_devices else []
    expected, _ = allocation.promises(entry.answer, specs)
    nodes, mounts = ([p for p in expected if p.what == what] for what in ("device node", "mount"))
    name: str = pod.metadata.name  # type: ignore[assignment]  # Optional in the client, set
    namespace: str = pod.metadata.namespace  # type: ignore[assignment]  # the same
    view = container_view(lab, namespace, name, [p.target for p in nodes], [p.target for p in mounts], container)
    return Observed(
        pod=f"{namespace}/{name}",
        container=container,
        init=spec in inits,
        node=node,
        asked=int(((spec.resources and spec.resources.limits) or {}).get(resource, 0)),
        entry=entry,
        registered=held.registered.get(resource, []),
        specs=specs,
        view=view,
        host=host_files(files, node, sorted({p.host_path for p in nodes})),
    )
