"""NIC and VF netdevs as veth pairs (HW-03): one end in the node's network namespace, named and
addressed as the profile says; the other end on the lab's fabric bridge, so traffic flows
between devices of different nodes. (This VM has no dummy or macvlan links; veth works.)
"""

from __future__ import annotations

import subprocess
from typing import Sequence

from clusters.errors import LabBroken
from clusters.local.network import links_named, sh
from fake_hardware.topology import PciFunction


def _batch(commands: Sequence[str], netns: str | None = None) -> None:
    if not commands:
        return
    cmd = ["ip", *(["-n", netns] if netns else []), "-batch", "-"]
    result = subprocess.run(cmd, input="\n".join(commands) + "\n", capture_output=True, text=True)
    if result.returncode != 0:
        raise LabBroken(f"`{' '.join(cmd)}` failed: {result.stderr.strip()}")


def create_fabric(bridge: str) -> None:
    sh("ip", "link", "add", bridge, "type", "bridge")
    sh("ip", "link", "set", bridge, "up")


def create(netdevs: Sequence[tuple[PciFunction, str]], netns: str, fabric: str) -> None:
    """Create each (function, fabric-side name) pair: the device end in `netns` with its MAC, up."""
    _batch([f"link add {peer} type veth peer name {fn.netdev} address {fn.mac} netns {netns}"
            for fn, peer in netdevs] +
           [cmd for _, peer in netdevs for cmd in (f"link set {peer} master {fabric}", f"link set {peer} up")])
    _batch([f"link set {fn.netdev} up" for fn, _ in netdevs], netns)


def delete(peers: Sequence[str]) -> None:
    """Delete pairs by their fabric-side end: that works wherever the device end has been moved."""
    present = set(links_named(""))
    _batch([f"link del {p}" for p in peers if p in present])
