"""The watch logs: every version of every ResourceClaim, ResourceSlice and Pod a lab's API
server showed while a run watched it, one JSON line each, a file per kind (MUT-03's trace,
beside the plugin calls). The recorded calls name claims by UID only; what the scheduler
allocated them, which the driver's answers are judged against, comes from the claim log, and
stays readable after the claim is gone."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import urllib3
from kubernetes import client, watch

CLAIM_LOG = "claims.jsonl"
POD_LOG = "pods.jsonl"


def _claim(obj: dict[str, Any]) -> dict[str, Any]:
    return {"status": obj.get("status") or {}}


def _slice(obj: dict[str, Any]) -> dict[str, Any]:
    """A slice's driver, node, pool and device names (the attributes and capacities left out: a
    scale run publishes thousands)."""
    spec = obj.get("spec") or {}
    return {
        "spec": {
            "driver": spec.get("driver"),
            "nodeName": spec.get("nodeName"),
            "pool": spec.get("pool"),
            "devices": [d.get("name") for d in spec.get("devices") or []],
        }
    }


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    """A pod's node, claims and how far it got (phase, containers ready and restarted)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return {
        "spec": {"nodeName": spec.get("nodeName"), "resourceClaims": spec.get("resourceClaims") or []},
        "status": {
            "phase": status.get("phase"),
            "resourceClaimStatuses": status.get("resourceClaimStatuses") or [],
            "containers": [{"name": c.get("name"), "ready": c.get("ready"), "restartCount": c.get("restartCount")} for c in containers],
        },
    }


@dataclass(frozen=True)
class Watched:
    """A kind the run watches: its log file, the list call to watch (function, positional
    arguments) and what of an object each line keeps."""

    file: str
    kind: str
    lister: Callable[[client.ApiClient], tuple[Callable[..., Any], tuple[str, ...]]]
    keep: Callable[[dict[str, Any]], dict[str, Any]]


def _custom(plural: str) -> Callable[[client.ApiClient], tuple[Callable[..., Any], tuple[str, ...]]]:
    return lambda api: (client.CustomObjectsApi(api).list_cluster_custom_object, ("resource.k8s.io", "v1", plural))


WATCHED = (
    Watched(CLAIM_LOG, "ResourceClaim", _custom("resourceclaims"), _claim),
    Watched("slices.jsonl", "ResourceSlice", _custom("resourceslices"), _slice),
    Watched(POD_LOG, "Pod", lambda api: (client.CoreV1Api(api).list_pod_for_all_namespaces, ()), _pod),
)


def record(watched: Watched, event: str, obj: dict[str, Any]) -> dict[str, Any]:
    """One line: when and how the object was seen, its identity and creation time, and what
    `watched` keeps of it."""
    meta = obj.get("metadata") or {}
    now = datetime.now(timezone.utc).isoformat()
    return {
        "start": now,
        "end": now,
        "kind": watched.kind,
        "event": event,
        "uid": meta.get("uid"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "created": meta.get("creationTimestamp"),
        "resourceVersion": meta.get("resourceVersion"),
        **watched.keep(obj),
    }


class WatchLog:
    """Watches every namespace's objects of one kind from now until `stop()`, writing each event
    to `path`; after the API server closes the watch it goes on from the last version seen, or
    from a fresh list when that version is too old (410)."""

    def __init__(self, api: client.ApiClient, path: Path, watched: Watched) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._from = ""
        self._stopped = threading.Event()
        # "object": events stay the API server's JSON; typed models of every Pod event cost the run's CPU.
        self._watch = watch.Watch(return_type="object")
        self._thread = threading.Thread(target=self._run, args=(api, watched), daemon=True, name=f"watch log {path}")
        self._thread.start()

    def _run(self, api: client.ApiClient, watched: Watched) -> None:
        lister, args = watched.lister(api)
        with self.path.open("a") as out:
            while not self._stopped.is_set():
                try:
                    for event in self._watch.stream(lister, *args, resource_version=self._from, timeout_seconds=300):
                        if event["type"] == "ERROR":  # 410: the version is gone from the server's window
                            self._from = ""
                            break
                        obj = event["raw_object"]  # as the API server sent it (typed clients' models aside)
                        out.write(json.dumps(record(watched, event["type"], obj)) + "\n")
                        out.flush()
                        self._from = obj["metadata"]["resourceVersion"]
                except (urllib3.exceptions.HTTPError, client.ApiException, OSError, ValueError):
                    self._from = ""  # an API server restarted or gone: list again (all objects anew) when it answers
                    self._stopped.wait(1)

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
        self._thread.join(timeout=10)


def start_all(api: client.ApiClient, log_dir: Path) -> list[WatchLog]:
    """A watch log of each WATCHED kind in `log_dir`."""
    return [WatchLog(api, log_dir / w.file, w) for w in WATCHED]


def allocations(path: Path) -> dict[str, dict[str, Any]]:
    """The last version seen of each claim that was allocated, by UID: an allocation never
    changes once made, and this keeps it after the claim is gone."""
    found: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            if (raw.get("status") or {}).get("allocation"):
                found[raw["uid"]] = raw
    return found


def allocation_history(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every version seen of each claim that was ever allocated, by UID, in the order seen: a
    claim deallocated once its pods are gone may be allocated other devices for its next pod, so
    what a call was answered against is the allocation of its time (`start` of each version)."""
    found: dict[str, list[dict[str, Any]]] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            found.setdefault(raw["uid"], []).append(raw)
    return {uid: seen for uid, seen in found.items() if any((v.get("status") or {}).get("allocation") for v in seen)}


def versions(path: Path, since: datetime) -> list[dict[str, Any]]:
    """Every version seen of each claim created at or after `since` (the claims of one run), in
    the order seen. A claim of before is left out: the watch lists it anew when it starts, and
    what was done to it before is not in this run's trace."""
    if not path.exists():
        return []
    started = since.replace(microsecond=0)  # creationTimestamp has whole seconds
    found = []
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            if raw.get("created") and datetime.fromisoformat(raw["created"].replace("Z", "+00:00")) >= started:
                found.append(raw)
    return found
