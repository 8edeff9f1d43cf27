"""KEP-4817 status.devices as the API server enforces it, for any conformant cluster: validation
limits at and one past their boundaries (ST-03), entries dropped on deallocation and kept across
field managers (ST-05), the shipped networkData field names (ST-02 spec drift), a status apply
accepted whatever encoding the claim was created with (ST-09). The claims are
allocated by the real scheduler; their devices exist only as ResourceSlices, so no driver
writes their status but the checks."""

from __future__ import annotations

import contextlib
import datetime
from typing import Any, Callable, Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.api_client import as_python_client_sends, canonical_json
from suites.framework.evidence import Evidence
from suites.framework import claims, namespaces, pods, spec_drift, validation
from suites.framework.claims import ClaimBuilder
from suites.framework.spec_drift import Drift
from suites.framework.validation import Cause
from suites.framework.waits import wait_for
from suites.resource_claim_status.conftest import DRIVER_A, DRIVER_B, PublishedOnly, allocated_claim, entry

pytestmark = pytest.mark.e2e
KEP = "KEP-4817"
DATA_MAX = 10 * 1024
DRIVER_LIKE_MANAGER = "st-a.dralab.dev-driver"  # a field manager of a driver's kind (dranet uses its name)


@pytest.fixture(scope="module")
def claim(api, published_only: PublishedOnly) -> Iterator[dict[str, Any]]:
    with namespaces.fresh(api, prefix="st-api") as ns:
        yield allocated_claim(api, ns, "limits", published_only.nodes[0])


def conditions(n: int) -> list[dict[str, Any]]:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [{"type": f"Check{i}", "status": "True", "reason": "Boundary", "message": "", "lastTransitionTime": now} for i in range(n)]


def data_of_length(n: int) -> dict[str, str]:
    """A JSON object whose serialized form (as dralab's clients send it, canonically) is exactly n bytes."""
    overhead = len(canonical_json({"pad": ""}))
    return {"pad": "x" * (n - overhead)}


def network(**fields: Any) -> dict[str, Any]:
    return {"networkData": {"interfaceName": "net1", **fields}}


def unallocated(c: dict[str, Any]) -> list[dict[str, Any]]:
    (result,) = claims.allocated(c, DRIVER_A)
    other = next(f"dev-{i}" for i in range(4) if f"dev-{i}" != result["device"])
    return [{"driver": DRIVER_A, "pool": result["pool"], "device": other}]


Entries = Callable[[dict[str, Any]], list[dict[str, Any]]]


def one(**fields: Any) -> Entries:
    return lambda c: [entry(c, DRIVER_A, **fields)]


D0 = "status.devices[0]"
ND = f"{D0}.networkData"

# (case, entries written, the causes they are rejected for: none if accepted)
CASES: list[tuple[str, Entries, tuple[Cause, ...]]] = [
    ("8 conditions", one(conditions=conditions(8)), ()),
    ("9 conditions", one(conditions=conditions(9)), (Cause(f"{D0}.conditions", "FieldValueTooMany", "at most 8"),)),
    ("data of 10 KiB", one(data=data_of_length(DATA_MAX)), ()),
    ("data of 10 KiB + 1", one(data=data_of_length(DATA_MAX + 1)), (Cause(f"{D0}.data", "FieldValueTooLong", f"{DATA_MAX} bytes"),)),
    ("data that is a list", one(data=[1, 2]), (Cause(f"{D0}.data", "FieldValueInvalid"),)),
    ("data that is a string", one(data="ready"), (Cause(f"{D0}.data", "FieldValueInvalid"),)),
    ("16 ips", one(**network(ips=[f"10.0.0.{i}/24" for i in range(1, 17)])), ()),
    ("17 ips", one(**network(ips=[f"10.0.0.{i}/24" for i in range(1, 18)])), (Cause(f"{ND}.ips", "FieldValueTooMany", "at most 16"),)),
    ("duplicate ips", one(**network(ips=["10.0.0.1/24", "10.0.0.1/24"])), (Cause(f"{ND}.ips[1]", "FieldValueDuplicate", "10.0.0.1/24"),)),
    ("canonical CIDRs with host bits", one(**network(ips=["192.0.2.5/24", "2001:db8::5/64"])), ()),
    (
        "non-canonical CIDR 192.0.2.05/24",
        one(**network(ips=["192.0.2.05/24"])),
        (Cause(f"{ND}.ips[0]", "FieldValueInvalid", "192.0.2.05/24"),),
    ),
    ("bare IP", one(**network(ips=["192.0.2.5"])), (Cause(f"{ND}.ips[0]", "FieldValueInvalid", "192.0.2.5"),)),
    ("interfaceName of 256 bytes", one(networkData={"interfaceName": "i" * 256}), ()),
    (
        "interfaceName of 257 bytes",
        one(networkData={"interfaceName": "i" * 257}),
        (Cause(f"{ND}.interfaceName", "FieldValueTooLong", "256"),),
    ),
    ("hardwareAddress of 128 bytes", one(networkData={"hardwareAddress": "a" * 128}), ()),
    (
        "hardwareAddress of 129 bytes",
        one(networkData={"hardwareAddress": "a" * 129}),
        (Cause(f"{ND}.hardwareAddress", "FieldValueTooLong", "128"),),
    ),
    ("an entry for an unallocated device", unallocated, (Cause(D0, "FieldValueInvalid", "allocated"),)),
    ("duplicate entries", lambda c: [entry(c, DRIVER_A), entry(c, DRIVER_A)], (Cause("status.devices[1]", "FieldValueDuplicate"),)),
]


@pytest.mark.requirement("ST-03")
@pytest.mark.parametrize("case,entries,rejected_for", CASES, ids=[c[0] for c in CASES])
def test_status_validation(
    api, claim: dict[str, Any], evidence: Evidence, case: str, entries: Entries, rejected_for: tuple[Cause, ...]
) -> None:
    current = claims.read(api, claim["metadata"]["namespace"], claim["metadata"]["name"])
    devices = entries(current)
    evidence.add("status.devices written", devices)
    validation.expect_answer(case, lambda: claims.write_status(api, current, devices), rejected_for, evidence)


@pytest.mark.requirement("ST-03")
def test_network_data_field_names(api, claim: dict[str, Any], evidence: Evidence, request) -> None:
    """The shipped names are ips and hardwareAddress; the KEP text's addresses/hwAddress are unknown fields."""
    current = claims.read(api, claim["metadata"]["namespace"], claim["metadata"]["name"])
    kep = {"interfaceName": "net1", "addresses": ["192.0.2.5/24"], "hwAddress": "02:00:00:00:00:01"}
    shipped = {"interfaceName": "net1", "ips": ["192.0.2.5/24"], "hardwareAddress": "02:00:00:00:00:01"}
    stored = {}
    for name, nd in (("KEP", kep), ("shipped", shipped)):
        written = claims.write_status(api, current, [entry(current, DRIVER_A, networkData=nd)])
        stored[name] = written["status"]["devices"][0].get("networkData")
        current = written
    evidence.add("networkData stored", stored)
    assert stored["shipped"] == shipped
    spec_drift.record(
        request,
        Drift(
            KEP,
            "networkData field names",
            "networkData{interfaceName, addresses, hwAddress}",
            f"ips and hardwareAddress are stored; addresses/hwAddress are dropped as unknown: stored {stored['KEP']}",
        ),
    )


@pytest.mark.requirement("ST-05")
def test_two_field_managers_keep_each_others_entries(
    api, published_only: PublishedOnly, holders_namespace: str, evidence: Evidence
) -> None:
    c = allocated_claim(api, holders_namespace, "two-managers", published_only.nodes[0])
    ns, name = holders_namespace, "two-managers"
    claims.apply_status(api, ns, name, [entry(c, DRIVER_A, data={"by": "a"})], manager="driver-a")
    claims.apply_status(api, ns, name, [entry(c, DRIVER_B, data={"by": "b"})], manager="driver-b")
    claims.apply_status(api, ns, name, [entry(c, DRIVER_A, data={"by": "a", "again": True})], manager="driver-a")
    devices = claims.device_status(claims.read(api, ns, name))
    evidence.add("status.devices after a, b, a applied", devices)
    assert {d["driver"]: d.get("data") for d in devices} == {DRIVER_A: {"by": "a", "again": True}, DRIVER_B: {"by": "b"}}


@pytest.mark.requirement("ST-05")
def test_entries_of_deallocated_devices_disappear(api, published_only: PublishedOnly, holders_namespace: str, evidence: Evidence) -> None:
    c = allocated_claim(api, holders_namespace, "deallocated", published_only.nodes[0])
    claims.write_status(api, c, [entry(c, DRIVER_A), entry(c, DRIVER_B)])
    # The pod goes; the claim controller takes the reservation and then the allocation away.
    client.CoreV1Api(api).delete_namespaced_pod("deallocated-holder", holders_namespace, grace_period_seconds=0)
    after = wait_for(
        "claim deallocated", lambda: claims.read_when(api, holders_namespace, "deallocated", lambda c: not claims.allocated(c)), 60
    )
    assert after is not None  # wait_for returns the first truthy answer
    evidence.add("status after deallocation", after.get("status"))
    assert not claims.device_status(after), f"entries of deallocated devices remain: {claims.device_status(after)}"


# ST-09: how a client encoded a claim's opaque parameters must not decide whether a driver may apply its status.
PARAMETERS = {"zeta": 1, "alpha": "a"}  # not in sorted order, as a client keeping its own key order sends them
# How the claim is sent -> (the claim's name, the context it is sent within).
ENCODINGS: dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[object]]]] = {
    "canonically (as kubectl and client-go send it)": ("apply-canonical", contextlib.nullcontext),
    "as the kubernetes Python client sends it": ("apply-python", as_python_client_sends),
}
UPSTREAM_FIX = (
    "the status update's immutability check of status.allocation (ValidateImmutableField, "
    "pkg/apis/resource/validation) compares the raw opaque parameters byte for byte after server-side apply "
    "re-encoded them on its round trip through unstructured form (compact, sorted keys); it would need to "
    "compare them as JSON values, or the apply keep the stored bytes of the fields it did not set"
)


@pytest.mark.requirement("ST-09")
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_status_apply_is_accepted_whatever_the_claims_encoding(
    api, published_only: PublishedOnly, holders_namespace: str, evidence: Evidence, request, encoding: str
) -> None:
    name, sent_within = ENCODINGS[encoding]
    claim = ClaimBuilder(name).request("a", DRIVER_A).opaque(DRIVER_A, PARAMETERS)
    with sent_within():
        c = pods.allocate_through(api, holders_namespace, claim, published_only.nodes[0], pod=f"{name}-holder")
    stored = c["status"]["allocation"]["devices"].get("config")
    evidence.add(
        f"the claim created {encoding} with parameters {PARAMETERS}; its allocation's config as the API server returns it (key order kept)",
        stored,
    )
    assert stored, f"the scheduler copied no config into the allocation of {holders_namespace}/{name}"
    entries = [entry(c, DRIVER_A, data={"by": "a driver-like field manager"})]
    try:
        claims.apply_status(api, holders_namespace, name, entries, manager=DRIVER_LIKE_MANAGER)
    except ApiException as e:
        evidence.add("the API server's answer to the apply", e.body)
        spec_drift.record(
            request,
            Drift(
                KEP,
                "status.devices by server-side apply",
                "a driver reports status.devices by server-side apply, as its own field manager, changing only its own entries",
                f"refused for a claim created {encoding}: {validation.message(e)}",
            ),
        )
        raise AssertionError(
            f"the API server refused a server-side apply of status.devices (field manager {DRIVER_LIKE_MANAGER}, "
            f"only status.devices sent) to a claim created {encoding}: {validation.message(e)}. A driver that applies its "
            f"status is refused on such claims for a field it did not send. Upstream: {UPSTREAM_FIX}"
        ) from None
    devices = claims.device_status(claims.read(api, holders_namespace, name))
    evidence.add("status.devices after the apply", devices)
    assert [d["device"] for d in devices] == [entries[0]["device"]], (
        f"the apply was accepted, but status.devices is {devices}, want the one entry applied: {entries}"
    )
