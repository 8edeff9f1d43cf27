"""Generated workloads (MUT-03): pods with claims of the driver, their shapes drawn by hypothesis
over what real drivers differ on, so that the KP rules are checked on calls no fixed scenario
makes: several claims per pod (one NodePrepareResources with all of them), several requests per
claim and devices per request, claims a container uses whole or by request, claims no container
uses, several containers, bursts of pods, claims of two drivers, restarts under running pods.
The checks over the recorded calls (contract.py) judge what the driver answered, the MD checks
over what the containers found (suites/device_metadata/in_containers.py) what they were given; a
pod that does not start, or does not run again after a restart, is this module's own finding,
with its shape as YAML."""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Hashable, Iterable, TypeVar

import hypothesis
import pytest
import yaml
from hypothesis import strategies as st
from kubernetes import client

from suites.framework import claims, metadata_paths, netif, pods, restarts
from suites.framework.metadata_file import dump_command, parse_dump
from suites.framework.claims import ClaimBuilder
from suites.framework.drivers import DriverUnderTest
from suites.framework.pods import PodBuilder
from suites.framework.waits import WaitTimeout, wait_for
from suites.kubelet_plugin import cpus


# How long hypothesis may shrink a failing case: each try starts a pod and may wait out its
# refusal (30 s); past this the smallest failing shape found is the case.
SHRINK_SECONDS = 150
# How long the claims of a removed shape may take to go (the resourceclaim controller deletes
# those made from templates once their pod is gone).
CLAIMS_GONE_SECONDS = 60
# What a shape may restart while its pods run: the driver, or what suites/framework/restarts.py
# restarts under a pod (where the lab lets dralab: Lab.restartable).
RESTARTED = ("driver", *restarts.RESTARTS)
# Each of RESTARTED as the messages name it.
RESTART_EVENTS = {"driver": "driver restart", **restarts.RESTARTS}
# Pods of one shape started at once, at most (a burst of prepares, where the node has the devices).
MAX_COPIES = 4
# What each container of a generated pod runs: it prints its CPUs, its network interfaces and the
# device metadata files it finds, which the checks over the trace judge (cpus.py, suites/
# device_metadata/in_containers.py, suites/resource_claim_status/test_status_over_the_run.py), then waits.
DUMP = f"{cpus.dump_command()}; {netif.dump_command()}; {dump_command(metadata_paths.CONTAINER_ROOT)}"
COMMAND = pods.until_stopped(DUMP)
INIT_COMMAND = ["sh", "-c", DUMP]  # an init container prints them and ends
# How long a started container may take to print its files.
DUMP_SECONDS = 30

F = TypeVar("F")
S = TypeVar("S", bound=Hashable)  # a shape: this module's, or another suite's


@dataclass
class Run:
    """One driver's generated workloads: the first seed, how many seeds after it (each draws
    `budget` shapes), the room a pod had, the shapes tried, the claims of the shapes whose pods
    all started (UID: namespace/name), the restarts their pods ran again after, the second driver
    of claims of two drivers (or why none), and the shrunk case of a shape that failed (the seeds
    after its own are not drawn), or why nothing was drawn; the namespace of its objects and each
    shape's manifests by its name, for a check over the run that names one (cases_named)."""

    seed: int
    budget: int
    seeds: int = 1
    capacity: int = 0
    namespace: str = ""
    manifests: dict[str, str] = field(default_factory=dict)
    tried: list[str] = field(default_factory=list)
    started: dict[str, str] = field(default_factory=dict)
    restarted: list[str] = field(default_factory=list)
    second_driver: str = "none"
    failure: Failure | None = None
    skipped: str | None = None


# The session's runs, by driver name (suites/conftest.py keeps them), for the plugin to attach the
# cases a FAIL names.
RUNS = pytest.StashKey[dict[str, Run]]()


def cases_named(runs: Iterable[Run], text: str, most: int = 3) -> dict[str, str]:
    """namespace/shape: the manifests of each generated shape that `text` (a check's failure)
    names by an object of it (namespace/gen-N, namespace/gen-N-c0, ...), at most `most`."""
    found: dict[str, str] = {}
    for run in runs:
        if not run.namespace:
            continue
        for name in re.findall(rf"\b{re.escape(run.namespace)}/(gen-\d+)\b", text):
            if name in run.manifests and len(found) < most:
                found.setdefault(f"{run.namespace}/{name}", run.manifests[name])
    return found


@dataclass(frozen=True)
class PodShape:
    """claims: each claim's requests, as device counts; containers: for each container (main
    first) what it uses, (claim, request) with request None for the whole claim; templated: the
    claims made for the pod from a ResourceClaimTemplate (deleted with it) rather than named;
    init: the second container is an init container (it exits before the others start);
    sharers: more pods using the pod's named claims whole (the kubelet prepares a claim once per
    node and unprepares it after its last pod); copies: pods of this shape started at once, each
    with claims of its own; restart: what restarts on the first pod's node while the pods run, one
    of RESTARTED: the driver (its new process then unprepares the claims), or the kubelet or
    containerd (the first pod's sandbox then made anew) or the node (its pods all made anew), so
    that the kubelet prepares the claims again; others: the claims that also request a device of
    a second driver (each driver prepares its own devices of one claim)."""

    claims: tuple[tuple[int, ...], ...]
    containers: tuple[tuple[tuple[int, int | None], ...], ...]
    templated: frozenset[int] = frozenset()
    init: bool = False
    sharers: int = 0
    copies: int = 1
    restart: str | None = None
    others: frozenset[int] = frozenset()

    @property
    def devices(self) -> int:
        return self.copies * sum(sum(c) for c in self.claims)

    def pods(self, name: str) -> list[str]:
        """The names of the pods, sharers after their copy's pod: each one `name` or starts with `name-`."""
        return [p for copy in self._copies(name) for p in (copy, *self._sharers(copy))]

    def _copies(self, name: str) -> list[str]:
        return [name if k == 0 else f"{name}-b{k}" for k in range(self.copies)]

    def _sharers(self, copy: str) -> list[str]:
        return [f"{copy}-s{j}" for j in range(1, self.sharers + 1)]

    def objects(self, driver: DriverUnderTest, name: str, other: DriverUnderTest | None = None) -> list[dict[str, Any]]:
        """The claims, templates and pods, in the order they are created; `other` is the second
        driver of the claims in `others`."""
        if self.others and other is None:
            raise ValueError(f"claims {sorted(self.others)} of shape {self} request a second driver's device: name it")
        objects: list[dict[str, Any]] = []
        for copy in self._copies(name):
            refs: list[tuple[str, dict[str, str]]] = []
            for i, counts in enumerate(self.claims):
                claim = ClaimBuilder(f"{copy}-{'t' if i in self.templated else 'c'}{i}")
                for j, count in enumerate(counts):
                    claim.request(f"r{j}", driver.device_class, count=count)
                if i in self.others:
                    claim.request("other", other.device_class)
                if i == 0 and driver.profile.claim_config is not None:
                    # It configures one device of a pod (an interface name, say): r0 of the first claim, one device.
                    claim.opaque(driver.name, driver.profile.claim_config, requests=("r0",))
                built = claim.build()
                if i in self.templated:
                    built = {
                        "apiVersion": built["apiVersion"],
                        "kind": "ResourceClaimTemplate",
                        "metadata": built["metadata"],
                        "spec": {"spec": built["spec"]},
                    }
                    refs.append((f"c{i}", {"resourceClaimTemplateName": claim.name}))
                else:
                    refs.append((f"c{i}", {"resourceClaimName": claim.name}))
                objects.append(built)
            objects.append(self._pod(copy, refs).build())
            named = [(c, ref) for c, ref in refs if "resourceClaimName" in ref]
            for sharer_name in self._sharers(copy):
                sharer = PodBuilder(sharer_name, command=list(COMMAND))
                sharer.claims = [{"name": c, **ref} for c, ref in named]
                sharer.container_claims = [{"name": c} for c, _ in named]
                objects.append(sharer.build())
        return objects

    def _pod(self, name: str, refs: list[tuple[str, dict[str, str]]]) -> PodBuilder:
        pod = PodBuilder(name, command=list(COMMAND))
        pod.claims = [{"name": c, **ref} for c, ref in refs]
        uses = [[{"name": f"c{c}", **({"request": f"r{r}"} if r is not None else {})} for c, r in used] for used in self.containers]
        pod.container_claims = uses[0]
        for k, used in enumerate(uses[1:], start=1):
            if k == 1 and self.init:
                pod.with_init_container("init", used, *INIT_COMMAND)
            else:
                pod.with_container(f"side{k}", used)
        return pod

    def manifests(self, driver: DriverUnderTest, name: str, other: DriverUnderTest | None = None) -> str:
        """The claims, templates and pods as YAML a vendor can apply to reproduce the case."""
        return yaml.dump_all(self.objects(driver, name, other), Dumper=_Plain, sort_keys=False)


class _Plain(yaml.SafeDumper):
    """Every value written out where it is (containers share their command list): no YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@st.composite
def pod_shapes(
    draw: st.DrawFn,
    max_devices: int,
    configured: bool = False,
    shared: bool = True,
    restarted: tuple[str, ...] = RESTARTED,
    other_devices: int = 0,
    one_container: bool = False,
) -> PodShape:
    """Shapes needing at most `max_devices` devices of the driver (what one node has free); with
    `configured`, request r0 of the first claim for one device (the one a profile's claimConfig
    configures in a pod: its interface name, say) and no sharers; without `shared`, no sharers (the profile
    declares that a claim serves one pod); with `one_container`, each claim used by one container
    at most and no sharers (the profile declares that a claim serves one container); `restarted`, what may restart (the
    driver alone where dralab cannot reach the nodes); at most `other_devices` of a second
    driver (free on that node). Each dimension shrinks to the plainest case (named claims, no
    init container, no sharer, one copy, no restart, then the driver's, no second driver)."""
    counts: list[tuple[int, ...]] = draw(
        st.lists(st.lists(st.integers(1, 2), min_size=1, max_size=2).map(tuple), min_size=1, max_size=3)
        .map(lambda cs: [(1, *cs[0][1:]), *cs[1:]] if configured else cs)
        .filter(lambda cs: sum(map(sum, cs)) <= max_devices)
    )

    # Each container takes of each claim nothing, the whole claim, one request (twice as likely:
    # MD-04's subject, which a list drawn from all the uses made rare) or each request by name;
    # never a claim whole and by request (the API server refuses the mix).
    def of_claim(c: int, requests: tuple[int, ...]) -> st.SearchStrategy[tuple[tuple[int, int | None], ...]]:
        singles = [((c, r),) for r in range(len(requests))]
        every = [tuple((c, r) for r in range(len(requests)))] if len(requests) > 1 else []
        return st.sampled_from([(), ((c, None),), *singles, *singles, *every])

    if one_container:
        # Each claim's uses go to one container, drawn for it.
        width = draw(st.integers(1, 3))
        owned = [(draw(st.integers(0, width - 1)), draw(of_claim(c, requests))) for c, requests in enumerate(counts)]
        containers = tuple(tuple(use for owner, uses in owned if owner == k for use in uses) for k in range(width))
    else:
        container = st.tuples(*(of_claim(c, requests) for c, requests in enumerate(counts))).map(
            lambda per_claim: tuple(use for uses in per_claim for use in uses)
        )
        containers = draw(st.lists(container, min_size=1, max_size=3).map(tuple))
    templated = frozenset(draw(st.sets(st.sampled_from(range(len(counts))))))
    init = len(containers) > 1 and draw(st.booleans())
    alone = configured or one_container or not shared
    sharers = 0 if alone or len(templated) == len(counts) else draw(st.integers(0, 1))
    copies = draw(st.integers(1, max(1, min(MAX_COPIES, max_devices // sum(map(sum, counts))))))
    # Restarts take 4 to 25 s (a node reboot the most): one shape in four.
    restart = draw(st.sampled_from(restarted)) if draw(st.booleans()) else None
    others = frozenset(draw(st.sets(st.sampled_from(range(len(counts))), max_size=other_devices // copies)))
    return PodShape(
        claims=tuple(counts),
        containers=containers,
        templated=templated,
        init=init,
        sharers=sharers,
        copies=copies,
        restart=restart,
        others=others,
    )


@dataclass(frozen=True)
class Failure:
    """Why the smallest failing shape failed, and the requirement it breaks: KP-03 for pods that
    did not start, KP-07 for pods that did not run again after a restart (DP-04 for the device
    plugin's generated pods that did not start)."""

    text: str
    requirement: str = "KP-03"

    def __str__(self) -> str:
        return self.text


def explore(shapes: st.SearchStrategy[S], seed: int, budget: int, attempt: Callable[[S], F | None]) -> F | None:
    """Try `budget` shapes drawn with `seed`; `attempt` starts one and says why it failed, if it
    did. Returns the failure of the smallest failing shape hypothesis shrank to within
    SHRINK_SECONDS of the first failure, None if every shape passed. A shape is attempted once:
    hypothesis's replays of a failing one get its failure as seen. An exception out of `attempt`
    (the lab broke, say) ends the exploration: hypothesis would replay the shape on the broken
    lab (a second node reboot) and bury the cause in a FlakyFailure. It is raised as it is,
    unless a shape failed before it, on a lab that still worked: that failure is returned."""
    failed: dict[S, F] = {}
    shrinking_since: list[float] = []
    aborted: list[Exception] = []

    @hypothesis.settings(
        max_examples=budget, deadline=None, database=None, print_blob=False, suppress_health_check=list(hypothesis.HealthCheck)
    )
    @hypothesis.seed(seed)
    @hypothesis.given(shapes)
    def one(shape: S) -> None:
        if shape not in failed:
            if aborted:  # no shape is tried on a broken lab; those that failed before still fail
                return
            if shrinking_since and time.monotonic() - shrinking_since[0] > SHRINK_SECONDS:
                return  # shrinking's time is up: the smallest failing shape so far is the case
            try:
                failure = attempt(shape)
            except Exception as e:
                aborted.append(e)
                return
            if failure is None:
                return
            failed[shape] = failure
            shrinking_since[:] = shrinking_since or [time.monotonic()]
        raise Failed(failed[shape])

    try:
        one()
    except Failed as e:
        return e.args[0]
    if aborted:
        raise aborted[0]
    return None


class Failed(Exception):
    """A shape that failed, with why (explore's own: what hypothesis shrinks on)."""


def start(api: Any, namespace: str, driver: DriverUnderTest, shape: PodShape, name: str, other: DriverUnderTest | None = None) -> None:
    resource = client.ResourceV1Api(api)
    for obj in shape.objects(driver, name, other):
        if obj["kind"] == "ResourceClaim":
            resource.create_namespaced_resource_claim(namespace, obj)  # type: ignore[arg-type]  # a dict: validate_call builds the model
        elif obj["kind"] == "ResourceClaimTemplate":
            resource.create_namespaced_resource_claim_template(namespace, obj)  # type: ignore[arg-type]  # a dict: validate_call builds the model
        else:
            pods.create(api, namespace, obj)


def files_seen(api: Any, namespace: str, pod_names: list[str], batch: str) -> list[dict[str, Any]]:
    """What each container of the started pods (init containers, ended by then, among them)
    printed of the metadata files it found at its start, of its interfaces and of its CPUs, with its
    node, the claims it uses and the pod's claims (name, claim, UID, whether made from a template),
    and `batch` (the pods ran side by side): records for Lab.record_container_files. A container
    whose print did not end within DUMP_SECONDS is left out (nothing seen, nothing judged)."""
    core, records = client.CoreV1Api(api), []
    batch = f"{namespace}/{batch} at {datetime.now(timezone.utc).isoformat()}"  # unique in the run
    for name in pod_names:
        pod = core.read_namespaced_pod(name, namespace)
        made = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses or []}
        pod_claims = []
        for ref in pod.spec.resource_claims or []:
            claim = ref.resource_claim_name or made.get(ref.name)
            uid = claims.read(api, namespace, claim)["metadata"]["uid"] if claim else None
            pod_claims.append({"name": ref.name, "claim": claim, "uid": uid, "template": ref.resource_claim_template_name is not None})
        init = {c.name for c in pod.spec.init_containers or []}
        for container in [*(pod.spec.init_containers or []), *pod.spec.containers]:

            def printed(c: str = container.name) -> tuple[dict[str, str], list[dict[str, object]] | None, list[int] | None] | None:
                log = pods.logs(api, namespace, name, container=c)
                files = parse_dump(log)  # printed last
                # None found is an answer too.
                return None if files is None else (files, netif.parse_dump(log), cpus.parse_dump(log))

            try:
                files, interfaces, cpus_allowed = wait_for(
                    f"container {container.name} of {namespace}/{name} to print its interfaces and metadata files", printed, DUMP_SECONDS
                )
            except WaitTimeout:
                continue
            uses = [{"name": c.name, "request": c.request} for c in container.resources.claims or []]
            records.append(
                {
                    "start": datetime.now(timezone.utc).isoformat(),
                    "node": pod.spec.node_name,
                    "namespace": namespace,
                    "pod": name,
                    "container": container.name,
                    "init": container.name in init,
                    "uses": uses,
                    "pod_claims": pod_claims,
                    "files": files,
                    "interfaces": interfaces,
                    "cpus": cpus_allowed,
                    "batch": batch,
                }
            )
    return records


def _ours(name: str, n: str) -> bool:
    """Whether object `n` is of the shape started as `name` (its pods, claims, templates and the
    claims made from them)."""
    return n == name or n.startswith(f"{name}-")


def claims_of(api: Any, namespace: str, name: str) -> dict[str, str]:
    """The claims of the shape started as `name`, templates' included: UID: namespace/name."""
    return {
        c["metadata"]["uid"]: f"{namespace}/{c['metadata']['name']}"
        for c in claims.listed(api, namespace)
        if _ours(name, c["metadata"]["name"])
    }


def remove(api: Any, namespace: str, name: str) -> None:
    """The pods, then the claims and templates; the claims made from templates go with their pods
    (the kubelet unprepares each claim once its last pod is gone). Waits until no claim of the
    shape is left, so that the next shape finds the devices free."""
    core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
    ours = functools.partial(_ours, name)
    listed: list[Any] = core.list_namespaced_pod(namespace).items  # Any: metadata.name, Optional in the client, is set
    pods.delete(api, namespace, [p.metadata.name for p in listed if ours(p.metadata.name)])
    templates: list[Any] = resource.list_namespaced_resource_claim_template(namespace).items  # the same
    for template in templates:
        if ours(template.metadata.name):
            resource.delete_namespaced_resource_claim_template(template.metadata.name, namespace)
    for claim in claims.listed(api, namespace):
        if ours(claim["metadata"]["name"]) and "ownerReferences" not in claim["metadata"]:  # not a template's
            resource.delete_namespaced_resource_claim(claim["metadata"]["name"], namespace)
    wait_for(f"the claims of {name} gone", lambda: not claims_of(api, namespace, name), CLAIMS_GONE_SECONDS)
