"""The directories a node's container runtime reads CDI specs from, as its configuration says.

A driver may write its CDI specs into any directory containerd reads (`cdi_spec_dirs` of the
CRI runtime plugin), so a check looks where the node's containerd looks, never in a fixed
directory. The merge follows containerd v2.3 (cmd/containerd/server/config/config.go): the
main file, then its imports breadth first (globs sorted, relative paths from the importing
file's directory), each file migrated on its own from its version, later files overriding
earlier keys; lists are replaced, not joined.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol

from clusters.providers import Capability, Lab

# containerd's own defaults (internal/cri/config/config_unix.go; the --config flag's default).
DEFAULT_CONFIG = "/etc/containerd/config.toml"
DEFAULT_DIRS = ("/etc/cdi", "/var/run/cdi")  # also the CDI spec's own defaults, for other runtimes
RUNTIME_PLUGIN = "io.containerd.cri.v1.runtime"  # config version 3 and later
GRPC_CRI_PLUGIN = "io.containerd.grpc.v1.cri"  # config version 2 (containerd 1.x); migrated to the above
CONFIG_VERSION = 4  # containerd v2.3's; files of older versions are migrated on load
KEYS = ("enable_cdi", "cdi_spec_dirs")


class NodeReader(Protocol):
    """How a node's files are read (NodeFiles)."""

    lab: Lab
    api: Any

    def read(self, node: str, path: str) -> str | None: ...
    def glob(self, node: str, pattern: str) -> list[str]: ...


@dataclass(frozen=True)
class CdiDirs:
    dirs: tuple[str, ...]
    enabled: bool
    source: str  # where the answer comes from, for the check's observation

    def describe(self) -> str:
        return f"{', '.join(self.dirs)} ({self.source})"


def _runtime_settings(doc: dict[str, Any]) -> dict[str, Any]:
    """The CDI keys one file sets, as containerd sees them after migrating the file."""
    version = doc.get("version") or 1  # no version is version 1
    plugins = dict(doc.get("plugins") or {})
    if version < 2 and "cri" in plugins:  # version 1 named plugins by their short names
        plugins[GRPC_CRI_PLUGIN] = plugins.pop("cri")
    settings = {k: v for k, v in (plugins.get(RUNTIME_PLUGIN) or {}).items() if k in KEYS}
    if version < CONFIG_VERSION:  # the CRI plugin's migration copies what the new section lacks
        old = plugins.get(GRPC_CRI_PLUGIN) or {}
        settings |= {k: old[k] for k in KEYS if k in old and k not in settings}
    return settings


def from_configs(files: list[tuple[str, str]], main: str = DEFAULT_CONFIG) -> CdiDirs:
    """The CDI dirs from containerd's config files (path, TOML text) in load order, `main` first;
    containerd's defaults for what none of them sets (all of it when `main` is absent)."""
    found: dict[str, tuple[Any, str]] = {}
    for path, text in files:
        found |= {k: (v, path) for k, v in _runtime_settings(tomllib.loads(text)).items()}
    dirs, dirs_from = found.get("cdi_spec_dirs", (list(DEFAULT_DIRS), None))
    enabled, enabled_from = found.get("enable_cdi", (True, None))
    read = f"no cdi_spec_dirs in {', '.join(p for p, _ in files)}" if files else f"no {main} on the node"
    source = f"cdi_spec_dirs in {dirs_from}" if dirs_from else f"containerd's defaults: {read}"
    if not enabled:
        source += f"; CDI disabled by enable_cdi = false in {enabled_from}"
    return CdiDirs(tuple(d.rstrip("/") for d in dirs), bool(enabled), source)


def imports(doc: dict[str, Any], parent: str) -> list[str]:
    """The file's imports as containerd resolves them: relative to the file's directory; globs
    are expanded later, on the node."""
    parent_dir = PurePosixPath(parent).parent
    return [str(parent_dir / p) if not p.startswith("/") else p for p in doc.get("imports") or []]


def config_flag(argv: list[str]) -> str:
    """The config file a containerd command line names (--config, -c), else containerd's default."""
    for i, arg in enumerate(argv):
        for flag in ("--config", "-c"):
            if arg.startswith(flag + "="):
                return arg[len(flag) + 1 :]
            if arg == flag and i + 1 < len(argv):
                return argv[i + 1]
    return DEFAULT_CONFIG


def read_configs(files: NodeReader, node: str, main: str) -> list[tuple[str, str]]:
    """containerd's config files on the node, in the order it loads them (none if `main` is absent:
    containerd then runs on its defaults and reads no imports)."""
    loaded: list[tuple[str, str]] = []
    pending = [main]
    while pending:
        path = pending.pop(0)
        if path in (p for p, _ in loaded):  # containerd skips a file it has loaded: no circles
            continue
        text = files.read(node, path)
        if text is None:
            continue
        loaded.append((path, text))
        for pattern in imports(tomllib.loads(text), path):
            pending += sorted(files.glob(node, pattern)) if "*" in pattern else [pattern]
    return loaded


def local_config_path(argv_file: str) -> str:
    """The config file of a local lab node's containerd, from its command line (/proc/<pid>/cmdline)."""
    with open(argv_file, "rb") as f:
        return config_flag([a.decode() for a in f.read().split(b"\0") if a])


def of_node(files: NodeReader, node: str) -> CdiDirs:
    """The CDI dirs of the node's container runtime. A local lab's containerd is asked which file it
    was started with; on other clusters containerd's default file is read. A runtime other than
    containerd gets the CDI spec's default dirs, said so."""
    from kubernetes import client

    runtime = client.CoreV1Api(files.api).read_node(node).status.node_info.container_runtime_version
    if not runtime.startswith("containerd://"):
        return CdiDirs(
            DEFAULT_DIRS,
            True,
            f"the CDI defaults: the node's runtime is {runtime}, not containerd, and dralab reads only containerd's configuration",
        )
    if Capability.HOST_PROCESSES in files.lab.capabilities:
        pid = files.lab.local_node(node).component("containerd").pid
        main = local_config_path(f"/proc/{pid}/cmdline")
    else:
        main = DEFAULT_CONFIG
    return from_configs(read_configs(files, node, main), main)
