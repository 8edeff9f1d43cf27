"""When a watch first saw each pod of a namespace reach a state (bound to a node, Running): the
per-pod latencies the harnesses report, on this host's clock, finer than the API's whole seconds."""

from __future__ import annotations

import threading
import time
from typing import Callable

import urllib3
from kubernetes import client, watch


def bound(pod: client.V1Pod) -> bool:
    return bool(pod.spec.node_name)


def running(pod: client.V1Pod) -> bool:
    return pod.status is not None and pod.status.phase == "Running"


class FirstSeen:
    """Watches a namespace's pods from construction until `stop()`. Under load the API server
    closes watchers it finds slow: the watch starts again until stopped."""

    def __init__(self, api: client.ApiClient, namespace: str, reached: Callable[[client.V1Pod], bool]) -> None:
        self.seen: dict[str, float] = {}
        self._reached = reached
        self._stopped = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(api, namespace), daemon=True)
        self._thread.start()

    def _run(self, api: client.ApiClient, namespace: str) -> None:
        while not self._stopped.is_set():
            try:
                for event in self._watch.stream(client.CoreV1Api(api).list_namespaced_pod, namespace, timeout_seconds=3600):
                    pod = event["object"]
                    if pod.metadata.name not in self.seen and self._reached(pod):
                        self.seen[pod.metadata.name] = time.time()
            except urllib3.exceptions.HTTPError:
                time.sleep(0.1)

    def wait(self, count: int, timeout: float, keep_watching: bool = False) -> dict[str, float]:
        """Until `count` pods have been seen or `timeout` passed; then stop (unless more are to
        come) and return what was seen."""
        deadline = time.time() + timeout
        while len(self.seen) < count and time.time() < deadline:
            time.sleep(0.01 if keep_watching else 0.1)
        if not keep_watching:
            self.stop()
        return dict(self.seen)

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
