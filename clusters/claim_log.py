"""The claim log: every version of every ResourceClaim a lab's API server showed while a run
watched it, one JSON line each (MUT-03's trace, beside the plugin calls). The recorded calls name
claims by UID only; what the scheduler allocated them, which the driver's answers are judged
against, comes from here, and stays readable after the claim is deleted."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, watch

CLAIM_LOG = "claims.jsonl"


def record(event: str, claim: dict[str, Any]) -> dict[str, Any]:
    """One line: when and how the claim was seen, its identity and creation time, and its status
    (allocation, reservedFor, devices)."""
    meta = claim.get("metadata") or {}
    now = datetime.now(timezone.utc).isoformat()
    return {"start": now, "end": now, "kind": "ResourceClaim", "event": event, "uid": meta.get("uid"),
            "namespace": meta.get("namespace"), "name": meta.get("name"), "created": meta.get("creationTimestamp"),
            "resourceVersion": meta.get("resourceVersion"),
            "status": claim.get("status") or {}}


class ClaimLog:
    """Watches every namespace's ResourceClaims from now until `stop()`, writing each event to
    `path`; after the API server closes the watch it goes on from the last version seen, or from
    a fresh list when that version is too old (410)."""

    def __init__(self, api: client.ApiClient, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._from = ""
        self._stopped = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(api,), daemon=True, name=f"claim log {path}")
        self._thread.start()

    def _run(self, api: client.ApiClient) -> None:
        custom = client.CustomObjectsApi(api)
        with self.path.open("a") as out:
            while not self._stopped.is_set():
                try:
                    for event in self._watch.stream(custom.list_cluster_custom_object, "resource.k8s.io", "v1",
                                                    "resourceclaims", resource_version=self._from, timeout_seconds=300):
                        claim = event["object"]
                        if event["type"] == "ERROR":  # 410: the version is gone from the server's window
                            self._from = ""
                            break
                        out.write(json.dumps(record(event["type"], claim)) + "\n")
                        out.flush()
                        self._from = claim["metadata"]["resourceVersion"]
                except (urllib3.exceptions.HTTPError, client.ApiException, OSError, ValueError):
                    self._from = ""  # an API server restarted or gone: list again (all claims anew) when it answers
                    self._stopped.wait(1)

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
        self._thread.join(timeout=10)


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
