"""A node's extended resources as the device plugin checks see them: capacity and allocatable
from the Node object, waited for with the time it took (the figures the checks document)."""

from __future__ import annotations

import time

from kubernetes import client

from suites.framework.waits import wait_for


def capacity(api, node: str, resource: str) -> int | None:
    """The resource in the node's capacity; None if the node does not list it."""
    value = (client.CoreV1Api(api).read_node(node).status.capacity or {}).get(resource)
    return None if value is None else int(value)


def allocatable(api, node: str, resource: str) -> int | None:
    value = (client.CoreV1Api(api).read_node(node).status.allocatable or {}).get(resource)
    return None if value is None else int(value)


def wait_allocatable(api, node: str, resource: str, want: int, timeout: float = 60) -> float:
    """Seconds until the node's allocatable `resource` is `want`."""
    start = time.monotonic()
    wait_for(f"{node} allocatable {resource} = {want}", lambda: allocatable(api, node, resource) == want, timeout, interval=0.25)
    return time.monotonic() - start
