"""Namespaces for checks that share one scenario across several tests."""

from __future__ import annotations

import contextlib
import uuid
from typing import Iterator

from kubernetes import client

from suites.framework.waits import wait_for


@contextlib.contextmanager
def fresh(api: client.ApiClient, prefix: str = "t") -> Iterator[str]:
    """A new namespace, deleted afterwards with its pods."""
    core = client.CoreV1Api(api)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]  # a dict: validate_call builds the model
    wait_for(f"ServiceAccount default in namespace {name}", lambda: core.read_namespaced_service_account("default", name), timeout=30)
    try:
        yield name
    finally:
        # Pods go first and are waited for: a driver must see them stop (NRI StopPodSandbox)
        # before anything else happens to it, such as a roll-out of another variant. Deleted
        # gracefully, a pod leaves the API only once its kubelet has stopped it and unprepared its
        # claims; a forced deletion (grace 0) would not wait for that.
        # On slice-only nodes kwok finishes the deletion (its pod-delete stage), as their kubelet would.
        core.delete_collection_namespaced_pod(name)
        wait_for(f"pods of namespace {name} gone", lambda: not core.list_namespaced_pod(name).items, 90)
        core.delete_namespace(name, grace_period_seconds=0)
