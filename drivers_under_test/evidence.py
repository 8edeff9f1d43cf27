"""The driver's side of a FAIL (docs/verdicts.md): its pods and their current and
previous container logs, the events of its namespace and of the test's, the test's claims and
pods as YAML, and where the lab allows, the kubelet's plugin registrations on each node."""

from __future__ import annotations

import time
from typing import Any, Iterable

import yaml
from kubernetes import client

from basics.errors import NotSupported
from clusters.providers import Lab
from drivers_under_test.profile import DriverProfile

PROFILE_LABEL = "dralab.dev/profile"  # on every object and pod a deployment of a profile makes

LOG_LINES = 80
LOG_ATTEMPTS = 3
ITEM_LIMIT = 8000  # characters per evidence item: the report stays readable


def _clip(text: str) -> str:
    return text if len(text) <= ITEM_LIMIT else "[...]\n" + text[-ITEM_LIMIT:]


def _yaml(api: client.ApiClient, objects: Iterable[object]) -> str:
    docs = [api.sanitize_for_serialization(o) for o in objects]
    for d in docs:
        d.get("metadata", {}).pop("managedFields", None)
    return yaml.safe_dump_all(docs, sort_keys=False) if docs else "(none)"


def events(api: client.ApiClient, namespace: str) -> str:
    items = sorted(client.CoreV1Api(api).list_namespaced_event(namespace).items, key=lambda e: str(e.last_timestamp or e.event_time or ""))
    return (
        "\n".join(
            f"{e.last_timestamp or e.event_time} {e.type} {e.reason} {e.involved_object.kind}/"
            f"{e.involved_object.name} ({e.source.component if e.source else '?'}, x{e.count or 1}): {e.message}"
            for e in items
        )
        or "(no events)"
    )


def _log(core: client.CoreV1Api, pod: client.V1Pod, container: str, previous: bool) -> str:
    """A container's log; a crash-looping container's is briefly unreadable while it is replaced."""
    failure = ""
    meta: Any = pod.metadata  # the client types name and namespace Optional: a pod of the API has both
    for _ in range(LOG_ATTEMPTS):
        try:
            return core.read_namespaced_pod_log(meta.name, meta.namespace, container=container, previous=previous, tail_lines=LOG_LINES)
        except client.ApiException as e:
            failure = f"(no log: {e.reason}: {e.body})"
            time.sleep(1)
    return failure


def container_logs(api: client.ApiClient, pod: client.V1Pod) -> list[tuple[str, str]]:
    """Each container's current log, and its previous one where it has restarted."""
    core, found = client.CoreV1Api(api), []
    for status in pod.status.container_statuses or []:
        runs = [("current", False)] + ([("previous", True)] if status.restart_count else [])
        for which, previous in runs:
            text = _log(core, pod, status.name, previous)
            found.append(
                (
                    f"{which} log of {pod.metadata.namespace}/{pod.metadata.name} container {status.name} "
                    f"(restarts: {status.restart_count}; last {LOG_LINES} lines)",
                    _clip(text or "(empty)"),
                )
            )
    return found


def of_driver(lab: Lab, api: client.ApiClient, profile: DriverProfile) -> list[tuple[str, str]]:
    core = client.CoreV1Api(api)
    pods = core.list_namespaced_pod(profile.namespace, label_selector=f"{PROFILE_LABEL}={profile.name}").items
    found = [
        (
            f"driver {profile.name}: pods",
            _clip(
                _yaml(
                    api,
                    [
                        {
                            "name": p.metadata.name,
                            "node": p.spec.node_name,
                            "phase": p.status.phase,
                            "containers": [api.sanitize_for_serialization(s) for s in p.status.container_statuses or []],
                        }
                        for p in pods
                    ],
                )
            ),
        )
    ]
    for pod in pods:
        found += container_logs(api, pod)
    found.append((f"driver {profile.name}: events in namespace {profile.namespace}", _clip(events(api, profile.namespace))))
    registrations = []
    for node in lab.nodes:
        try:
            registry = node.host_path(lab.registration_dir(node))
        except NotSupported:
            break
        sockets = sorted(p.name for p in registry.glob("*")) if registry.is_dir() else []
        registrations.append(f"{node.name}: {', '.join(sockets) or '(none)'}")
    if registrations:
        found.append((f"drivers' registration sockets ({lab.registration_dir(lab.nodes[0])}) per node", "\n".join(registrations)))
    return found


def of_namespace(api: client.ApiClient, namespace: str) -> list[tuple[str, str]]:
    """The test's claims and pods as YAML, and the namespace's events."""
    claims = client.ResourceV1Api(api).list_namespaced_resource_claim(namespace).items
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    return [
        (f"ResourceClaims in {namespace}", _clip(_yaml(api, claims))),
        (f"pods in {namespace}", _clip(_yaml(api, pods))),
        (f"events in {namespace}", _clip(events(api, namespace))),
    ]
