"""Every version of one ResourceClaim as a watch delivers them: what a check needs when an update
may be undone a moment later (another driver writing its entry back), which reads would miss."""

from __future__ import annotations

import threading
import time
from typing import Any

import urllib3
from kubernetes import client, watch


class Versions:
    """Watches the claim from `resource_version` on until `stop()`, starting again after the last
    version seen when the API server closes the watch."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str, resource_version: str) -> None:
        self.seen: list[dict[str, Any]] = []
        self._from = resource_version
        self._stopped = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(api, namespace, name), daemon=True)
        self._thread.start()

    def _run(self, api: client.ApiClient, namespace: str, name: str) -> None:
        custom = client.CustomObjectsApi(api)
        while not self._stopped.is_set():
            try:
                for event in self._watch.stream(
                    custom.list_namespaced_custom_object,
                    "resource.k8s.io",
                    "v1",
                    namespace,
                    "resourceclaims",
                    field_selector=f"metadata.name={name}",
                    resource_version=self._from,
                    timeout_seconds=600,
                ):
                    claim = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.seen.append(claim)
                    self._from = claim["metadata"]["resourceVersion"]
            except urllib3.exceptions.HTTPError:
                time.sleep(0.1)

    def stop(self) -> list[dict[str, Any]]:
        """The versions seen, oldest first."""
        self._stopped.set()
        self._watch.stop()
        return list(self.seen)
