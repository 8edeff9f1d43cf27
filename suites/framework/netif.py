"""A network interface as a pod sees it (busybox `ip addr`, which has no JSON output)."""

from __future__ import annotations

from typing import Callable

from suites.framework.pods import absent_unless


def interface(observe: Callable[[str], str | None], name: str) -> dict[str, object]:
    """Name (None if absent), IPs as CIDRs (link-local left out), MAC and the raw listing;
    `observe` runs a script in the pod (pods.observe): None when the script says it is absent."""
    out = (observe(f"{absent_unless(f'/sys/class/net/{name}')}ip addr show dev {name}") if name else None) or ""
    mac = next((line.split()[1] for line in out.splitlines() if "link/ether" in line), "")
    ips = sorted(line.split()[1] for line in out.splitlines()
                 if line.strip().startswith(("inet ", "inet6 ")) and "scope link" not in line)
    return {"interfaceName": name if out else None, "ips": ips, "hardwareAddress": mac, "ip addr": out}
