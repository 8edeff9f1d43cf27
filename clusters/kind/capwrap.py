"""An OCI runtime in front of runc for hosts whose root lacks capabilities in its bounding set
(a VM that dropped CAP_SYS_RESOURCE): runc refuses to start a container asking for a capability
the host cannot grant ("unable to apply caps: operation not permitted"), and Docker's privileged
containers (kind's nodes) ask for every capability it knows. The wrapper removes what the bounding
set lacks from the container's config.json (`create`, `run`) and from the process file of
`runc exec --process FILE` (kind runs every step through `docker exec`), then becomes runc.

Run as a file by a shim dockerd knows as a runtime (engine.py); stdlib only, it starts per call.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# The Linux capability numbers, in order (include/uapi/linux/capability.h).
CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
)
# runc's options that take a value, before the command and after `create`, `run` and `exec`.
_VALUED = {
    "--root",
    "--log",
    "--log-format",
    "--criu",
    "--rootless",
    "--bundle",
    "-b",
    "--pid-file",
    "--console-socket",
    "--process",
    "-p",
    "--preserve-fds",
    "--cwd",
    "--env",
    "-e",
    "--user",
    "-u",
    "--cap",
    "-c",
    "--process-label",
    "--apparmor",
    "--cgroup",
    "--additional-gids",
    "-g",
}


def bounding_set(status: str) -> int:
    """The CapBnd mask of a /proc/<pid>/status text."""
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapBnd:")), 16)


def missing(mask: int, last_cap: int) -> list[str]:
    """CAP_ names up to the kernel's last capability that `mask` lacks."""
    return [f"CAP_{name}" for bit, name in enumerate(CAPABILITIES[: last_cap + 1]) if not mask >> bit & 1]


def strip_process(process: dict, refused: set[str]) -> bool:
    """Remove `refused` capabilities from every set of an OCI process; True if any was there."""
    caps = process.get("capabilities") or {}
    changed = False
    for kind, names in caps.items():
        kept = [n for n in names or [] if n not in refused]
        changed |= kept != (names or [])
        caps[kind] = kept
    return changed


def files_to_rewrite(args: list[str]) -> list[tuple[Path, bool]]:
    """The JSON files a runc invocation reads capabilities from: (path, is a whole config.json)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):  # global options
        i += 1 + (args[i] in _VALUED and "=" not in args[i])
    if i >= len(args) or args[i] not in ("create", "run", "exec"):
        return []
    command, options = args[i], args[i + 1 :]
    values: dict[str, str] = {}
    j = 0
    while j < len(options) and options[j].startswith("-"):
        name, eq, value = options[j].partition("=")
        if name in _VALUED and not eq:
            value, j = (options[j + 1] if j + 1 < len(options) else ""), j + 1
        values[name] = value
        j += 1
    if command == "exec":
        process = values.get("--process") or values.get("-p")
        return [(Path(process), False)] if process else []
    return [(Path(values.get("--bundle") or values.get("-b") or ".") / "config.json", True)]


def rewrite(path: Path, whole_config: bool, refused: set[str]) -> None:
    data = json.loads(path.read_text())
    if strip_process(data.get("process", {}) if whole_config else data, refused):
        path.write_text(json.dumps(data))


def main() -> None:
    runc, refused = os.environ["DRALAB_RUNC"], set(os.environ.get("DRALAB_REFUSED_CAPS", "").split(","))
    for path, whole in files_to_rewrite(sys.argv[1:]):
        if path.exists():
            rewrite(path, whole, refused)
    os.execv(runc, [runc, *sys.argv[1:]])


if __name__ == "__main__":
    main()
