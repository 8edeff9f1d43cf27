"""A node's extended resources as the device plugin checks see them: capacity and allocatable
from the Node object, waited for with the time it took (the figures the checks document)."""

from __future__ import annotations

import time
from typing import Callable

from kubernetes import client

from suites.framework.waits import driver_must


def capacity(api, node: str, resource: str) -> int | None:
    """The resource in the node's capacity; None if the node does not list it."""
    value = (client.CoreV1Api(api).read_node(node).status.capacity or {}).get(resource)
    return None if value is None else int(value)


def allocatable(api, node: str, resource: str) -> int | None:
    value = (client.CoreV1Api(api).read_node(node).status.allocatable or {}).get(resource)
    return None if value is None else int(value)


def wait_allocatable(
    api,
    node: str,
    resource: str,
    want: int,
    timeout: float = 60,
    wait: Callable[[str, Callable[[], bool], float, float], bool] = driver_must,
) -> float:
    """Seconds until the node's allocatable `resource` is `want`: the plugin under test's to
    bring about, unless `wait` is wait_for (the count of dralab's own probe, say)."""
    start = time.monotonic()
    wait(f"{node} allocatable {resource} = {want}", lambda: allocatable(api, node, resource) == want, timeout, 0.25)
    return time.monotonic() - start
