"""Generated workloads (MUT-03): pods with claims of the driver, their shapes drawn by hypothesis
over what real drivers differ on, so that the KP rules are checked on calls no fixed scenario
makes: several claims per pod (one NodePrepareResources with all of them), several requests per
claim and devices per request, claims a container uses whole or by request, claims no container
uses, several containers. The checks over the recorded calls (contract.py) judge what the driver
answered; a pod that does not start is this module's own finding, with its shape as YAML."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import hypothesis
import yaml
from hypothesis import strategies as st

from suites.framework import claims, pods
from suites.framework.claims import ClaimBuilder
from suites.framework.drivers import DriverUnderTest
from suites.framework.pods import PodBuilder


# How long hypothesis may shrink a failing case: each try starts a pod and may wait out its
# refusal (30 s); past this the smallest failing shape found is the case.
SHRINK_SECONDS = 150


@dataclass
class Run:
    """One driver's generated workloads: the seed and budget, the room a pod had, the shapes tried,
    and the shrunk case of a pod that did not start, or why nothing was drawn."""

    seed: int
    budget: int
    capacity: int = 0
    tried: list[str] = field(default_factory=list)
    failure: str | None = None
    skipped: str | None = None


@dataclass(frozen=True)
class PodShape:
    """claims: each claim's requests, as device counts; containers: for each container (main
    first) what it uses, (claim, request) with request None for the whole claim."""

    claims: tuple[tuple[int, ...], ...]
    containers: tuple[tuple[tuple[int, int | None], ...], ...]

    @property
    def devices(self) -> int:
        return sum(sum(c) for c in self.claims)

    def claim_builders(self, driver: DriverUnderTest, prefix: str) -> list[ClaimBuilder]:
        built = []
        for i, counts in enumerate(self.claims):
            claim = ClaimBuilder(f"{prefix}-c{i}")
            for j, count in enumerate(counts):
                claim.request(f"r{j}", driver.device_class, count=count)
            if driver.profile.claim_config is not None:
                claim.opaque(driver.name, driver.profile.claim_config)
            built.append(claim)
        return built

    def pod_builder(self, name: str, claim_names: list[str]) -> PodBuilder:
        pod = PodBuilder(name)
        for i, claim in enumerate(claim_names):
            pod.with_pod_claim(f"c{i}", claim)
        uses = [[{"name": f"c{c}", **({"request": f"r{r}"} if r is not None else {})} for c, r in used]
                for used in self.containers]
        pod.container_claims = uses[0]
        for k, used in enumerate(uses[1:], start=1):
            pod.with_container(f"side{k}", used)
        return pod

    def manifests(self, driver: DriverUnderTest, name: str) -> str:
        """The claims and the pod as YAML a vendor can apply to reproduce the case."""
        built = self.claim_builders(driver, name)
        objects: list[dict[str, Any]] = [c.build() for c in built]
        objects.append(self.pod_builder(name, [c.name for c in built]).build())
        return yaml.safe_dump_all(objects, sort_keys=False)


@st.composite
def pod_shapes(draw: st.DrawFn, max_devices: int, one_device: bool = False) -> PodShape:
    """Shapes needing at most `max_devices` devices of the driver (what one node has free); with
    `one_device`, one claim of one device (a profile's claimConfig configures one device of a
    pod: its interface name, say), only the containers varying."""
    if one_device:
        counts: list[tuple[int, ...]] = [(1,)]
    else:
        counts = draw(st.lists(st.lists(st.integers(1, 2), min_size=1, max_size=2).map(tuple), min_size=1, max_size=3)
                      .filter(lambda cs: sum(map(sum, cs)) <= max_devices))
    uses = [(c, r) for c, requests in enumerate(counts) for r in (None, *range(len(requests)))]
    containers = draw(st.lists(st.lists(st.sampled_from(uses), min_size=0, max_size=3, unique=True).map(tuple),
                               min_size=1, max_size=2).map(tuple))
    # A container uses a claim whole or by request, not both (the API server refuses the mix).
    containers = tuple(tuple(u for u in used if u[1] is None or (u[0], None) not in used) for used in containers)
    return PodShape(claims=tuple(counts), containers=containers)


def explore(shapes: st.SearchStrategy[PodShape], seed: int, budget: int,
            attempt: Callable[[PodShape], str | None]) -> str | None:
    """Try `budget` shapes drawn with `seed`; `attempt` starts one and says why it failed, if it
    did. Returns the failure of the smallest failing shape hypothesis shrank to within
    SHRINK_SECONDS of the first failure, None if every shape passed. A shape is attempted once:
    hypothesis's replays of a failing one get its failure as seen."""
    failed: dict[PodShape, str] = {}
    shrinking_since: list[float] = []

    @hypothesis.settings(max_examples=budget, deadline=None, database=None, print_blob=False,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.seed(seed)
    @hypothesis.given(shapes)
    def one(shape: PodShape) -> None:
        if shape not in failed:
            if shrinking_since and time.monotonic() - shrinking_since[0] > SHRINK_SECONDS:
                return  # shrinking's time is up: the smallest failing shape so far is the case
            failure = attempt(shape)
            if failure is None:
                return
            failed[shape] = failure
            shrinking_since[:] = shrinking_since or [time.monotonic()]
        raise Failed(failed[shape])

    try:
        one()
    except Failed as e:
        return str(e)
    return None


class Failed(Exception):
    """A shape that did not start, with why (explore's own: what hypothesis shrinks on)."""


def start(api: Any, namespace: str, driver: DriverUnderTest, shape: PodShape, name: str) -> None:
    built = shape.claim_builders(driver, name)
    for claim in built:
        claims.create(api, namespace, claim)
    pods.create(api, namespace, shape.pod_builder(name, [c.name for c in built]))


def remove(api: Any, namespace: str, shape: PodShape, name: str) -> None:
    """The pod, then its claims: the kubelet unprepares them once the pod is gone."""
    pods.delete(api, namespace, name)
    for i in range(len(shape.claims)):
        claims.delete(api, namespace, f"{name}-c{i}")
