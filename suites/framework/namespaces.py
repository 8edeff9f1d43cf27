"""Namespaces for checks that share one scenario across several tests."""

from __future__ import annotations

import contextlib
import uuid
from typing import Iterator

from kubernetes import client

from suites.framework.waits import wait_for


@contextlib.contextmanager
def fresh(api: client.ApiClient, prefix: str = "t") -> Iterator[str]:
    core = client.CoreV1Api(api)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    wait_for(f"ServiceAccount default in namespace {name}",
             lambda: core.read_namespaced_service_account("default", name), timeout=30)
    try:
        yield name
    finally:
        core.delete_namespace(name, grace_period_seconds=0)
