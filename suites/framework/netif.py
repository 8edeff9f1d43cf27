"""A network interface as a pod sees it (busybox `ip addr`, which has no JSON output)."""

from __future__ import annotations

from typing import Callable


def interface(sh: Callable[[str], str], name: str) -> dict[str, object]:
    """Name (None if absent), IPs as CIDRs (link-local left out), MAC and the raw listing;
    `sh` runs a shell command in the pod and returns its output."""
    out = sh(f"ip addr show dev {name}") if name else ""
    mac = next((line.split()[1] for line in out.splitlines() if "link/ether" in line), "")
    ips = sorted(line.split()[1] for line in out.splitlines()
                 if line.strip().startswith(("inet ", "inet6 ")) and "scope link" not in line)
    return {"interfaceName": name if out else None, "ips": ips, "hardwareAddress": mac, "ip addr": out}
