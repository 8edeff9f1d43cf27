"""Network interfaces as a pod sees them (busybox `ip addr`, which has no JSON output)."""

from __future__ import annotations

import re
from typing import Any

# The first line of an interface's block: "2: eth0@if12: <BROADCAST,...> mtu 1500 ...".
_BLOCK = re.compile(r"^\d+: ([^:@\s]+)(@\S+)?:")


def parse(out: str) -> list[dict[str, object]]:
    """Each interface of an `ip addr` listing: name, IPs as CIDRs (link-local left out), MAC."""
    found: list[dict[str, Any]] = []
    for line in out.splitlines():
        if m := _BLOCK.match(line):
            found.append({"interfaceName": m.group(1), "ips": [], "hardwareAddress": ""})
        elif found and (words := line.split()):
            if words[0] == "link/ether" and len(words) > 1:
                found[-1]["hardwareAddress"] = words[1]
            elif words[0] in ("inet", "inet6") and "scope link" not in line:
                found[-1]["ips"] = sorted([*found[-1]["ips"], words[1]])
    return found


# What a container prints of its interfaces, between a header and an end line: a workload's log
# tells what network it had at its start. Not "==> ": metadata_file.parse_dump's file headers.
_HEADER, _END = "--> ip addr", "--> end of ip addr"


def dump_command() -> str:
    """Shell commands printing the container's `ip addr` between the header and end lines."""
    return f"echo '{_HEADER}'; ip addr 2>&1; echo '{_END}'"


def parse_dump(log: str) -> list[dict[str, object]] | None:
    """The interfaces a dump_command printed in `log`; None if it printed none (yet)."""
    start, end = log.find(_HEADER + "\n"), log.find(_END)
    return None if start < 0 or end < start else parse(log[start + len(_HEADER) + 1 : end])
