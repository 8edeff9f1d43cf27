"""What the MD and ST checks derive from the driver's ResourceSlices and the cluster's claims
(MUT-02): the room each node has (suites/framework/slices.py), the metadata reader's shape and
when a check SKIPs (suites/device_metadata/scenario.py), the ST claim's size and node
(suites/resource_claim_status/checks.py), and attribute names qualified to the driver's domain
(MD-03). The objects are shaped as the reference drivers' variants publish them."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from basics.errors import LabBroken
from drivers_under_test.profile import load_profile
from suites.device_metadata import scenario
from suites.device_metadata.scenario import FULL, ONE_DEVICE, SEVERAL_DEVICES, TWO_REQUESTS, Readers, Request, Shape
from suites.framework import slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.verdicts import Blocked
from suites.framework.waits import DriverTimedOut, WaitTimeout
from suites.resource_claim_status import checks

GPU = "gpu.dralab.dev"


def gpu_device(index: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "index": {"int": index},
            "model": {"string": "A100-SXM4-80GB"},
            "driverVersion": {"version": "1.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x1B + index:02x}:00.0"},
        },
    }


def resource_slice(node: str, pool: str, devices: list[dict[str, Any]], count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{GPU}-{pool.rpartition('/')[2]}"},
        "spec": {"driver": GPU, "nodeName": node, "devices": devices, "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}},
    }


def claim(name: str, results: list[tuple[str, str]]) -> dict[str, Any]:
    """A claim the scheduler allocated (pool, device) of the GPU driver to."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "md"},
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "req0", "driver": GPU, "pool": pool, "device": device} for pool, device in results]}
            }
        },
    }


# one-device-per-node: one GPU per node; node-1's held by a claim
ONE_PER_NODE = [resource_slice("node-1", "node-1", [gpu_device(0)]), resource_slice("node-2", "node-2", [gpu_device(0)])]
# several-pools: node-1's GPUs in node-1/pool-0 and node-1/pool-1
SEVERAL_POOLS = [
    resource_slice("node-1", "node-1/pool-0", [gpu_device(0), gpu_device(2)]),
    resource_slice("node-1", "node-1/pool-1", [gpu_device(1), gpu_device(3)]),
]


class FakeCustomObjects:
    """CustomObjectsApi answering from recorded objects."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> dict[str, Any]:
        return {"items": self.objects.get(plural, [])}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[dict[str, Any]]]:
    """The recorded ResourceSlices and ResourceClaims `slices` reads (fill in per test); room
    waits do not wait."""
    objects: dict[str, list[dict[str, Any]]] = {"resourceslices": [], "resourceclaims": []}
    monkeypatch.setattr(slices.client, "CustomObjectsApi", lambda api: FakeCustomObjects(objects))

    def no_wait(what: str, check: Any, timeout: float = 0, interval: float = 0) -> Any:
        if found := check():
            return found
        raise WaitTimeout(what)

    monkeypatch.setattr(slices, "wait_for", no_wait)
    return objects


# The room -------------------------------------------------------------------------------------


def test_room_counts_published_and_free_devices_per_node(cluster) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    cluster["resourceclaims"] = [claim("held", [("node-1", "gpu-0")])]
    room = slices.room(None, GPU)
    assert (room.published, room.free) == ({"node-1": 1, "node-2": 1}, {"node-2": 1})
    assert (room.most_published, room.most_free) == (1, 1)
    assert room.nodes_with(1, ["node-1", "node-2"]) == ["node-2"]


def test_several_pools_on_one_node_add_up() -> None:
    devices = [
        slices.Device(GPU, s["spec"]["pool"]["name"], d["name"], s["spec"]["nodeName"], d["attributes"])
        for s in SEVERAL_POOLS
        for d in s["spec"]["devices"]
    ]
    # gpu-0 exists in both pools: only the one of node-1/pool-0 is held
    room = slices.room_of(GPU, devices, {(GPU, "node-1/pool-0", "gpu-0")})
    assert (room.most_published, room.most_free) == (4, 3)


def test_devices_not_bound_to_a_node_count_for_every_node() -> None:
    devices = [slices.Device(GPU, "fabric", "gpu-9", "", {}), slices.Device(GPU, "node-1", "gpu-0", "node-1", {})]
    room = slices.room_of(GPU, devices, set())
    assert room.free_on("node-1") == 2 and room.most_free == 2


def test_a_lack_names_the_driver_the_counts_and_the_need(cluster) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    cluster["resourceclaims"] = [claim("held", [("node-1", "gpu-0")])]
    with pytest.raises(pytest.skip.Exception) as skipped:
        slices.require_room(None, GPU, 2, "MD-06 (a request for 2 devices)")
    assert str(skipped.value) == (
        "gpu.dralab.dev publishes at most 1 device(s) on one node and has at most 1 free on one node "
        "(free/published devices of gpu.dralab.dev per node: node-1 0/1, node-2 1/1); "
        f"MD-06 (a request for 2 devices) needs 2 on one node; {slices.MORE_DEVICES}"
    )


def test_nothing_published_is_a_lack_too(cluster) -> None:
    with pytest.raises(pytest.skip.Exception, match="none published.*needs 1 on one node"):
        slices.require_room(None, GPU, 1, "scenario single")


# Attribute names (MD-03) ----------------------------------------------------------------------


def test_bare_names_are_in_the_drivers_domain_and_the_qualified_form_wins() -> None:
    attrs = {
        "index": {"int": 0},
        f"{GPU}/model": {"string": "A100"},
        "model": {"string": "H100"},
        "dralab.dev/index": {"int": 7},
        "resource.kubernetes.io/pciBusID": {"string": "0000:1b:00.0"},
    }
    assert slices.qualified(attrs, GPU) == {
        f"{GPU}/index": {"int": 0},
        f"{GPU}/model": {"string": "A100"},
        "dralab.dev/index": {"int": 7},
        "resource.kubernetes.io/pciBusID": {"string": "0000:1b:00.0"},
    }
    # attribute-domain's dralab.dev/index is another attribute than the driver's own index
    assert slices.qualified_name("index", GPU) != "dralab.dev/index"


# The metadata reader's shape ------------------------------------------------------------------


@pytest.mark.parametrize(
    "need,most_free,want",
    [
        (ONE_DEVICE, 8, FULL),
        (TWO_REQUESTS, 8, FULL),
        (SEVERAL_DEVICES, 8, FULL),  # the reference drivers: one reader
        (ONE_DEVICE, 2, TWO_REQUESTS),
        (SEVERAL_DEVICES, 2, SEVERAL_DEVICES),
        (TWO_REQUESTS, 2, TWO_REQUESTS),
        (ONE_DEVICE, 1, ONE_DEVICE),
        (TWO_REQUESTS, 1, None),
        (SEVERAL_DEVICES, 1, None),
        (ONE_DEVICE, 0, None),
    ],
)
def test_the_largest_shape_a_node_holds_that_serves_the_check(need: Shape, most_free: int, want: Shape | None) -> None:
    assert scenario.shape_for(need, most_free) == want


def test_which_shapes_serve_which_checks() -> None:
    assert scenario.serves(FULL, SEVERAL_DEVICES) and scenario.serves(FULL, TWO_REQUESTS)
    assert not scenario.serves(TWO_REQUESTS, SEVERAL_DEVICES) and not scenario.serves(SEVERAL_DEVICES, TWO_REQUESTS)
    assert not scenario.serves(ONE_DEVICE, TWO_REQUESTS)


class Built:
    """What Readers built: (namespace, shape) per reader; each reader takes its devices on node-1,
    then node-2 (recorded as claims, as the scheduler would allocate them)."""

    def __init__(self, cluster: dict[str, list[dict[str, Any]]]) -> None:
        self.cluster, self.readers = cluster, []

    def build(self, lab, api, files, driver, namespace: str, shape: Shape) -> scenario.Scenario:
        node = next(n for n in ("node-1", "node-2") if len(slices.free(api, driver.name, n)) >= sum(shape))
        taken = [(d.pool, d.name) for d in slices.free(api, driver.name, node)[: sum(shape)]]
        self.cluster["resourceclaims"].append(claim(f"reader-{len(self.readers)}", taken))
        self.readers.append((namespace, shape))
        requests = tuple(Request(f"req{i}", n, f"c{i}") for i, n in enumerate(shape))
        return scenario.Scenario(lab, api, files, driver, namespace, "reader", "reader", requests=requests)


@pytest.fixture
def built(cluster, monkeypatch: pytest.MonkeyPatch) -> Built:
    found = Built(cluster)
    monkeypatch.setattr(scenario, "metadata_reader", found.build)

    @contextlib.contextmanager
    def fresh(api, prefix: str) -> Iterator[str]:
        yield f"{prefix}-own"

    monkeypatch.setattr(scenario.namespaces, "fresh", fresh)
    return found


def readers() -> Readers:
    return Readers(None, None, None, DriverUnderTest(load_profile("gpu"), "one-device-per-node"), "md-module")


def test_one_device_per_node_shares_a_one_device_reader_and_skips_what_needs_two(built: Built, cluster) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    r = readers()
    with r.serving(ONE_DEVICE, "MD-01") as first, r.serving(ONE_DEVICE, "MD-19") as last:
        assert first is last and first.shape == ONE_DEVICE
    with pytest.raises(
        pytest.skip.Exception,
        match=r"at most 1 device\(s\) on one node .* MD-04 \(a request for 1 "
        r"device and a request for 1 device\) needs 2 on one node",
    ):
        with r.serving(TWO_REQUESTS, "MD-04"):
            pass
    with pytest.raises(pytest.skip.Exception, match=r"MD-06 \(a request for 2 devices\) needs 2 on one node"):
        with r.serving(SEVERAL_DEVICES, "MD-06"):
            pass
    assert built.readers == [("md-module", ONE_DEVICE)]


def test_a_check_the_shared_reader_does_not_serve_gets_its_own_where_a_node_has_room(built: Built, cluster) -> None:
    # two GPUs per node: the shared reader (two requests) fills node-1, MD-06's own reader goes to node-2
    cluster["resourceslices"] = [resource_slice(n, n, [gpu_device(0), gpu_device(1)]) for n in ("node-1", "node-2")]
    cluster["resourceclaims"] = []
    r = readers()
    with r.serving(ONE_DEVICE, "MD-01") as shared:
        assert shared.shape == TWO_REQUESTS
    with r.serving(TWO_REQUESTS, "MD-04") as same:
        assert same is shared
    with r.serving(SEVERAL_DEVICES, "MD-06") as own:
        assert own.shape == SEVERAL_DEVICES
    assert built.readers == [("md-module", TWO_REQUESTS), ("md-own", SEVERAL_DEVICES)]


def test_a_shared_reader_the_driver_failed_fails_the_first_check_and_blocks_the_others(
    built: Built, cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SR-IOV DRA driver refused every prepare: MD-01 to MD-12 each FAILed with the same refusal."""
    cluster["resourceslices"] = ONE_PER_NODE
    calls = []

    def refused(*args: Any) -> scenario.Scenario:
        calls.append(args)
        raise AssertionError("the DRA driver refused to prepare its claim")

    monkeypatch.setattr(scenario, "metadata_reader", refused)
    r = readers()
    with pytest.raises(AssertionError, match="refused to prepare"):
        with r.serving(ONE_DEVICE, "MD-01"):
            pass
    with pytest.raises(Blocked, match="blocked by MD-01: .*refused to prepare") as blocked:
        with r.serving(ONE_DEVICE, "MD-02"):
            pass
    assert blocked.value.by == "MD-01" and len(calls) == 1


def test_a_shared_reader_failed_without_words_still_blocks_naming_the_failure(
    built: Built, cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    monkeypatch.setattr(scenario, "metadata_reader", lambda *a: (_ for _ in ()).throw(DriverTimedOut()))
    r = readers()
    with pytest.raises(DriverTimedOut):
        with r.serving(ONE_DEVICE, "MD-01"):
            pass
    with pytest.raises(Blocked, match="blocked by MD-01: .*DriverTimedOut"):
        with r.serving(ONE_DEVICE, "MD-02"):
            pass


def test_a_shared_reader_the_lab_failed_is_the_labs_error_for_every_check(built: Built, cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    monkeypatch.setattr(scenario, "metadata_reader", lambda *a: (_ for _ in ()).throw(LabBroken("containerd down")))
    r = readers()
    for what in ("MD-01", "MD-02"):
        with pytest.raises(LabBroken):
            with r.serving(ONE_DEVICE, what):
                pass


# The ST checks' claim and node ----------------------------------------------------------------


def test_status_is_observed_on_two_devices_where_a_node_has_them(cluster) -> None:
    cluster["resourceslices"] = [resource_slice("node-1", "node-1", [gpu_device(0), gpu_device(1)])]
    assert checks.devices_to_observe(None, DriverUnderTest(load_profile("gpu"), "status-first-device")) == 2
    cluster["resourceslices"] = ONE_PER_NODE
    assert checks.devices_to_observe(None, DriverUnderTest(load_profile("gpu"), "one-device-per-node")) == 1


def test_a_claim_config_for_one_device_goes_to_the_first_of_the_status_claims_two_requests(cluster) -> None:
    net = DriverUnderTest(load_profile("net"))
    cluster["resourceslices"] = [
        {**s, "spec": {**s["spec"], "driver": net.name}} for s in [resource_slice("node-1", "node-1", [gpu_device(0), gpu_device(1)])]
    ]
    assert net.profile.claim_config is not None and checks.devices_to_observe(None, net) == 2
    built = net.claim("status", requests=checks.REQUESTS).build()["spec"]["devices"]
    assert [(r["name"], r["exactly"]["count"]) for r in built["requests"]] == [("dev", 1), ("more", 1)]
    assert built["config"] == [{"opaque": {"driver": net.name, "parameters": net.profile.claim_config}, "requests": ["dev"]}], (
        "one interface's config: for one device, so never for both (dranet refuses a second net1)"
    )


LAB = SimpleNamespace(nodes=[SimpleNamespace(name=n) for n in ("node-1", "node-2")])


def test_the_claim_before_prepare_goes_to_a_node_with_a_free_device(cluster) -> None:
    cluster["resourceslices"] = ONE_PER_NODE
    cluster["resourceclaims"] = [claim("status", [("node-1", "gpu-0")])]  # ST-01's other claim holds node-1's GPU
    gpu = DriverUnderTest(load_profile("gpu"), "one-device-per-node")
    assert checks._node_with_a_free_device(LAB, None, gpu) == "node-2"
    cluster["resourceclaims"].append(claim("other", [("node-2", "gpu-0")]))
    with pytest.raises(pytest.skip.Exception, match="has at most 0 free on one node"):
        checks._node_with_a_free_device(LAB, None, gpu)
