"""The scenarios the MD checks observe.

A metadata reader (`metadata_reader`) is a named claim with requests `req0`, `req1`, ... of a
shape (devices per request: (2, 1) is req0 with two devices and req1 with one), and a pod with an
init container and a sidecar that use the whole claim and a container `c<i>` per request that
uses only `req<i>`. The shape is derived from the devices the driver's ResourceSlices leave free
(`Readers`). What the checks read comes from where users meet it: commands in the containers,
the node's files (through NodeFiles) and the API.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from clusters.providers import Lab
from suites.framework import claims, metadata_paths, namespaces, pods, slices, workload
from suites.framework.claims import ClaimBuilder
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.metadata_file import MetadataStream, parse_stream
from suites.framework.node_files import NodeFiles
from suites.framework.verdicts import Blocked, require

SLEEP = pods.until_stopped()
LIST_FILES = f"find {metadata_paths.CONTAINER_ROOT} -type f 2>/dev/null | sort"  # an init container's log


def container(name: str, command: list[str], claim: str, requests: tuple[str, ...] = ()) -> dict[str, Any]:
    refs = [{"name": claim, "request": r} for r in requests] or [{"name": claim}]
    return {"name": name, **workload.container_image(), "command": command, "resources": {"claims": refs}}


@dataclass(frozen=True)
class Request:
    """A request of the scenario's claim: its name, the devices it asks for, the container that
    uses it alone."""

    name: str
    count: int
    container: str


DEV = (Request("dev", 1, "main"),)  # a one-device claim used by container `main`

Shape = tuple[int, ...]  # devices per request of a metadata reader: req0, req1, ...

ONE_DEVICE: Shape = (1,)  # what MD-01/02/03/10/11/12/19 need
TWO_REQUESTS: Shape = (1, 1)  # MD-04, MD-05
SEVERAL_DEVICES: Shape = (2,)  # MD-06: one request for two devices
FULL: Shape = (2, 1)  # serves every MD check on a metadata reader
# Largest first: of those that serve a check, the first a node has room for is built.
SHAPES: tuple[Shape, ...] = (FULL, TWO_REQUESTS, SEVERAL_DEVICES, ONE_DEVICE)


@dataclass
class Scenario:
    lab: Lab
    api: Any
    files: NodeFiles | None  # None: a scenario that reads no node's files
    driver: DriverUnderTest
    namespace: str
    pod: str
    claim_name: str
    node: str = ""
    claim: dict[str, Any] = field(default_factory=dict)
    requests: tuple[Request, ...] = DEV

    @property
    def shape(self) -> Shape:
        return tuple(r.count for r in self.requests)

    def start(self, pod: dict[str, Any]) -> "Scenario":
        pods.create(self.api, self.namespace, pod)
        self.node = pods.wait_phase(self.api, self.namespace, self.pod).spec.node_name  # type: ignore[assignment]  # Running: set
        self.claim = claims.read(self.api, self.namespace, self.claim_name)
        return self

    @property
    def uid(self) -> str:
        return self.claim["metadata"]["uid"]

    @property
    def kubelet_root(self) -> str:
        return self.lab.node(self.node).kubelet_root_dir

    def observe(self, container_name: str, script: str) -> str | None:
        """pods.observe in one of the pod's containers."""
        return pods.observe(self.lab, self.namespace, self.pod, script, container=container_name)

    def listed_in(self, container_name: str, *roots: str, only_files: bool = False) -> list[str]:
        """The paths under `roots` in a container, sorted (a root that does not exist has none)."""
        kind = " -type f" if only_files else ""
        script = "".join(f"if [ -e {r} ]; then find {r}{kind}; fi; " for r in roots)
        return sorted((self.observe(container_name, script) or "").split())

    def read_in(self, container_name: str, path: str) -> str | None:
        """The file's content in the container, None if it has no such file."""
        return self.observe(container_name, f"{pods.absent_unless(path)}cat {path}")

    def stream_in(self, container_name: str, request: str, template: bool = False) -> MetadataStream:
        claim_dir = self.pod_claim_name if template else self.claim_name
        text = self.read_in(container_name, metadata_paths.in_container(claim_dir, request, self.driver.name, template))
        assert text is not None, f"no metadata file for request {request} in container {container_name}"
        return parse_stream(text)

    @property
    def pod_claim_name(self) -> str:
        return self.claim["metadata"].get("annotations", {}).get("resource.kubernetes.io/pod-claim-name", "")

    def allocated(self, request: str) -> list[tuple[str, str, str]]:
        """(driver, pool, device) of this driver's results for a request (subrequests included)."""
        return [
            (r["driver"], r["pool"], r["device"])
            for r in claims.allocated(self.claim, self.driver.name)
            if r["request"].split("/")[0] == request
        ]

    def host_file(self, request: str) -> str:
        return metadata_paths.on_node(self.kubelet_root, self.driver.name, self.namespace, self.claim_name, request)

    def cdi_dirs(self, ev: Evidence) -> tuple[str, ...]:
        """The dirs the node's containerd reads CDI specs from, observed; SKIP when it has CDI off."""
        found = self.files.cdi_dirs(self.node)
        ev.observe(f"CDI spec dirs of {self.node}", found.describe())
        require(
            found.enabled,
            f"containerd on {self.node} does not use CDI ({found.source})",
            "set enable_cdi = true in its CRI runtime plugin's configuration: without CDI no device metadata reaches a container",
        )
        return found.dirs

    def cdi_spec(self, dirs: tuple[str, ...], request: str) -> tuple[str, str] | None:
        """(path, content) of the claim's metadata CDI spec for `request` in whichever of `dirs` holds it."""
        return self.files.find(self.node, dirs, metadata_paths.cdi_spec_name(self.driver.name, self.uid, request))

    def cdi_specs(self, dirs: tuple[str, ...], driver: str) -> list[str]:
        """Every metadata CDI spec of `driver` for this claim in `dirs`."""
        return [f for d in dirs for f in self.files.glob(self.node, f"{d}/{metadata_paths.cdi_spec_name(driver, self.uid, '*')}")]

    def slice_attributes(self) -> slices.Published:
        return slices.attributes(self.api, self.driver.name)


# A UID starts with a digit 10 times in 16: the chance that this many claims all miss a wanted
# kind of first character is below 1e-8.
UID_ATTEMPTS = 40


def _create_claim(api: Any, namespace: str, claim: ClaimBuilder, uid_digit_first: bool | None) -> None:
    """The claim; with `uid_digit_first`, created anew until its UID starts (or does not start)
    with a digit, a case of its own for the CDI spec (MD-13)."""
    for _ in range(UID_ATTEMPTS):
        claims.create(api, namespace, claim)
        if uid_digit_first is None or claims.read(api, namespace, claim.name)["metadata"]["uid"][0].isdigit() == uid_digit_first:
            return
        claims.delete(api, namespace, claim.name)
    raise RuntimeError(f"no claim UID {'started' if uid_digit_first else 'did not start'} with a digit in {UID_ATTEMPTS} tries")


def single(
    lab: Lab,
    api: Any,
    files: NodeFiles,
    driver: DriverUnderTest,
    namespace: str,
    name: str = "single",
    command: list[str] = SLEEP,
    uid_digit_first: bool | None = None,
) -> Scenario:
    """One claim (`dev`, one device) used by one container `main`; SKIP when no node has a free
    device of the driver."""
    slices.require_room(api, driver.name, 1, f"scenario {name}")
    _create_claim(api, namespace, driver.claim(name), uid_digit_first)
    spec = {
        "containers": [container("main", command, "claim")],
        "terminationGracePeriodSeconds": 1,
        "resourceClaims": [{"name": "claim", "resourceClaimName": name}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    return Scenario(lab, api, files, driver, namespace, name, name).start(pod)


def serves(shape: Shape, need: Shape) -> bool:
    """Whether a reader of `shape` has the requests a check that needs `need` reads (request i
    with at least need[i] devices)."""
    return len(shape) >= len(need) and all(have >= want for have, want in zip(shape, need))


def shape_for(need: Shape, most_free: int) -> Shape | None:
    """The largest shape that serves `need` and fits on a node with `most_free` free devices."""
    return next((s for s in SHAPES if serves(s, need) and sum(s) <= most_free), None)


def describe(shape: Shape) -> str:
    return " and ".join(f"a request for {n} device{'s' if n > 1 else ''}" for n in shape)


def metadata_reader(lab: Lab, api: Any, files: NodeFiles, driver: DriverUnderTest, namespace: str, shape: Shape) -> Scenario:
    name = "reader-" + "-".join(map(str, shape))
    requests = tuple(Request(f"req{i}", n, f"c{i}") for i, n in enumerate(shape))
    claim = ClaimBuilder(name)
    for r in requests:
        claim.request(r.name, driver.device_class, count=r.count)
    claims.create(api, namespace, claim)
    spec = {
        "initContainers": [
            container("init", ["sh", "-c", LIST_FILES], "claim"),
            {**container("sidecar", SLEEP, "claim"), "restartPolicy": "Always"},
        ],
        "containers": [container(r.container, SLEEP, "claim", (r.name,)) for r in requests],
        "resourceClaims": [{"name": "claim", "resourceClaimName": name}],
        "terminationGracePeriodSeconds": 1,
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    return Scenario(lab, api, files, driver, namespace, name, name, requests=requests).start(pod)


class Readers:
    """The metadata readers of one driver (module scope). The first check builds, in the
    module's namespace, the largest shape a node has room for among those that serve it, and
    every check that shape serves shares it; a check it does not serve gets its own shape, built
    in a namespace of its own and removed after it, or SKIPs saying what the nodes lack."""

    def __init__(self, lab: Lab, api: Any, files: NodeFiles, driver: DriverUnderTest, namespace: str) -> None:
        self.lab, self.api, self.files, self.driver, self.namespace = lab, api, files, driver, namespace
        self.shared: Scenario | None = None
        # The shared reader's failure and the check that met it: a later check re-raises a lab or
        # harness error; a driver's FAIL is the first check's, and BLOCKS the later ones.
        self.failed: tuple[str, Exception] | None = None

    def _build(self, namespace: str, need: Shape, what: str) -> Scenario:
        room = slices.require_room(self.api, self.driver.name, sum(need), f"{what} ({describe(need)})")
        shape = shape_for(need, room.most_free) or need  # the room holds `need` itself at least
        return metadata_reader(self.lab, self.api, self.files, self.driver, namespace, shape)

    @contextlib.contextmanager
    def serving(self, need: Shape, what: str) -> Iterator[Scenario]:
        """A reader for check `what`, which reads requests of shape `need`."""
        if self.failed is not None:
            by, error = self.failed
            if isinstance(error, AssertionError):
                said = str(error).splitlines()[0] if str(error) else type(error).__name__
                raise Blocked(by, f"the driver failed the metadata reader this check shares with {by}: {said}")
            raise error
        if self.shared is None:
            try:
                self.shared = self._build(self.namespace, need, what)
            except Exception as e:
                self.failed = (what, e)
                raise
        if serves(self.shared.shape, need):
            yield self.shared
            return
        with namespaces.fresh(self.api, prefix="md") as ns:
            yield self._build(ns, need, what)
