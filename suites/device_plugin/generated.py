"""Generated workloads of the device plugin (MUT-03): pods asking for the plugin's resource, their
shapes drawn by hypothesis over what a plugin's Allocate sees differ: several containers, each
asking for its own devices or none, an init container whose devices the kubelet then reuses for
the containers after it, on any node; so that DP-04 and DP-07 are judged on Allocates no fixed
scenario makes. Kept small: a shape is one pod, started, looked into container by container and
removed (seconds on a lab); generated_run.py runs them."""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis
import yaml
from hypothesis import strategies as st

from suites.framework.pods import PodBuilder

MAX_CONTAINERS = 3
MAX_PER_CONTAINER = 2
# An init container waits for this file, which the check writes once it has looked into it: the
# container is running while it is looked at, and ends for the others to start; a few seconds
# later, for the exec that wrote the file to return first (one cut off by the container's end exits 137).
OBSERVED = "/tmp/dralab-observed"
INIT_COMMAND = ("sh", "-c", f"until [ -e {OBSERVED} ]; do sleep 0.1; done; sleep 3")
INIT = "init"


@dataclass(frozen=True)
class Container:
    name: str
    init: bool
    devices: int


@dataclass(frozen=True)
class PodShape:
    """node: where the pod runs; devices: how many devices each container asks for, main first;
    init: the second container is an init container."""

    node: str
    devices: tuple[int, ...]
    init: bool = False

    @property
    def needed(self) -> int:
        """The node's devices the pod takes: the containers after an init container reuse its."""
        init = self.devices[1] if self.init else 0
        return max(init, sum(self.devices) - init)

    def containers(self) -> list[Container]:
        """Its containers in the order the kubelet admits them and calls Allocate: the init container first."""
        named = [
            Container(INIT if k == 1 and self.init else ("main" if k == 0 else f"side{k}"), k == 1 and self.init, n)
            for k, n in enumerate(self.devices)
        ]
        return sorted(named, key=lambda c: not c.init)

    def pod(self, name: str, resource: str) -> PodBuilder:
        pod = PodBuilder(name).on_node(self.node)
        for c in self.containers():
            limits = {resource: str(c.devices)} if c.devices else {}
            if c.init:
                pod.with_init_container(c.name, [], *INIT_COMMAND, limits=limits)
            elif c.name == "main":
                pod.limits.update(limits)
            else:
                pod.with_container(c.name, [], limits)
        return pod

    def manifest(self, name: str, resource: str) -> str:
        """The pod as YAML a vendor can apply to reproduce the case."""
        return yaml.safe_dump(self.pod(name, resource).build(), sort_keys=False)


@st.composite
def pod_shapes(draw: st.DrawFn, free: dict[str, int]) -> PodShape:
    """Shapes that fit the devices `free` on their node (node -> count); each dimension shrinks to
    the plainest case (the first node, one container of one device, no init container)."""
    node = draw(st.sampled_from(sorted(n for n, count in free.items() if count > 0)))
    devices = draw(st.lists(st.integers(0, MAX_PER_CONTAINER), min_size=1, max_size=MAX_CONTAINERS).map(tuple))
    shape = PodShape(node, devices, len(devices) > 1 and draw(st.booleans()))
    hypothesis.assume(0 < shape.needed <= free[node])
    return shape
