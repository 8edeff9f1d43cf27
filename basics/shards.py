"""`--shard K/N`: the part of a run one of N pytest processes takes, each on labs of its own
(`dralab certify --shards`). A driver's tests stay together, so each driver is deployed into one
lab and its module fixtures (the generated workloads among them) are built once; the checks of
the cluster, which take no driver, are a group per suite. The drivers go first, the largest first,
each to the shard with the fewest tests so far, then the cluster's suites (quick, most of their
tests) to the least loaded: the same tests give the same split in every process."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from basics.errors import BadInput

# The groups of the tests that take no driver, the checks of the cluster, start with this.
CLUSTER = "cluster:"


def parse(text: str) -> tuple[int, int]:
    """(K, N) of "K/N", 1 <= K <= N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise BadInput(f"--shard {text!r}: give K/N with 1 <= K <= N, such as 1/2")
    return int(m.group(1)), int(m.group(2))


def group_of(params: dict[str, object], suite: str) -> str:
    """A test's group: the driver profile its parameters name, else CLUSTER and its suite."""
    driver = params.get("driver", params.get("driver_profile_name"))
    return str(driver) if driver is not None else CLUSTER + suite


def assign(groups: Iterable[str], shards: int) -> dict[str, int]:
    """Each group (one entry per test) to a shard, 1..shards: the drivers' groups, the largest
    first, then the cluster's, each to the shard with the fewest tests so far (ties: the lower
    shard; groups of equal size by name)."""
    sizes = Counter(groups)
    load = [0] * shards
    placed = {}
    for group, size in sorted(sizes.items(), key=lambda kv: (kv[0].startswith(CLUSTER), -kv[1], kv[0])):
        k = min(range(shards), key=lambda i: (load[i], i))
        placed[group] = k + 1
        load[k] += size
    return placed
