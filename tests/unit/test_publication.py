"""DEP-01 waits for a driver's publication to settle (drivers_under_test/publication.py): an empty
slice first and the devices a second later (an SR-IOV driver) is not yet published; a pool whose
slices are not all there is not either; an empty node is accepted only once it stays empty."""

from __future__ import annotations

from types import SimpleNamespace

from drivers_under_test.publication import EMPTY_GRACE_SECONDS, SETTLE_SECONDS, Settling


def resource_slice(
    node: str,
    devices: int,
    pool: str | None = None,
    generation: int = 1,
    count: int = 1,
) -> SimpleNamespace:
    spec = SimpleNamespace(
        node_name=node,
        devices=[object()] * devices,
        pool=SimpleNamespace(name=pool or node, generation=generation, resource_slice_count=count),
    )
    return SimpleNamespace(spec=spec)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_empty_slice_then_the_devices_settles_on_the_devices() -> None:
    clock = Clock()
    settling = Settling("vf.vendor.example", ["node-1", "node-2"], clock)
    assert "no ResourceSlice of vf.vendor.example for node node-1" in settling.missing([])
    empty = [resource_slice("node-1", 0), resource_slice("node-2", 0)]
    clock.now = 1
    assert any("publishes no device on node node-1 yet" in m for m in settling.missing(empty))
    clock.now = 2  # a second later, the VFs are up
    full = [resource_slice("node-1", 8), resource_slice("node-2", 8)]
    assert any("changed 0s ago" in m for m in settling.missing(full))
    clock.now = 2 + SETTLE_SECONDS
    assert settling.missing(full) == []


def test_a_node_without_devices_is_accepted_once_it_stays_empty() -> None:
    clock = Clock()
    settling = Settling("d", ["node-1", "node-2"], clock)
    published = [resource_slice("node-1", 4), resource_slice("node-2", 0)]
    settling.missing(published)
    clock.now = EMPTY_GRACE_SECONDS - 1
    assert [m for m in settling.missing(published) if "node-2" in m]
    clock.now = EMPTY_GRACE_SECONDS
    assert settling.missing(published) == []


def test_a_pool_is_published_once_all_its_slices_of_its_newest_generation_are() -> None:
    clock = Clock()
    settling = Settling("d", ["node-1"], clock)
    first = [resource_slice("node-1", 4, "p", generation=2, count=2), resource_slice("node-1", 4, "p", generation=1, count=1)]
    settling.missing(first)
    clock.now = 10
    assert settling.missing(first) == ["d pool p: 1 of 2 slices of generation 2"]
    both = first[:1] + [resource_slice("node-1", 4, "p", generation=2, count=2)]
    settling.missing(both)
    clock.now = 10 + SETTLE_SECONDS
    assert settling.missing(both) == []
