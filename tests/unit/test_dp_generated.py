"""The device plugin's generated pod shapes (suites/device_plugin/generated.py): each fits the
devices free on its node (an init container's reused by the containers after it), its containers
come in the order the kubelet admits them, and its manifest asks each container's devices."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings

from suites.device_plugin.generated import INIT, INIT_COMMAND, OBSERVED, Container, PodShape, pod_shapes
from suites.kubelet_plugin.generated import explore

RESOURCE = "dralab.dev/fake-gpu"
FREE = {"node-1": 8, "node-2": 3, "node-3": 0}
LOADED = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def test_an_init_containers_devices_are_reused_by_the_containers_after_it() -> None:
    assert PodShape("n", (1, 2, 1), init=True).needed == 2  # init 2; main and side2 take 2 between them
    assert PodShape("n", (2, 1, 2), init=True).needed == 4
    assert PodShape("n", (1, 2, 1)).needed == 4
    assert PodShape("n", (0, 2), init=True).containers() == [Container(INIT, True, 2), Container("main", False, 0)]


@settings(max_examples=60, deadline=None, suppress_health_check=LOADED)
@given(pod_shapes(FREE))
def test_shapes_fit_their_node_and_their_manifest_asks_each_containers_devices(shape: PodShape) -> None:
    assert shape.node != "node-3" and 0 < shape.needed <= FREE[shape.node]
    pod = yaml.safe_load(shape.manifest("gen-0", RESOURCE))
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": shape.node}
    written = {
        c["name"]: (c in spec.get("initContainers", []), int((c["resources"].get("limits") or {}).get(RESOURCE, 0)))
        for c in spec["containers"] + spec.get("initContainers", [])
    }
    assert written == {c.name: (c.init, c.devices) for c in shape.containers()}
    if shape.init:
        (init,) = spec["initContainers"]
        assert init["name"] == INIT and init["command"] == list(INIT_COMMAND) and OBSERVED in init["command"][-1]


def test_a_seed_draws_several_containers_init_containers_and_every_node_with_room() -> None:
    drawn: list[PodShape] = []
    explore(pod_shapes(FREE), seed=3, budget=30, attempt=lambda shape: drawn.append(shape))
    assert len(drawn) == 30 and {s.node for s in drawn} == {"node-1", "node-2"}
    assert any(s.init and s.devices[1] for s in drawn), "an init container with devices"
    assert any(len([n for n in s.devices if n]) > 1 for s in drawn), "several containers with devices of their own"
    assert any(0 in s.devices for s in drawn), "a container asking for none"
