"""The generated pod shapes (suites/kubelet_plugin/generated.py): within a node's devices, every
container's claims exist in the pod, and the case YAML applies as the pod and claims it shows."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from basics.errors import LabBroken
from drivers_under_test.profile import load_profile
from suites.framework.drivers import DriverUnderTest
from suites.kubelet_plugin import generated
from suites.kubelet_plugin.generated import PodShape, explore, pod_shapes

GPU = DriverUnderTest(load_profile("gpu"))
# Drawing is slow on a machine busy with a lab: what is checked here is what is drawn, not how fast.
LOADED = [HealthCheck.too_slow, HealthCheck.filter_too_much]


@settings(max_examples=50, deadline=None, suppress_health_check=LOADED)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), pod_shapes(n))))
def test_shapes_fit_the_node_and_reference_only_their_own_claims(drawn: tuple[int, PodShape]) -> None:
    max_devices, shape = drawn
    assert 1 <= shape.devices <= max_devices
    objects = list(yaml.safe_load_all(shape.manifests(GPU, "gen-0")))
    made = {o["metadata"]["name"]: o for o in objects if o["kind"] != "Pod"}
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == shape.pods("gen-0")
    assert len(made) == shape.copies * len(shape.claims)
    assert all(n.startswith("gen-0-") for n in made)
    for pod in pods:
        refs = {c["name"]: c.get("resourceClaimName") or c["resourceClaimTemplateName"] for c in pod["spec"]["resourceClaims"]}
        kinds = {made[n]["kind"] for n in refs.values()}
        assert kinds <= ({"ResourceClaim"} if "-s" in pod["metadata"]["name"] else {"ResourceClaim", "ResourceClaimTemplate"})
        requests = {
            c: {r["name"] for r in (made[n]["spec"].get("spec") or made[n]["spec"])["devices"]["requests"]} for c, n in refs.items()
        }
        containers = pod["spec"]["containers"] + pod["spec"].get("initContainers", [])
        assert len(pod["spec"].get("initContainers", [])) == (shape.init and "-s" not in pod["metadata"]["name"])
        # Every container prints the metadata files it finds (the MD checks over the run judge them).
        assert [c["command"] for c in pod["spec"].get("initContainers", [])] in ([], [generated.INIT_COMMAND])
        assert all(c["command"] == generated.COMMAND for c in pod["spec"]["containers"])
        for container in containers:
            used = container["resources"]["claims"]
            for ref in used:
                assert ref["name"] in refs and ref.get("request", "r0") in requests[ref["name"]]
            whole = {r["name"] for r in used if "request" not in r}
            assert not any(r["name"] in whole for r in used if "request" in r), "a claim used whole and by request"
    shared = [n for p in pods if "-s" in p["metadata"]["name"] for c in p["spec"]["resourceClaims"] for n in [c["resourceClaimName"]]]
    assert all(made[n]["kind"] == "ResourceClaim" for n in shared)


def test_more_devices_than_a_node_has_are_never_drawn() -> None:
    @settings(max_examples=30, deadline=None, suppress_health_check=LOADED)
    @given(pod_shapes(1))
    def one_device(shape: PodShape) -> None:
        assert shape.claims == ((1,),)

    one_device()


NET = DriverUnderTest(load_profile("net"))


def test_a_profile_with_a_claim_config_configures_one_device_a_pod_and_gets_claims_of_several() -> None:
    several = set()

    @settings(max_examples=40, deadline=None, suppress_health_check=LOADED, database=None, derandomize=True)
    @given(pod_shapes(8, configured=True))
    def one(shape: PodShape) -> None:
        assert shape.claims[0][0] == 1 and shape.sharers == 0
        several.add(max(map(sum, shape.claims)) > 1)
        objects = list(yaml.safe_load_all(shape.manifests(NET, "gen-0")))
        configs = [
            (o["metadata"]["name"], c)
            for o in objects
            if o["kind"] != "Pod"
            for c in (o["spec"].get("spec") or o["spec"])["devices"].get("config", [])
        ]
        # its interface name, say: one device of each pod (of each copy)
        first = [o["metadata"]["name"] for o in objects if o["kind"] != "Pod" and o["metadata"]["name"].endswith(("-c0", "-t0"))]
        assert configs == [
            (name, {"opaque": {"driver": NET.name, "parameters": NET.profile.claim_config}, "requests": ["r0"]}) for name in first
        ]

    one()
    assert several == {False, True}, "claims of several devices of the driver too: ST-02 and MD-16 tell each device's interface apart"


def test_a_profile_whose_claims_serve_one_pod_gets_no_shared_claim() -> None:
    seen = {True: set(), False: set()}

    @settings(max_examples=60, deadline=None, suppress_health_check=LOADED, database=None, derandomize=True)
    @given(pod_shapes(8), pod_shapes(8, shared=False))
    def drawn(shareable: PodShape, one_pod: PodShape) -> None:
        seen[True].add(shareable.sharers)
        seen[False].add(one_pod.sharers)

    drawn()
    assert seen == {True: {0, 1}, False: {0}}


def test_a_profile_whose_claims_serve_one_container_gets_no_claim_in_two_containers() -> None:
    seen = {True: set(), False: set()}

    @settings(max_examples=60, deadline=None, suppress_health_check=LOADED, database=None, derandomize=True)
    @given(pod_shapes(8), pod_shapes(8, one_container=True))
    def drawn(any_shape: PodShape, one_container: PodShape) -> None:
        for shape, alone in ((any_shape, False), (one_container, True)):
            users = [sum(any(c == claim for c, _ in uses) for uses in shape.containers) for claim in range(len(shape.claims))]
            seen[alone].add(max(users))
        assert one_container.sharers == 0

    drawn()
    assert seen[True] == {0, 1} and 2 in seen[False]


def test_a_failing_shape_is_shrunk_once_tried_and_its_failure_returned(monkeypatch) -> None:
    tried: list[PodShape] = []

    def attempt(shape: PodShape) -> str | None:  # a driver that fails any pod of two or more claims
        tried.append(shape)
        return f"{len(shape.claims)} claims: did not start" if len(shape.claims) >= 2 else None

    failure = explore(pod_shapes(8), seed=4, budget=30, attempt=attempt)
    assert failure == "2 claims: did not start"  # shrunk from whatever failed first
    assert len(tried) == len(set(tried)), "a shape is started once; hypothesis's replays get its failure"
    assert explore(pod_shapes(8), seed=4, budget=30, attempt=lambda shape: None) is None


def test_shrinking_stops_when_its_time_is_up(monkeypatch) -> None:
    monkeypatch.setattr(generated, "SHRINK_SECONDS", -1)  # up at once: the first failing shape is the case
    tried: list[PodShape] = []

    def attempt(shape: PodShape) -> str | None:
        tried.append(shape)
        return f"{shape}" if len(shape.claims) >= 2 else None

    failure = explore(pod_shapes(8), seed=4, budget=30, attempt=attempt)
    failing = [s for s in tried if len(s.claims) >= 2]
    assert failing == [failing[0]] and failure == str(failing[0])


def test_a_broken_lab_ends_the_exploration_at_once_with_its_own_error() -> None:
    tried: list[PodShape] = []

    def attempt(shape: PodShape) -> str | None:
        tried.append(shape)
        if len(tried) == 3:
            raise LabBroken("lab component node-1-kubelet is down")
        return None

    with pytest.raises(LabBroken, match="node-1-kubelet is down"):
        explore(pod_shapes(8), seed=4, budget=30, attempt=attempt)
    assert len(tried) == 3, "no shape is tried, nor the failing one replayed, on a broken lab"


def test_a_lab_that_breaks_while_shrinking_keeps_the_failure_seen_before() -> None:
    tried: list[PodShape] = []

    def attempt(shape: PodShape) -> str | None:
        tried.append(shape)
        if any(len(s.claims) >= 2 for s in tried[:-1]):  # shrinking has begun: the lab breaks
            raise LabBroken("lab component node-1-kubelet is down")
        return "did not start" if len(shape.claims) >= 2 else None

    assert explore(pod_shapes(8), seed=4, budget=30, attempt=attempt) == "did not start"
    first_failing = next(i for i, s in enumerate(tried) if len(s.claims) >= 2)
    assert len(tried) == first_failing + 2, "one shape more (the lab broke under it), then none"


def test_the_same_seed_draws_the_same_shapes_in_the_same_order() -> None:
    runs: list[list[PodShape]] = [[], []]
    for tried in runs:
        explore(pod_shapes(8), seed=1234, budget=10, attempt=lambda shape, tried=tried: tried.append(shape))
    assert runs[0] == runs[1] and len(runs[0]) == 10


def test_what_restarts_is_one_the_lab_can_restart_and_bursts_fit_the_node() -> None:
    seen: set[str | None] = set()

    @settings(max_examples=60, deadline=None, suppress_health_check=LOADED)
    @given(pod_shapes(8, restarted=("driver",)))
    def driver_only(shape: PodShape) -> None:
        seen.add(shape.restart)
        assert shape.restart in (None, "driver")
        assert 1 <= shape.copies <= generated.MAX_COPIES and shape.devices <= 8

    driver_only()
    assert seen == {None, "driver"}
    drawn: list[PodShape] = []
    explore(pod_shapes(8), seed=2, budget=40, attempt=lambda shape: drawn.append(shape))
    assert {s.restart for s in drawn} == {None, *generated.RESTARTED}
    assert max(s.copies for s in drawn) > 2, "a burst of more than two pods at once"


def test_claims_of_two_drivers_ask_the_second_for_one_device_within_its_room() -> None:
    other = DriverUnderTest(load_profile("gpu").second_instance("b"))
    seen: list[PodShape] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=LOADED)
    @given(pod_shapes(8, other_devices=2))
    def two_drivers(shape: PodShape) -> None:
        seen.append(shape)
        assert shape.others <= set(range(len(shape.claims))) and len(shape.others) * shape.copies <= 2
        made = [o for o in shape.objects(GPU, "gen-0", other) if o["kind"] != "Pod"]
        for claim in made:
            requests = (claim["spec"].get("spec") or claim["spec"])["devices"]["requests"]
            theirs = [r for r in requests if r["exactly"]["deviceClassName"] == other.device_class]
            assert len(theirs) == (int(claim["metadata"]["name"][-1]) in shape.others)

    two_drivers()
    assert any(s.others for s in seen)
    with pytest.raises(ValueError, match="second driver"):
        next(s for s in seen if s.others).objects(GPU, "gen-0")
    alone: list[PodShape] = []
    explore(pod_shapes(8), seed=1, budget=30, attempt=lambda shape: alone.append(shape))
    assert not any(s.others for s in alone), "no second driver's device without its room"


def test_a_failure_over_the_run_gets_the_manifests_of_the_generated_shapes_it_names() -> None:
    run = generated.Run(seed=1, budget=10, namespace="gen-2efe5def", manifests={"gen-3": "kind: Pod\n", "gen-12": "kind: Pod # 12\n"})
    other = generated.Run(seed=1, budget=10, namespace="gen-0a0b0c0d", manifests={"gen-3": "kind: Pod # other\n"})
    text = (
        "claim gen-2efe5def/gen-3-c1 (58ac0235): answered device(s) ...\n"
        "container main of pod gen-2efe5def/gen-12 on node-1 ...; pod gen-2efe5def/gen-3-s1 again"
    )
    assert generated.cases_named([run, other], text) == {"gen-2efe5def/gen-3": "kind: Pod\n", "gen-2efe5def/gen-12": "kind: Pod # 12\n"}
    assert generated.cases_named([run], "gen-3 of another namespace: gen-9/gen-3") == {}
    assert len(generated.cases_named([run], text, most=1)) == 1


def test_a_container_often_uses_one_request_of_a_claim_of_several_alone() -> None:
    """MD-04's subject: one request of a claim alone, the other's file absent."""
    drawn: list[PodShape] = []
    explore(pod_shapes(8), seed=1, budget=30, attempt=lambda shape: drawn.append(shape))
    alone = [
        s
        for s in drawn
        if any(
            len(s.claims[c]) > 1 and [u for u in used if u[0] == c] == [(c, r)] for used in s.containers for c, r in used if r is not None
        )
    ]
    assert len(alone) >= 10, f"{len(alone)} of {len(drawn)} shapes have a container using one request of several alone"


def test_the_suites_attach_the_named_generated_case_to_a_fail_through_the_plugins_hook(pytestconfig) -> None:
    """The plugin asks its hook, which the suites' conftest implements: it imports no suite itself."""
    from types import SimpleNamespace

    from suites import conftest as suites_conftest

    run = generated.Run(seed=1, budget=10, namespace="gen-2efe5def", manifests={"gen-3": "kind: Pod\n"})
    item = SimpleNamespace(config=SimpleNamespace(stash={generated.RUNS: {"gpu": run}}))
    assert suites_conftest.pytest_dralab_fail_attachments(item, "pod gen-2efe5def/gen-3 did not start") == [
        ("the generated case gen-2efe5def/gen-3, to apply", "kind: Pod\n")
    ]
    assert pytestconfig.pluginmanager.hook.pytest_dralab_fail_attachments.spec is not None  # the plugin declared it


def _misreports_in_a_file(shape: PodShape) -> bool:
    """Whether a container of `shape` has a metadata file listing a device of a claim of several
    other than the claim's first (its whole claim, a later request, or a request of several):
    where duplicate-network-data (every device reports the first's interface) shows, and
    swap-network-data too."""
    return any(
        sum(counts) > 1 and (r is None or r > 0 or counts[0] > 1)
        for uses in shape.containers
        for c, r in uses
        for counts in [shape.claims[c]]
    )


@pytest.mark.parametrize("seed", range(1, 6))
def test_a_network_drivers_generated_workloads_reach_the_network_data_variants(seed: int) -> None:
    tried: list[PodShape] = []
    explore(
        pod_shapes(32, configured=True, shared=False), seed=seed, budget=10, attempt=lambda shape: tried.append(shape)
    )  # --budget's default
    assert any(_misreports_in_a_file(s) for s in tried), "MD-16 over the run sees a device misreported in a file"
