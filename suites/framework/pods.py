"""Pod builders and the things tests do with pods: create and wait, exec, read logs and events."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from clusters.providers import Lab
from suites.framework import claims, workload
from suites.framework.claims import ClaimBuilder
from suites.framework.verdicts import DriverFailure
from suites.framework.waits import WaitTimeout, driver_must, wait_for

POD_TIMEOUT = 90


def until_stopped(first: str = "") -> list[str]:
    """A container command: the shell commands `first`, then running until the kubelet stops the
    container. It ends at SIGTERM: PID 1 ignores a signal it has no handler for, so `sleep` as
    PID 1 made every pod deletion wait out its grace period (2.9 s a pod, against 1.0 s)."""
    return ["sh", "-c", f"trap 'exit 0' TERM; {first}{'; ' if first else ''}sleep 3600 & wait"]


@dataclass
class PodBuilder:
    """A pod running the workload image (workload.py); chain the with_* calls, then `build()`."""

    name: str
    command: list[str] = field(default_factory=until_stopped)
    node_name: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    env: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    restart_policy: str = "Always"
    claims: list[dict[str, Any]] = field(default_factory=list)  # pod.spec.resourceClaims
    container_claims: list[dict[str, Any]] = field(default_factory=list)  # resources.claims of the container
    limits: dict[str, str] = field(default_factory=dict)
    image: str = field(default_factory=workload.image)
    sidecars: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # more containers: name -> resources.claims
    init_containers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> resources.claims
    init_command: list[str] = field(default_factory=lambda: ["sh", "-c", "exit 0"])
    limits_of: dict[str, dict[str, str]] = field(default_factory=dict)  # more containers' and init containers': name -> limits

    def on_node(self, node: str) -> "PodBuilder":
        """Through the scheduler, not spec.nodeName: the scheduler is part of what is tested."""
        self.node_selector["kubernetes.io/hostname"] = node
        return self

    def running(self, *command: str) -> "PodBuilder":
        self.command = list(command)
        return self

    def once(self) -> "PodBuilder":
        """Run the command to completion, no restarts: the pod ends Succeeded or Failed."""
        self.restart_policy = "Never"
        return self

    def with_env_from_field(self, name: str, field_path: str) -> "PodBuilder":
        self.env.append({"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}})
        return self

    def with_annotation(self, key: str, value: str) -> "PodBuilder":
        self.annotations[key] = value
        return self

    def with_volume(self, volume: dict[str, Any], mount_path: str) -> "PodBuilder":
        self.volumes.append(volume)
        self.mounts.append({"name": volume["name"], "mountPath": mount_path})
        return self

    def with_claim(
        self, name: str, *, claim: str | None = None, template: str | None = None, requests: tuple[str, ...] = ()
    ) -> "PodBuilder":
        """Reference a ResourceClaim (by name) or a ResourceClaimTemplate as pod claim `name`; the
        container uses it whole, or only `requests` of it."""
        ref = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
        self.claims.append({"name": name, **ref})
        self.container_claims += [{"name": name, "request": r} for r in requests] or [{"name": name}]
        return self

    def with_pod_claim(self, name: str, claim: str) -> "PodBuilder":
        """A ResourceClaim of the pod that container main does not use (with_container's may)."""
        self.claims.append({"name": name, "resourceClaimName": claim})
        return self

    def with_container(self, name: str, claims: list[dict[str, Any]], limits: dict[str, str] | None = None) -> "PodBuilder":
        """Another container running the same command, using `claims` ({"name": pod claim, "request": ...})
        and asking for `limits` (a device plugin's resources)."""
        self.sidecars[name] = claims
        self.limits_of[name] = limits or {}
        return self

    def with_init_container(
        self, name: str, claims: list[dict[str, Any]], *command: str, limits: dict[str, str] | None = None
    ) -> "PodBuilder":
        """An init container using `claims` and asking for `limits`: it runs `command` (by default
        it exits at once), before the pod's containers start."""
        self.init_containers[name] = claims
        self.limits_of[name] = limits or {}
        if command:
            self.init_command = list(command)
        return self

    def with_limit(self, resource: str, count: int) -> "PodBuilder":
        """An extended resource (a device plugin's) for the container."""
        self.limits[resource] = str(count)
        return self

    def build(self) -> dict[str, Any]:
        container = {
            "name": "main",
            **workload.container_image(self.image),
            "command": self.command,
            "env": self.env,
            "volumeMounts": self.mounts,
            "resources": {"claims": self.container_claims, "limits": self.limits},
        }

        def other(name: str, command: list[str], uses: list[dict[str, Any]]) -> dict[str, Any]:
            limits = self.limits_of.get(name)
            resources = {"claims": uses, **({"limits": limits} if limits else {})}
            return {"name": name, **workload.container_image(self.image), "command": command, "resources": resources}

        others = [other(name, self.command, uses) for name, uses in self.sidecars.items()]
        spec: dict[str, Any] = {
            "containers": [container, *others],
            "volumes": self.volumes,
            "terminationGracePeriodSeconds": 1,
            "nodeSelector": self.node_selector,
            "tolerations": self.tolerations,
            "restartPolicy": self.restart_policy,
            "resourceClaims": self.claims,
        }
        if self.init_containers:
            spec["initContainers"] = [other(name, self.init_command, uses) for name, uses in self.init_containers.items()]
        if self.node_name:
            spec["nodeName"] = self.node_name
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": self.name, "annotations": self.annotations}, "spec": spec}


def create(api: client.ApiClient, namespace: str, pod: PodBuilder | dict[str, Any]) -> str:
    body = pod.build() if isinstance(pod, PodBuilder) else pod
    client.CoreV1Api(api).create_namespaced_pod(namespace, body)  # type: ignore[arg-type]  # a dict: validate_call builds the model
    return body["metadata"]["name"]


def delete(api: client.ApiClient, namespace: str, names: list[str], timeout: float = POD_TIMEOUT) -> None:
    """Delete the pods, all at once, and wait until they are gone (their claims are then unreserved).
    A pod leaves the API once its kubelet has had the driver unprepare its claims: the driver's to do."""
    core = client.CoreV1Api(api)
    for name in names:
        core.delete_namespaced_pod(name, namespace)
    driver_must(
        f"pod(s) {', '.join(names)} in {namespace} to be gone",
        lambda: not {p.metadata.name for p in core.list_namespaced_pod(namespace).items} & set(names),
        timeout,
    )


def events(api: client.ApiClient, namespace: str, name: str) -> str:
    items = client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return "\n".join(f"{e.type} {e.reason}: {e.message}" for e in items) or "(no events)"


# The kubelet's event when a DRA driver's NodePrepareResources fails for a pod's claim.
PREPARE_FAILED = "FailedPrepareDynamicResources"
# The kubelet retries a refused prepare: a pod still not started this long after the first refusal
# got the driver's answer, not a hiccup (a slow but correct driver gets the whole timeout).
REFUSAL_GRACE = 30
# The kubelet's words while a driver's new pod has yet to register (a rollout): not an answer of the
# driver's; if it lasts, the wait's timeout judges it.
NOT_YET_REGISTERED = "is not registered"


class PrepareRefused(DriverFailure):
    """The driver still refused to prepare a pod's claims REFUSAL_GRACE seconds after its first
    refusal (wait_phase): what a check needing the pod is BLOCKED by, where KP-03 judges it."""


def prepare_refusals(api: client.ApiClient, namespace: str, name: str) -> list[client.CoreV1Event]:
    """The kubelet's events of the driver refusing to prepare the pod's claims, oldest first: the
    first often names the cause (a retried prepare may fail for another reason)."""
    items: list[Any] = (  # Any: the client types metadata.creation_timestamp Optional, the API server sets it
        client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name},reason={PREPARE_FAILED}").items
    )
    refusals = [e for e in items if NOT_YET_REGISTERED not in (e.message or "")]
    return sorted(refusals, key=lambda e: e.first_timestamp or e.event_time or e.metadata.creation_timestamp)


# containerd's words (in the kubelet's Failed event) when a container's CDI devices, which the
# DRA driver answered, are defined by no spec on the node.
CDI_UNRESOLVABLE = "CDI device injection failed"


def cdi_refusals(api: client.ApiClient, namespace: str, name: str) -> list[client.CoreV1Event]:
    """The kubelet's events of the runtime refusing the pod's containers their CDI devices."""
    items = client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name},reason=Failed").items
    return [e for e in items if CDI_UNRESOLVABLE in (e.message or "")]


def prepare_refusal(api: client.ApiClient, namespace: str, name: str) -> client.CoreV1Event | None:
    """The kubelet's latest event of the driver refusing to prepare the pod's claims, if there is one."""
    refusals = prepare_refusals(api, namespace, name)
    return refusals[-1] if refusals else None


def uses_devices(pod: client.V1Pod) -> bool:
    """Whether the pod runs only once a driver has done its part: it has resource claims, or a
    container asks for an extended resource (a device plugin's: a name with a domain)."""
    containers = [*pod.spec.containers, *(pod.spec.init_containers or [])]
    limits = [name for c in containers for name in ((c.resources and c.resources.limits) or {})]
    return bool(pod.spec.resource_claims) or any("/" in name for name in limits)


def wait_phase(
    api: client.ApiClient,
    namespace: str,
    name: str,
    phases: tuple[str, ...] = ("Running",),
    timeout: float = POD_TIMEOUT,
    cdi_refused: bool = False,
) -> client.V1Pod:
    """The pod once in one of `phases`. A driver that still refuses to prepare its claims (with
    `cdi_refused`, also one whose answered CDI devices the runtime still cannot find: checks that
    judge the answer themselves wait it out) REFUSAL_GRACE seconds after the first refusal is a
    PrepareRefused (the kubelet's event is the evidence), without waiting out the timeout; a
    timeout names the pod's events. A pod that uses devices is the driver's to start (driver_must),
    any other the lab's (wait_for)."""
    core = client.CoreV1Api(api)
    wait = driver_must if uses_devices(core.read_namespaced_pod(name, namespace)) else wait_for
    first_refused: list[float] = []

    def reached() -> client.V1Pod | None:
        pod: Any = core.read_namespaced_pod(name, namespace)  # status.phase, Optional in the client: None is in no phases
        if pod.status.phase in phases:
            return pod
        refusals, what = prepare_refusals(api, namespace, name), "the DRA driver refused to prepare its claim"
        if not refusals and cdi_refused:
            refusals, what = cdi_refusals(api, namespace, name), "the runtime found no CDI spec for devices the DRA driver answered"
        if refusals:
            first_refused[:] = first_refused or [time.monotonic()]
            if time.monotonic() - first_refused[0] > REFUSAL_GRACE:
                said = "; then ".join(f"kubelet ({e.source.component}, x{e.count}): {e.reason}: {e.message}" for e in refusals)
                raise PrepareRefused(f"pod {namespace}/{name} cannot start: {what} for {REFUSAL_GRACE}s; {said}")
        return None

    try:
        return wait(f"pod {namespace}/{name} to be {'/'.join(phases)}", reached, timeout)
    except (WaitTimeout, DriverFailure) as e:  # the same kind, with the pod's events
        raise type(e)(f"{e}\nevents of {name}:\n{events(api, namespace, name)}") from None


def run(api: client.ApiClient, namespace: str, pod: PodBuilder) -> client.V1Pod:
    create(api, namespace, pod)
    return wait_phase(api, namespace, pod.name)


def logs(api: client.ApiClient, namespace: str, name: str, container: str | None = None) -> str:
    return client.CoreV1Api(api).read_namespaced_pod_log(name, namespace, container=container)


def exec_in(lab: Lab, namespace: str, name: str, *command: str, container: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command in the pod's container (through the API server and kubelet, as kubectl does)."""
    return subprocess.run(
        [
            str(lab.kubectl),
            "--kubeconfig",
            str(lab.kubeconfig),
            "exec",
            "-n",
            namespace,
            name,
            *(["-c", container] if container else []),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


# What an observation script exits with when its subject does not exist: kubectl exec's own
# failures exit 1, like most commands', so only this code means "looked, and it is not there".
ABSENT = 3


class ObservationFailed(Exception):
    """A command run in a pod to observe something failed: the harness saw nothing, which is never
    a pass and never the driver's FAIL (an ERROR)."""


def observe(lab: Lab, namespace: str, name: str, script: str, container: str | None = None) -> str | None:
    """The output of `script` run by sh in the pod; None when it exits ABSENT. Any other non-zero
    exit (the exec, the shell or a command failed) raises ObservationFailed with what it said."""
    done = exec_in(lab, namespace, name, "sh", "-c", script, container=container)
    if done.returncode == ABSENT:
        return None
    if done.returncode != 0:
        raise ObservationFailed(
            f"observing in pod {namespace}/{name}{f' container {container}' if container else ''} "
            f"failed (exit {done.returncode}): {script}\n{done.stderr.strip()}"
        )
    return done.stdout


def absent_unless(path: str) -> str:
    """The start of an observation script about `path`: exit ABSENT if it does not exist."""
    return f"[ -e {path} ] || exit {ABSENT}; "


def create_with_claim(api: client.ApiClient, namespace: str, claim: ClaimBuilder, pod: str, node: str | None = None) -> None:
    """Create the claim and a pod `pod` that uses it, to go to `node` (tolerating any taint) if
    given, else wherever the scheduler finds room."""
    claims.create(api, namespace, claim)
    builder = PodBuilder(pod).with_claim("c", claim=claim.name)
    if node:
        builder.on_node(node).tolerations.append({"operator": "Exists"})
    create(api, namespace, builder)


def create_bound(api: client.ApiClient, namespace: str, pod: PodBuilder, node: str) -> client.V1Pod:
    """Create `pod` bound to `node` by spec.nodeName (no scheduler: for claims allocated by hand,
    claims.allocate_by_hand), tolerating any taint; the pod as created, with its UID."""
    pod.node_name = node
    pod.tolerations.append({"operator": "Exists"})
    create(api, namespace, pod)
    return client.CoreV1Api(api).read_namespaced_pod(pod.name, namespace)


def allocate_through(
    api: client.ApiClient, namespace: str, claim: ClaimBuilder, node: str | None, pod: str, timeout: float = 60
) -> dict[str, Any]:
    """The claim as read once the scheduler has allocated it for pod `pod` (create_with_claim), the
    cluster's step. If it is not allocated in time, a WaitTimeout carrying the pod's events."""
    create_with_claim(api, namespace, claim, pod, node)
    try:
        return wait_for(
            f"claim {namespace}/{claim.name} allocated for pod {pod} on {node or 'any node'}",
            lambda: claims.read_when(api, namespace, claim.name, lambda c: bool(claims.allocated(c))),
            timeout,
        )
    except WaitTimeout as e:
        raise type(e)(f"{e}\nevents of pod {pod}:\n{events(api, namespace, pod)}") from None
