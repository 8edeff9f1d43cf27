"""NIC and VF netdevs as veth pairs (HW-03): one end in the node's network namespace, named and
addressed as the profile says; the other end on the lab's fabric bridge, so traffic flows
between devices of different nodes. (This VM has no dummy or macvlan links; veth works.)
"""

from __future__ import annotations

import ctypes
import json
import signal
import subprocess
from typing import Sequence

from basics.errors import LabBroken
from fake_hardware.sysfs import VirtualLink
from fake_hardware.topology import PciFunction

# `ip -j link`'s link_type and flags as the kernel's numbers (ARPHRD_*, IFF_*), as sysfs shows them.
PR_SET_PDEATHSIG = 1
ARP_TYPES = {"ether": 1, "loopback": 772, "none": 65534}
IFF = {
    "UP": 0x1,
    "BROADCAST": 0x2,
    "LOOPBACK": 0x8,
    "POINTOPOINT": 0x10,
    "NOARP": 0x80,
    "PROMISC": 0x100,
    "MULTICAST": 0x1000,
    "LOWER_UP": 0x10000,
}


def _batch(commands: Sequence[str], netns: str | None = None) -> None:
    if not commands:
        return
    cmd = ["ip", *(["-n", netns] if netns else []), "-batch", "-"]
    result = subprocess.run(cmd, input="\n".join(commands) + "\n", capture_output=True, text=True)
    if result.returncode != 0:
        raise LabBroken(f"`{' '.join(cmd)}` failed: {result.stderr.strip()}")


def links_of(netns: str) -> dict[str, VirtualLink]:
    """Every link of the namespace by name, as `ip -j link` shows it; none if it is gone."""
    result = subprocess.run(["ip", "-n", netns, "-j", "link", "show"], capture_output=True, text=True)
    if result.returncode != 0:
        return {}
    return {
        link["ifname"]: VirtualLink(
            ifindex=link["ifindex"],
            address=link.get("address", "00:00:00:00:00:00"),
            mtu=link.get("mtu", 1500),
            operstate=link.get("operstate", "UNKNOWN").lower(),
            arp_type=ARP_TYPES.get(link.get("link_type", ""), 1),
            flags=sum(IFF.get(f, 0) for f in link.get("flags", [])),
        )
        for link in json.loads(result.stdout or "[]")
    }


def watch_links(netns: str) -> subprocess.Popen[bytes]:
    """`ip monitor link` in the namespace: a line at each link change. It dies with its parent
    (PR_SET_PDEATHSIG), so a killed agent leaves no monitor behind."""

    def die_with_parent() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return subprocess.Popen(
        ["ip", "-n", netns, "monitor", "link"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent
    )


def create_fabric(bridge: str) -> None:
    _batch([f"link add {bridge} type bridge", f"link set {bridge} up"])


def create(netdevs: Sequence[tuple[PciFunction, str]], netns: str, fabric: str) -> None:
    """Create each (function, fabric-side name) pair: the device end in `netns` with its MAC, up."""
    _batch(
        [f"link add {peer} type veth peer name {fn.netdev} address {fn.mac} netns {netns}" for fn, peer in netdevs]
        + [cmd for _, peer in netdevs for cmd in (f"link set {peer} master {fabric}", f"link set {peer} up")]
    )
    _batch([f"link set {fn.netdev} up" for fn, _ in netdevs], netns)


def delete(peers: Sequence[str]) -> None:
    """Delete pairs by their fabric-side end: that works wherever the device end has been moved."""
    listed = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True).stdout
    present = {link["ifname"] for link in json.loads(listed or "[]")}
    _batch([f"link del {p}" for p in peers if p in present])
