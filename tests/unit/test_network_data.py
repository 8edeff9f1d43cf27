"""networkData against the pod's interface, as ST-02 and MD-16 judge it
(suites/resource_claim_status/network_data.py): only the fields the driver reported, at least one
of them, the interface found by name, else by IP, else by MAC. The entries are shaped as the
reference network driver and its variants write them (profile net: claimConfig net1,
10.97.0.5/24, 2001:db8::5/64, 02:aa:bb:cc:dd:01), the interfaces as busybox `ip addr` prints them."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from suites.framework import metadata_file
from suites.framework.evidence import Evidence
from suites.framework.netif import dump_command, interface, parse, parse_dump
from suites.resource_claim_status import checks, network_data

IP_ADDR = {
    "lo": """1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
""",
    "eth0": """3: eth0@if12: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue
    link/ether 6e:41:0c:d2:9a:17 brd ff:ff:ff:ff:ff:ff
    inet 10.100.1.7/24 brd 10.100.1.255 scope global eth0
       valid_lft forever preferred_lft forever
    inet6 fe80::6c41:cff:fed2:9a17/64 scope link
       valid_lft forever preferred_lft forever
""",
    "net1": """9: net1@if10: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue qlen 1000
    link/ether 02:aa:bb:cc:dd:01 brd ff:ff:ff:ff:ff:ff
    inet 10.97.0.5/24 scope global net1
       valid_lft forever preferred_lft forever
    inet6 2001:db8::5/64 scope global
       valid_lft forever preferred_lft forever
    inet6 fe80::aa:bbff:fecc:dd01/64 scope link
       valid_lft forever preferred_lft forever
""",
}
# status.devices entries of the net profile's claim
REFERENCE = {
    "driver": "vf.dralab.dev",
    "pool": "node-1",
    "device": "ens1f0-vf0",
    "conditions": [{"type": "Ready", "status": "True", "reason": "Configured"}],
    "networkData": {"interfaceName": "net1", "ips": ["10.97.0.5/24", "2001:db8::5/64"], "hardwareAddress": "02:aa:bb:cc:dd:01"},
}
WITHOUT_MAC = {**REFERENCE, "networkData": {"interfaceName": "net1", "ips": ["10.97.0.5/24", "2001:db8::5/64"]}}
# networkdata-mismatch: the first IP one above the configured one
MISMATCH = {**REFERENCE, "networkData": {**REFERENCE["networkData"], "ips": ["10.97.0.6/24", "2001:db8::5/64"]}}


class Pod:
    """Answers the scripts network_data runs in the pod, and records them."""

    def __init__(self) -> None:
        self.scripts: list[str] = []

    def observe(self, script: str) -> str | None:
        self.scripts.append(script)
        if script == "ls /sys/class/net":
            return "\n".join(sorted(IP_ADDR)) + "\n"
        name = script.rpartition(" ")[2]
        return IP_ADDR.get(name)  # None: the script's absent_unless exit


def judge(nd: dict[str, Any] | None) -> Pod:
    pod = Pod()
    network_data.matches_the_pod("ens1f0-vf0", nd, pod.observe, Evidence())
    return pod


def test_the_reference_drivers_entry_matches() -> None:
    assert len(judge(REFERENCE["networkData"]).scripts) == 1  # found by its name: one observation


def test_an_entry_without_a_mac_is_compared_on_what_it_reports() -> None:
    judge(WITHOUT_MAC["networkData"])


def test_the_mismatch_variant_fails_on_its_ips() -> None:
    with pytest.raises(
        AssertionError,
        match=r"ens1f0-vf0: networkData ips \['10.97.0.6/24', '2001:db8::5/64'\], "
        r"the pod's net1 has \['10.97.0.5/24', '2001:db8::5/64'\]",
    ):
        judge(MISMATCH["networkData"])


def test_the_mismatch_variant_fails_without_its_name_and_mac_too() -> None:
    with pytest.raises(AssertionError, match="networkData ips"):
        judge({"ips": MISMATCH["networkData"]["ips"]})  # found by the IP it got right


@pytest.mark.parametrize("nd", [None, {}, {"interfaceName": "", "ips": [], "hardwareAddress": ""}])
def test_networkdata_that_reports_nothing_fails(nd: dict[str, Any] | None) -> None:
    with pytest.raises(AssertionError, match="reports none of interfaceName, ips, hardwareAddress"):
        judge(nd)


def test_without_a_name_the_interface_is_found_by_ip_else_by_mac() -> None:
    assert network_data.pick({"ips": ["2001:db8::5/64"]}, [interface(Pod().observe, n) for n in IP_ADDR])["interfaceName"] == "net1"
    judge({"ips": ["2001:db8::5/64", "10.97.0.5/24"]})
    judge({"hardwareAddress": "02:AA:BB:CC:DD:01"})  # MACs compare case-insensitively


def test_a_mac_no_interface_has_fails() -> None:
    with pytest.raises(AssertionError, match="no interface with networkData's hardwareAddress 02:aa:bb:cc:dd:02"):
        judge({"hardwareAddress": "02:aa:bb:cc:dd:02"})


def test_a_name_the_pod_lacks_fails() -> None:
    with pytest.raises(AssertionError, match="no interface with networkData's interfaceName net2"):
        judge({**REFERENCE["networkData"], "interfaceName": "net2"})


def test_a_wrong_mac_fails_and_a_missing_one_is_not_compared() -> None:
    with pytest.raises(AssertionError, match="hardwareAddress 02:aa:bb:cc:dd:09, the pod's net1 has 02:aa:bb:cc:dd:01"):
        judge({**REFERENCE["networkData"], "hardwareAddress": "02:aa:bb:cc:dd:09"})
    assert (
        network_data.mismatches({"interfaceName": "net1"}, network_data.pick({"interfaceName": "net1"}, [interface(Pod().observe, "net1")]))
        == []
    )


def test_link_local_addresses_are_not_required_in_ips() -> None:
    judge({"interfaceName": "net1", "ips": ["2001:db8::5/64", "10.97.0.5/24"]})  # order aside


# What a generated pod's container prints (netif.dump_command), parsed: the three interfaces above.
PRINTED = parse("".join(IP_ADDR.values()))
NET1 = {"interfaceName": "net1", "ips": ["10.97.0.5/24", "2001:db8::5/64"], "hardwareAddress": "02:aa:bb:cc:dd:01"}


def test_an_ip_addr_listing_parses_into_each_interface_and_a_dump_reads_back() -> None:
    assert [i["interfaceName"] for i in PRINTED] == ["lo", "eth0", "net1"]
    assert PRINTED[2] == NET1, "link-local left out, the MAC kept"
    # as a generated container prints them: its interfaces, then its metadata files (none here)
    printed = subprocess.run(
        ["sh", "-c", f"{dump_command()}; {metadata_file.dump_command('/nonexistent')}"], capture_output=True, text=True, check=True
    ).stdout
    assert [i["interfaceName"] for i in parse_dump(printed) or []][:1] == ["lo"]
    assert metadata_file.parse_dump(printed) == {}, "the interfaces are no metadata file"
    assert parse_dump(printed.split("--> end")[0]) is None, "not yet at its end: nothing read"


def test_network_data_is_described_by_a_printed_interface_or_said_why_not() -> None:
    assert network_data.not_described(REFERENCE["networkData"], PRINTED) is None
    assert network_data.not_described(WITHOUT_MAC["networkData"], PRINTED) is None
    assert "ips ['10.97.0.6/24', '2001:db8::5/64'], the pod's net1 has" in str(network_data.not_described(MISMATCH["networkData"], PRINTED))
    assert "not canonical" in str(network_data.not_described({"ips": ["2001:DB8::5/64"]}, PRINTED))
    assert "reports none of" in str(network_data.not_described({}, PRINTED))
    assert "no interface with networkData's interfaceName net2" in str(network_data.not_described({"interfaceName": "net2"}, PRINTED))


def _version(when: str, nd: dict[str, Any] | None, uid: str = "u1") -> dict[str, Any]:
    entry = {**REFERENCE, "networkData": nd} if nd else None
    return {
        "uid": uid,
        "namespace": "n",
        "name": "gen-0-c0",
        "start": f"2026-11-29T05:00:{when}+00:00",
        "status": {
            "allocation": {
                "devices": {"results": [{"driver": "vf.dralab.dev", "request": "r0", "pool": "node-1", "device": "ens1f0-vf0"}]}
            },
            **({"devices": [entry]} if entry else {}),
        },
    }


def _printed(pod: str, when: str, interfaces: list[dict[str, Any]] | None = PRINTED) -> dict[str, Any]:
    return {
        "start": f"2026-11-29T05:00:{when}+00:00",
        "namespace": "n",
        "pod": pod,
        "container": "main",
        "interfaces": interfaces,
        "pod_claims": [{"name": "c0", "claim": "gen-0-c0", "uid": "u1", "template": False}],
    }


def test_st02_over_the_run_judges_each_device_on_the_entry_of_its_pods_start() -> None:
    over = checks.network_data_over_the_run
    # written before the container printed, then a restart gave other data: judged on the first
    assert over([_version("01", NET1), _version("09", {"interfaceName": "net9"})], [_printed("gen-0", "05")], "vf.dralab.dev") == (1, [])
    # written only after the container printed: judged on that first later version
    assert over([_version("01", None), _version("07", NET1)], [_printed("gen-0", "05")], "vf.dralab.dev") == (1, [])
    # a claim shared by two pods: the VF is in one pod's namespace
    assert over([_version("01", NET1)], [_printed("gen-0", "05"), _printed("gen-1", "06", PRINTED[:2])], "vf.dralab.dev") == (1, [])
    judged, problems = over([_version("01", MISMATCH["networkData"])], [_printed("gen-0", "05")], "vf.dralab.dev")
    assert judged == 1 and problems[0].startswith(
        "claim n/gen-0-c0 (u1), device node-1/ens1f0-vf0 of vf.dralab.dev: pod n/gen-0: networkData ips ['10.97.0.6/24'"
    )
    deallocated = {**_version("09", None), "status": {}}
    assert over([_version("01", NET1), deallocated], [_printed("gen-0", "05")], "vf.dralab.dev") == (1, []), (
        "judged on the claim's last allocation"
    )
    assert over([_version("01", None)], [_printed("gen-0", "05")], "vf.dralab.dev") == (0, []), (
        "networkData in no version: not judged (the pod may be gone before a later writer reports it)"
    )
    assert over([_version("01", NET1)], [_printed("gen-0", "05", None)], "vf.dralab.dev") == (0, []), (
        "a container that printed no interfaces judges nothing"
    )
