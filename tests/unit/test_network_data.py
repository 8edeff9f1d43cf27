"""networkData against the pod's interfaces, as ST-02 and MD-16 judge it
(suites/resource_claim_status/network_data.py): each device held to its own interface (the one
with the MAC its slice publishes, else the one its networkData names unless another device's),
every field the API names compared, a field left out a WARNING, one wrong a FAIL. The entries are
shaped as the reference network driver and its variants write them for the ST claim (profile
net: request dev with claimConfig net1, 10.97.0.5/24, 2001:db8::5/64, 02:aa:bb:cc:dd:01; request
more without one, so its VF keeps its name and MAC), the interfaces as busybox `ip addr` prints them."""

from __future__ import annotations

import json
import re
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

from drivers_under_test.profile import load_profile
from suites.device_metadata import checks as md_checks
from suites.framework import metadata_file
from suites.framework.evidence import Evidence
from suites.framework.netif import dump_command, parse, parse_dump
from suites.resource_claim_status import checks, network_data
from suites.resource_claim_status.network_data import Device

IP_ADDR = """1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
3: eth0@if12: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue
    link/ether 6e:41:0c:d2:9a:17 brd ff:ff:ff:ff:ff:ff
    inet 10.100.1.7/24 brd 10.100.1.255 scope global eth0
       valid_lft forever preferred_lft forever
    inet6 fe80::6c41:cff:fed2:9a17/64 scope link
       valid_lft forever preferred_lft forever
9: net1@if10: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue qlen 1000
    link/ether 02:aa:bb:cc:dd:01 brd ff:ff:ff:ff:ff:ff
    inet 10.97.0.5/24 scope global net1
       valid_lft forever preferred_lft forever
    inet6 2001:db8::5/64 scope global
       valid_lft forever preferred_lft forever
    inet6 fe80::aa:bbff:fecc:dd01/64 scope link
       valid_lft forever preferred_lft forever
11: ens1f0v1@if14: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue qlen 1000
    link/ether 02:00:00:00:01:01 brd ff:ff:ff:ff:ff:ff
    inet6 fe80::ff:fe00:101/64 scope link
       valid_lft forever preferred_lft forever
"""
PRINTED = parse(IP_ADDR)
NET1 = {"interfaceName": "net1", "ips": ["10.97.0.5/24", "2001:db8::5/64"], "hardwareAddress": "02:aa:bb:cc:dd:01"}
VF1 = {"interfaceName": "ens1f0v1", "hardwareAddress": "02:00:00:00:01:01"}  # no IPs: none configured
# The VFs' MACs as the net driver's slices publish them (macAddress, from the emulated sysfs): the
# config gave dev's VF another in the pod.
PUBLISHED = {
    ("node-1", "ens1f0-vf0"): {"macAddress": {"string": "02:00:00:00:01:00"}, "pfName": {"string": "ens1f0"}},
    ("node-1", "ens1f0-vf1"): {"macAddress": {"string": "02:00:00:00:01:01"}, "vfIndex": {"int": 1}},
}
DEV, MORE = ("node-1", "ens1f0-vf0"), ("node-1", "ens1f0-vf1")


def devices(dev: dict[str, Any] | None, more: dict[str, Any] | None, published: dict = PUBLISHED) -> list[Device]:
    return [network_data.device(*DEV, [published], dev), network_data.device(*MORE, [published], more)]


def judged(dev: dict[str, Any] | None, more: dict[str, Any] | None, published: dict = PUBLISHED) -> dict[str, network_data.Judged]:
    return network_data.judge(devices(dev, more, published), PRINTED)


def wrong(found: dict[str, network_data.Judged]) -> dict[str, list[str]]:
    return {name: j.wrong for name, j in found.items() if j.wrong}


def test_an_ip_addr_listing_parses_into_each_interface_and_a_dump_reads_back() -> None:
    assert [i["interfaceName"] for i in PRINTED] == ["lo", "eth0", "net1", "ens1f0v1"]
    assert PRINTED[2] == NET1, "link-local left out, the MAC kept"
    assert PRINTED[3] == {**VF1, "ips": []}
    # as a generated container prints them: its interfaces, then its metadata files (none here)
    printed = subprocess.run(
        ["sh", "-c", f"{dump_command()}; {metadata_file.dump_command('/nonexistent')}"], capture_output=True, text=True, check=True
    ).stdout
    assert [i["interfaceName"] for i in parse_dump(printed) or []][:1] == ["lo"]
    assert metadata_file.parse_dump(printed) == {}, "the interfaces are no metadata file"
    assert parse_dump(printed.split("--> end")[0]) is None, "not yet at its end: nothing read"


def test_the_macs_a_slice_publishes_are_the_devices_identity() -> None:
    attributes = {
        "macAddress": {"string": "02:00:00:00:01:00"},
        "dra.net/mac": {"string": "9A:41:2E:4F:86:16"},  # dranet's name, any case
        "pciBusID": {"string": "0000:1b:00.2"},
        "vfIndex": {"int": 2},
        "odd": "02:00:00:00:01:09",  # not a typed value
    }
    assert network_data.macs(attributes) == {"02:00:00:00:01:00", "9a:41:2e:4f:86:16"}
    # a driver may drop the MAC once the netdev is in the pod: the slices before the pod count too
    before, now = PUBLISHED, {MORE: {"vfIndex": {"int": 1}}}
    assert network_data.device(*MORE, [before, now]).macs == {"02:00:00:00:01:01"}
    assert network_data.device("node-2", "ens1f0-vf0", [before, now]).macs == frozenset()


def test_the_reference_drivers_networkdata_describes_each_devices_own_interface() -> None:
    found = judged(NET1, VF1)
    assert wrong(found) == {} and all(not j.left_out for j in found.values())
    # its slice following the MAC the config set: found by MAC, as well
    follows = {**PUBLISHED, DEV: {"macAddress": {"string": "02:AA:BB:CC:DD:01"}}}
    assert wrong(judged(NET1, VF1, follows)) == {}
    # no MAC in any slice: each found by what its networkData names
    assert wrong(judged(NET1, VF1, {})) == {}
    # the MAC compares in any case, ips in any order
    assert wrong(judged({**NET1, "hardwareAddress": "02:AA:BB:CC:DD:01", "ips": ["2001:db8::5/64", "10.97.0.5/24"]}, VF1)) == {}


def test_a_field_left_out_is_a_warning_only_where_the_interface_has_a_value() -> None:
    # network-data-without-mac
    found = judged({k: NET1[k] for k in ("interfaceName", "ips")}, {"interfaceName": "ens1f0v1"})
    assert wrong(found) == {}
    assert found["node-1/ens1f0-vf0"].left_out == ["networkData reports no hardwareAddress; the pod's net1 has 02:aa:bb:cc:dd:01"]
    assert found["node-1/ens1f0-vf1"].left_out == [
        "networkData reports no hardwareAddress; the pod's ens1f0v1 (MAC 02:00:00:00:01:01, which its slice publishes) "
        "has 02:00:00:00:01:01"
    ], "ips left out of an interface with none: nothing missed"
    only_mac = judged({"hardwareAddress": NET1["hardwareAddress"]}, VF1)["node-1/ens1f0-vf0"]
    assert not only_mac.wrong and [w.split(";")[0] for w in only_mac.left_out] == [
        "networkData reports no interfaceName",
        "networkData reports no ips",
    ]
    ev = Evidence()
    network_data.matches_the_pod(devices({"interfaceName": "net1", "ips": NET1["ips"]}, VF1), lambda script: IP_ADDR, ev)
    assert ev.warnings == ["node-1/ens1f0-vf0: networkData reports no hardwareAddress; the pod's net1 has 02:aa:bb:cc:dd:01"]
    assert ev.observed[0][0] == "the pod's interfaces (ip addr)", "observed before judged"


def test_each_field_present_and_wrong_fails_with_both_values() -> None:
    # networkdata-mismatch: the first IP one above the configured one
    mismatch = judged({**NET1, "ips": ["10.97.0.6/24", "2001:db8::5/64"]}, VF1)
    assert wrong(mismatch) == {
        "node-1/ens1f0-vf0": [
            "networkData ips ['10.97.0.6/24', '2001:db8::5/64'], the pod's net1 has ['10.97.0.5/24', '2001:db8::5/64'] "
            "(missing ['10.97.0.5/24'], extra ['10.97.0.6/24'])"
        ]
    }
    # ips a set both ways: one left out, one extra
    assert "missing ['2001:db8::5/64'], extra none" in wrong(judged({**NET1, "ips": ["10.97.0.5/24"]}, VF1))["node-1/ens1f0-vf0"][0]
    assert "missing none, extra ['10.1.0.1/24']" in wrong(judged(NET1, {**VF1, "ips": ["10.1.0.1/24"]}))["node-1/ens1f0-vf1"][0]
    assert wrong(judged(NET1, {**VF1, "hardwareAddress": "02:00:00:00:01:09"})) == {
        "node-1/ens1f0-vf1": [
            "networkData hardwareAddress 02:00:00:00:01:09, the pod's ens1f0v1 (MAC 02:00:00:00:01:01, which its slice publishes) "
            "has 02:00:00:00:01:01"
        ]
    }
    assert "are not canonical CIDRs" in wrong(judged({**NET1, "ips": ["10.97.0.5/24", "2001:DB8::5/64"]}, VF1))["node-1/ens1f0-vf0"][0]


def test_a_device_its_mac_finds_is_held_to_its_own_interface_whatever_name_it_reports() -> None:
    assert wrong(judged(NET1, {**VF1, "interfaceName": "net1"}))["node-1/ens1f0-vf1"] == [
        "networkData interfaceName net1, the pod's ens1f0v1 (MAC 02:00:00:00:01:01, which its slice publishes) has ens1f0v1",
        "devices node-1/ens1f0-vf0, node-1/ens1f0-vf1 all report the pod's net1",
    ]


def test_a_device_whose_mac_the_pod_does_not_show_may_not_take_another_devices_interface() -> None:
    why = wrong(judged(VF1, VF1))["node-1/ens1f0-vf0"][0]
    assert why.startswith(
        "networkData's interfaceName ens1f0v1 describes the pod's ens1f0v1, the interface of device node-1/ens1f0-vf1 "
        "(MAC 02:00:00:00:01:01, which node-1/ens1f0-vf1's slice publishes)"
    )
    # nor name one the pod lacks
    assert wrong(judged({**NET1, "interfaceName": "net2"}, VF1))["node-1/ens1f0-vf0"] == [
        "the pod has no interface with networkData's interfaceName net2 (it has ['ens1f0v1', 'eth0', 'lo', 'net1']), "
        "nor one with a MAC its slice publishes (02:00:00:00:01:00)"
    ]


@pytest.mark.parametrize("nd", [None, {}, {"interfaceName": "", "ips": [], "hardwareAddress": ""}])
def test_networkdata_that_reports_nothing_fails(nd: dict[str, Any] | None) -> None:
    assert "reports none of interfaceName, ips, hardwareAddress" in wrong(judged(NET1, nd))["node-1/ens1f0-vf1"][0]


# The reference driver's broken variants, as their messages reach the report (the first line).
VARIANTS = {
    "swap-network-data": (VF1, NET1),  # each device the other's interface
    "duplicate-network-data": (NET1, NET1),  # every device the first's
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("follows", [False, True], ids=["slice-keeps-the-mac", "slice-follows-the-config"])
@pytest.mark.parametrize("order", [1, -1], ids=["dev-first", "more-first"])
def test_the_swap_and_duplicate_variants_fail_each_misreported_device_with_their_violation(variant: str, follows: bool, order: int) -> None:
    violation = load_profile("net").variants[variant].violations["ST-02"]
    published = {**PUBLISHED, DEV: {"macAddress": {"string": "02:aa:bb:cc:dd:01"}}} if follows else PUBLISHED
    with pytest.raises(AssertionError) as failed:
        network_data.matches_the_pod(devices(*VARIANTS[variant], published)[::order], lambda script: IP_ADDR, Evidence())
    # The message's own lines: where pytest rewrites the suites' asserts, it indents them and its
    # explanation follows.
    lines = [line.strip() for line in str(failed.value).split("\nassert ", 1)[0].splitlines()]
    misreported = ["node-1/ens1f0-vf1"] if variant == "duplicate-network-data" and follows else ["node-1/ens1f0-vf0", "node-1/ens1f0-vf1"]
    assert sorted(line.split(":")[0] for line in lines) == misreported
    assert all(re.search(violation, line) for line in lines), "whichever device the report's first line names"


def test_a_shared_claims_device_is_judged_in_the_pod_that_shows_its_mac() -> None:
    other_pod = PRINTED[:2]  # a VF is in one pod's network namespace, whoever shares its claim
    pods = {"n/gen-0": (devices(NET1, VF1), PRINTED), "n/gen-0-s1": (devices(NET1, VF1), other_pod)}
    assert wrong(network_data.in_pods(pods)) == {}
    assert wrong(network_data.in_pods({"n/gen-0-s1": pods["n/gen-0-s1"], "n/gen-0": pods["n/gen-0"]})) == {}, "in any order"
    # homed by its MAC: judged there only
    pods["n/gen-0"] = (devices(NET1, {**VF1, "interfaceName": "eth0"}), PRINTED)
    assert list(wrong(network_data.in_pods(pods))) == ["node-1/ens1f0-vf1"]
    # no pod shows its MAC and none has what it names: each pod's reason
    lost = {pod: (devices({**NET1, "interfaceName": "net9"}, VF1), interfaces) for pod, (_, interfaces) in pods.items()}
    why = wrong(network_data.in_pods(lost))["node-1/ens1f0-vf0"]
    assert [w.split(": the pod has no interface with networkData's interfaceName net9")[0] for w in why] == [
        "pod n/gen-0",
        "pod n/gen-0-s1",
    ]


def test_the_claims_devices_judged_elsewhere_own_their_interfaces() -> None:
    # a metadata file of request dev alone: more's VF, in the same pod, is still more's
    alone = network_data.judge(devices(VF1, None)[:1], PRINTED, devices(None, None))
    assert "the interface of device node-1/ens1f0-vf1" in wrong(alone)["node-1/ens1f0-vf0"][0]


# ST-02 over the run ---------------------------------------------------------------------------

D = "vf.dralab.dev"


def _version(
    when: str, nds: dict[tuple[str, str], dict[str, Any]] | None, event: str = "MODIFIED", allocated: bool = True
) -> dict[str, Any]:
    entries = [{"driver": D, "pool": p, "device": d, "networkData": nd} for (p, d), nd in (nds or {}).items()]
    results = [{"driver": D, "request": r, "pool": p, "device": d} for r, (p, d) in (("r0", DEV), ("r1", MORE))]
    return {
        "uid": "u1",
        "namespace": "n",
        "name": "gen-0-c0",
        "event": event,
        "start": f"2026-11-29T05:{when}+00:00",
        "status": {**({"allocation": {"devices": {"results": results}}} if allocated else {}), **({"devices": entries} if entries else {})},
    }


def _printed(pod: str, when: str, interfaces: list[dict[str, Any]] | None = PRINTED) -> dict[str, Any]:
    return {
        "start": f"2026-11-29T05:{when}+00:00",
        "namespace": "n",
        "pod": pod,
        "container": "main",
        "interfaces": interfaces,
        "pod_claims": [{"name": "c0", "claim": "gen-0-c0", "uid": "u1", "template": False}],
    }


def over(versions: list[dict[str, Any]], records: list[dict[str, Any]]) -> tuple[int, list[str]]:
    found = checks.network_data_over_the_run(versions, records, D, PUBLISHED)
    return found.judged, found.problems


BOTH = {DEV: NET1, MORE: VF1}


def test_st02_over_the_run_judges_each_device_on_the_entry_of_its_pods_start() -> None:
    # written before the container printed, then a restart gave other data: judged on the first
    later = {DEV: {"interfaceName": "net9"}, MORE: VF1}
    assert over([_version("00:01", BOTH), _version("00:09", later)], [_printed("gen-0", "00:05")]) == (2, [])
    # written only after the container printed: judged on that first later version
    assert over([_version("00:01", None), _version("00:07", BOTH)], [_printed("gen-0", "00:05")]) == (2, [])
    # a claim shared by two pods: the VFs are in one pod's namespace
    assert over([_version("00:01", BOTH)], [_printed("gen-0", "00:05"), _printed("gen-0-s1", "00:06", PRINTED[:2])]) == (2, [])
    deallocated = _version("00:09", None, allocated=False)
    assert over([_version("00:01", BOTH), deallocated], [_printed("gen-0", "00:05")]) == (2, []), "judged on the claim's last allocation"
    assert over([_version("00:01", BOTH)], [_printed("gen-0", "00:05", None)]) == (0, []), (
        "a container that printed no interfaces judges nothing"
    )


def test_st02_over_the_run_holds_each_device_to_its_own_interface() -> None:
    judged, problems = over(
        [_version("00:01", {DEV: {**NET1, "ips": ["10.97.0.6/24", "2001:db8::5/64"]}, MORE: VF1})], [_printed("gen-0", "00:05")]
    )
    assert judged == 2 and problems == [
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf0 of vf.dralab.dev: pod n/gen-0: networkData ips ['10.97.0.6/24', "
        "'2001:db8::5/64'], the pod's net1 has ['10.97.0.5/24', '2001:db8::5/64'] (missing ['10.97.0.5/24'], extra ['10.97.0.6/24'])"
    ]
    _, swapped = over([_version("00:01", {DEV: VF1, MORE: NET1})], [_printed("gen-0", "00:05")])
    assert [p.split(": ")[0] for p in swapped] == [
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf0 of vf.dralab.dev",
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf1 of vf.dralab.dev",
    ]
    assert "networkData interfaceName net1, the pod's ens1f0v1 (MAC" in swapped[1]
    _, duplicated = over([_version("00:01", {DEV: NET1, MORE: NET1})], [_printed("gen-0", "00:05")])
    assert len(duplicated) == 2 and all("all report the pod's net1" in p for p in duplicated)
    found = checks.network_data_over_the_run(
        [_version("00:01", {DEV: NET1, MORE: {"interfaceName": "ens1f0v1"}})], [_printed("gen-0", "00:05")], D, PUBLISHED
    )
    assert found.problems == [] and found.warnings == [
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf1 of vf.dralab.dev: networkData reports no hardwareAddress; the pod's "
        "ens1f0v1 (MAC 02:00:00:00:01:01, which its slice publishes) has 02:00:00:00:01:01"
    ]


def test_st02_over_the_run_fails_a_device_without_networkdata_its_claim_held_for_30_s() -> None:
    printed = [_printed("gen-0", "00:05")]
    only_dev = _version("00:01", {DEV: NET1})
    # deleted 40 s after the pod printed: more never had networkData
    judged, problems = over([only_dev, _version("00:45", {DEV: NET1}, event="DELETED")], printed)
    assert judged == 2 and problems == [
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf1 of vf.dralab.dev: no networkData in status.devices, though the claim "
        "stayed allocated 40 s after pod n/gen-0 printed its interfaces (05:00:05)"
    ]
    # gone sooner (deleted, or deallocated): a slow driver may not have written it yet
    assert over([only_dev, _version("00:20", {DEV: NET1}, event="DELETED")], printed) == (1, [])
    assert over([only_dev, _version("00:20", None, allocated=False), _version("01:00", None, allocated=False)], printed) == (1, [])
    # still allocated when the claim log ends: as long as the log shows
    other = {**_version("00:50", None), "uid": "u2"}  # another claim's, later
    assert over([only_dev, other], printed)[1][0].endswith("stayed allocated 45 s after pod n/gen-0 printed its interfaces (05:00:05)")
    assert over([only_dev], printed) == (1, []), "the log ends at the version itself"
    # no device ever reported: each one judged
    assert over([_version("00:01", None), _version("01:00", None, event="DELETED")], printed)[0] == 2


# ST-02 on the fixed claim ------------------------------------------------------------------------


class Claimed(checks.Observed):
    """The observed ST claim (dev and more allocated) with the entries `nds` in its status."""

    nds: dict[tuple[str, str], dict[str, Any]] = {}

    def read(self) -> dict[str, Any]:
        return _version("00:01", self.nds)


def _fixed(monkeypatch: pytest.MonkeyPatch, nds: dict[tuple[str, str], dict[str, Any]], now: dict) -> Evidence:
    """ST-02's fixed check on the claim with entries `nds`, the slices publishing `now` (PUBLISHED before the pod started)."""
    monkeypatch.setattr(checks.slices, "attributes", lambda api, driver: now)
    monkeypatch.setattr(checks.pods, "observe", lambda lab, namespace, name, script: IP_ADDR if script == "ip addr" else None)
    monkeypatch.setattr(checks, "READY_TIMEOUT", 0.05)
    o = Claimed(None, None, SimpleNamespace(name=D), "st", "status", "node-1", PUBLISHED)  # type: ignore[arg-type]  # no lab, no API
    o.nds = nds
    ev = Evidence()
    checks.network_data_matches_the_pod(o, ev)
    return ev


def test_st02_fixed_holds_both_devices_of_its_claim_to_their_own_interfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fixed(monkeypatch, BOTH, PUBLISHED).warnings == []
    # a driver that drops a moved netdev's MAC from its slice: the MAC it published before the pod started finds it
    with pytest.raises(AssertionError, match=r"node-1/ens1f0-vf1: networkData interfaceName net1, the pod's ens1f0v1 \(MAC"):
        _fixed(monkeypatch, {DEV: VF1, MORE: NET1}, {})
    # a device without an entry (or without networkData) once the time is up
    with pytest.raises(AssertionError, match=r"node-1/ens1f0-vf1: networkData \(none\) reports none of"):
        _fixed(monkeypatch, {DEV: NET1}, PUBLISHED)


def _deferred_file(nds: list[tuple[tuple[str, str], dict[str, Any]]]) -> str:
    """The net driver's deferred metadata file of request dev with devices `nds`, as container main copied it at its start."""
    devices = [{"driver": D, "pool": p, "name": d, "networkData": nd} for (p, d), nd in nds]
    obj = {
        "apiVersion": "metadata.resource.k8s.io/v1beta1",
        "kind": "DeviceMetadata",
        "metadata": {"name": "deferred", "namespace": "md", "uid": "u1", "generation": 2},
        "requests": [{"name": "dev", "devices": devices}],
    }
    return json.dumps(obj)


def test_md16_fixed_holds_each_device_of_the_file_to_its_own_interface() -> None:
    def md16(nds: list[tuple[tuple[str, str], dict[str, Any]]]) -> Evidence:
        s = SimpleNamespace(
            read_in=lambda container, path: _deferred_file(nds),
            observe=lambda container, script: IP_ADDR,
            slice_attributes=lambda: PUBLISHED,
        )
        ev = Evidence()
        md_checks.deferred_network_data(s, ev)  # type: ignore[arg-type]  # what the check reads of a Scenario
        return ev

    assert md16([(DEV, NET1)]).warnings == []
    assert md16([(DEV, {"interfaceName": "net1", "ips": NET1["ips"]})]).warnings == [
        "node-1/ens1f0-vf0: networkData reports no hardwareAddress; the pod's net1 has 02:aa:bb:cc:dd:01"
    ]
    with pytest.raises(AssertionError, match=r"node-1/ens1f0-vf0: networkData ips \['10.97.0.6/24', '2001:db8::5/64'\], the pod's net1"):
        md16([(DEV, {**NET1, "ips": ["10.97.0.6/24", "2001:db8::5/64"]})])
    with pytest.raises(AssertionError, match="all report the pod's net1"):
        md16([(DEV, NET1), (MORE, NET1)])
