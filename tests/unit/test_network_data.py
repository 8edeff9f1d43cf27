"""networkData against the pod's interface, as ST-02 and MD-16 judge it
(suites/resource_claim_status/network_data.py): only the fields the driver reported, at least one
of them, the interface found by name, else by IP, else by MAC. The entries are shaped as the
reference network driver and its variants write them (profile net: claimConfig net1,
10.97.0.5/24, 2001:db8::5/64, 02:aa:bb:cc:dd:01), the interfaces as busybox `ip addr` prints them."""

from __future__ import annotations

from typing import Any

import pytest

from suites.framework.evidence import Evidence
from suites.framework.netif import interface
from suites.resource_claim_status import network_data

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
REFERENCE = {"driver": "vf.dralab.dev", "pool": "node-1", "device": "ens1f0-vf0",
             "conditions": [{"type": "Ready", "status": "True", "reason": "Configured"}],
             "networkData": {"interfaceName": "net1", "ips": ["10.97.0.5/24", "2001:db8::5/64"],
                             "hardwareAddress": "02:aa:bb:cc:dd:01"}}
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
    with pytest.raises(AssertionError, match=r"ens1f0-vf0: networkData ips \['10.97.0.6/24', '2001:db8::5/64'\], "
                                             r"the pod's net1 has \['10.97.0.5/24', '2001:db8::5/64'\]"):
        judge(MISMATCH["networkData"])


def test_the_mismatch_variant_fails_without_its_name_and_mac_too() -> None:
    with pytest.raises(AssertionError, match="networkData ips"):
        judge({"ips": MISMATCH["networkData"]["ips"]})  # found by the IP it got right


@pytest.mark.parametrize("nd", [None, {}, {"interfaceName": "", "ips": [], "hardwareAddress": ""}])
def test_networkdata_that_reports_nothing_fails(nd: dict[str, Any] | None) -> None:
    with pytest.raises(AssertionError, match="reports none of interfaceName, ips, hardwareAddress"):
        judge(nd)


def test_without_a_name_the_interface_is_found_by_ip_else_by_mac() -> None:
    assert network_data.pick({"ips": ["2001:db8::5/64"]}, [interface(Pod().observe, n) for n in IP_ADDR]
                             )["interfaceName"] == "net1"
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
    assert network_data.mismatches({"interfaceName": "net1"}, network_data.pick(
        {"interfaceName": "net1"}, [interface(Pod().observe, "net1")])) == []


def test_link_local_addresses_are_not_required_in_ips() -> None:
    judge({"interfaceName": "net1", "ips": ["2001:db8::5/64", "10.97.0.5/24"]})  # order aside
