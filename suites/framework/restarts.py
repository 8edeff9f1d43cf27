"""Restarting a node's kubelet or containerd, or rebooting it, under a running pod, so that the
pod's claims are prepared again (KP-07, MD-18); and reading the runtime's refusal to start a
container whose CDI devices have no spec (kubernetes#141433)."""

from __future__ import annotations

import time
from typing import Any, Sequence

from kubernetes import client

from clusters.providers import Lab
from suites.framework.node_files import NAMESPACE as NODE_FILES_NAMESPACE
from suites.framework.pods import REFUSAL_GRACE, prepare_refusal
from suites.framework.verdicts import DriverFailure
from suites.framework.waits import DriverTimedOut, driver_must, wait_for

# What each case restarts, as the messages name it.
RESTARTS = {"kubelet": "kubelet restart", "containerd": "containerd restart", "node": "node reboot"}
# containerd's words when a container is given a CDI device no spec defines.
UNRESOLVABLE = "unresolvable CDI devices"
# The pods a node reboot restarts come back within this. Measured: the reboot itself about 2 s,
# the whole check 82-88 s, mostly the kubelet's back-off while the driver's pod registers again.
REBOOT_TIMEOUT = 180
# A pod whose sandbox was killed after a kubelet or containerd restart starts again within this.
SANDBOX_TIMEOUT = 120


def unresolved_cdi(status: client.V1ContainerStatus | None, events: list[client.CoreV1Event]) -> str | None:
    """What the runtime said when it found no CDI spec for a device the container was given,
    from the container's waiting state or else the pod's newest warning that says so."""
    said = [status.state.waiting.message] if status and status.state and status.state.waiting else []
    said += [e.message for e in reversed(events) if e.type == "Warning"]
    return next((m for m in said if m and UNRESOLVABLE in m), None)


def refused_start(api: client.ApiClient, namespace: str, pod: str, container: str = "main") -> tuple[str | None, str | None]:
    """Why `container` does not start again, in words that blame the driver: the runtime's about
    CDI devices no spec defines, else the kubelet's last event of the driver refusing to prepare."""
    events = client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}").items
    if unresolved := unresolved_cdi(container_status(api, namespace, pod, container), events):
        return unresolved, None
    refusal = prepare_refusal(api, namespace, pod)
    return None, f"{refusal.reason}: {refusal.message}" if refusal else None


def container_status(api: client.ApiClient, namespace: str, pod: str, container: str) -> client.V1ContainerStatus | None:
    found = client.CoreV1Api(api).read_namespaced_pod(pod, namespace).status.container_statuses or []
    return next((c for c in found if c.name == container), None)


def _restart_counts(api: client.ApiClient, namespace: str, node: str) -> dict[str, int]:
    """The pods of `namespace` on `node`, each with the sum of its containers' restart counts."""
    # Any: the client types metadata.name and restart_count Optional, a listed pod's are set.
    found: list[Any] = client.CoreV1Api(api).list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}").items
    return {p.metadata.name: sum(c.restart_count for c in p.status.container_statuses or []) for p in found}


def _ready_anew(api: client.ApiClient, namespace: str, node: str, before: dict[str, int]) -> None:
    """Wait until each pod of `before` (the harness's own) has started its containers anew and is ready."""
    core = client.CoreV1Api(api)

    def ready(name: str) -> bool:
        statuses = core.read_namespaced_pod(name, namespace).status.container_statuses or []
        return sum(c.restart_count for c in statuses) > before[name] and all(c.ready for c in statuses)

    wait_for(
        f"pods {', '.join(before)} of {namespace} on {node} started anew and ready",
        lambda: all(ready(name) for name in before),
        REBOOT_TIMEOUT,
    )


def prepare_again(
    host: Lab, api: client.ApiClient, component: str, namespace: str, pod: str, containers: Sequence[str] = ("main",)
) -> None:
    """Restart `component` (a key of RESTARTS) of the pod's node so that its claims are prepared
    again, and wait until each of `containers` has started anew and is ready: the driver's to do,
    so a DriverTimedOut if not.

    A rebooted node's pods all die with it; the kubelet gives each a new sandbox, which prepares
    the claims again (the rebooted kubelet has prepared none yet), and the node-files observers
    are waited for too. After a kubelet or containerd restart the pod's sandbox is killed: the
    kubelet creates a new one, which prepares the claims again (the restarted kubelet has not
    prepared them yet) and starts the containers with their CDI devices."""
    read: Any = client.CoreV1Api(api).read_namespaced_pod(pod, namespace)  # its node_name and uid: Optional in the client, set
    node = host.node(read.spec.node_name)
    observers = _restart_counts(api, NODE_FILES_NAMESPACE, node.name) if component == "node" else {}
    if component != "node":
        {"kubelet": node.restart_kubelet, "containerd": node.restart_containerd}[component]()
    before = {c: status.restart_count if (status := container_status(api, namespace, pod, c)) else 0 for c in containers}
    if component == "node":
        node.reboot()
    else:
        node.kill_pod_sandbox(read.metadata.uid)

    refused_at: list[float] = []

    def started_anew() -> bool:
        pending = [
            c for c in containers if not ((now := container_status(api, namespace, pod, c)) and now.restart_count > before[c] and now.ready)
        ]
        if not pending:
            return True
        # Refused by the runtime (CDI devices no spec defines) or by the driver, and still so after
        # the kubelet's retries: the driver's part is shown, waiting out the timeout changes nothing.
        for container in pending:
            unresolved, refusal = refused_start(api, namespace, pod, container)
            if unresolved or refusal:
                refused_at[:] = refused_at or [time.monotonic()]
                if time.monotonic() - refused_at[0] > REFUSAL_GRACE:
                    raise DriverTimedOut(
                        f"container {container} of pod {namespace}/{pod} still refused {REFUSAL_GRACE}s "
                        f"after its first refusal following the {RESTARTS[component]}: {unresolved or refusal}"
                    )
                break
        return False

    driver_must(
        f"container(s) {', '.join(containers)} of pod {namespace}/{pod} started anew and ready after the {RESTARTS[component]}",
        started_anew,
        REBOOT_TIMEOUT if component == "node" else SANDBOX_TIMEOUT,
    )
    if observers:
        _ready_anew(api, NODE_FILES_NAMESPACE, node.name, observers)  # the node's files are read through them


def why_not_started(api: client.ApiClient, namespace: str, pod: str, event: str) -> DriverFailure | None:
    """The driver's part in a container not starting again after `event`, from what the runtime
    and the kubelet said; None if they blame nothing of the driver's."""
    unresolved, refusal = refused_start(api, namespace, pod)
    if unresolved:
        return DriverFailure(
            f"after the {event} the claim of pod {namespace}/{pod} was prepared again, but its CDI "
            f"devices resolve to no spec, so its containers cannot start: {unresolved}"
        )
    if refusal:
        return DriverFailure(f"after the {event} the driver refused to prepare the claim of pod {namespace}/{pod} again: {refusal}")
    return None
