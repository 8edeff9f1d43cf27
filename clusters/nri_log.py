"""What the nodes' containerd logged against NRI plugins (a driver's NRI hook among them): the
lines that explain a pod started without a plugin's changes, when containerd closed the plugin
after a request failed or passed its plugin_request_timeout (2 s by default)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

# containerd's logrus lines: time="2026-11-29T12:24:28.837122052Z" level=error msg="..."
# An NRI plugin closed ("closing plugin 10-vf.dralab.dev, failed to handle RunPodSandbox request:
# context deadline exceeded") or a notification it failed ("NRI sandbox stop notification failed").
_LINE = re.compile(r'^time="(?P<time>[^"]+)" level=(?:error|warning) msg="[^"]*(?:closing plugin|NRI)')
CLOSED = "closing plugin"


def errors(log_dir: Path, since: datetime) -> list[str]:
    """containerd's error and warning lines about NRI plugins in the containerd logs under
    `log_dir` (one per node), logged at or after `since`, each prefixed with its log's dir."""
    found = []
    for log in sorted(log_dir.rglob("*containerd.log")):
        for line in log.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            # A line whose time does not parse is kept: quoted once too often rather than lost.
            if m and ((when := _time(m["time"])) is None or when >= since):
                found.append(f"{log.parent.name}: {line}")
    return found


def closed(lines: list[str]) -> bool:
    """Whether containerd closed an NRI plugin in `lines` (errors' output)."""
    return any(CLOSED in line for line in lines)


def _time(stamp: str) -> datetime | None:
    # Nanoseconds do not parse: keep microseconds. UTC ("Z") or an offset, as the node's zone is.
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", stamp)
    if m is None:
        return None
    zone = "+00:00" if m[3] == "Z" else m[3]
    return datetime.fromisoformat(f"{m[1]}.{((m[2] or '') + '000000')[:6]}{zone}")
