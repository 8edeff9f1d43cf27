"""Checks made before anything is started, so bad input leaves nothing behind."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from basics.errors import BadInput, LabBroken
from basics.file_locks import exclusive
from clusters.config import MAX_SLOTS, ClusterConfig, labs_root
from clusters.local import cgroups, configs, network, supervisor
from clusters.provision import Toolchain


def require_root(action: str) -> None:
    if os.geteuid() != 0:
        raise BadInput(f"`dralab {action}` creates network namespaces, mounts and cgroups and must run as root (try: sudo dralab {action})")


# Every kubelet and containerd takes several inotify instances; Debian's default of 128 per user
# runs out with about five labs side by side (kubelet then dies: "inotify_init: too many open
# files"). The values kind's known issues recommend.
INOTIFY_MINIMUM = {"max_user_instances": 512, "max_user_watches": 524288}
INOTIFY = Path("/proc/sys/fs/inotify")


def raise_inotify_limits() -> list[str]:
    """Raise the host's inotify limits to INOTIFY_MINIMUM where lower; what was raised."""
    raised = []
    for name, minimum in INOTIFY_MINIMUM.items():
        path = INOTIFY / name
        current = int(path.read_text())
        if current < minimum:
            path.write_text(str(minimum))
            raised.append(f"fs.inotify.{name} {current} -> {minimum}")
    return raised


def live_processes(cfg: ClusterConfig) -> set[int]:
    """The lab's processes alive now: its components (by marker) and its containers (by cgroup)."""
    return set(supervisor.lab_processes(cfg.lab_dir)) | cgroups.pids(cfg.cgroup_parent)


def require_no_lab(cfg: ClusterConfig, alive: set[int]) -> None:
    """Refuse a lab directory that is still there; `alive` are its live processes."""
    if cfg.lab_dir.exists():
        pids = sorted(alive)
        running = (
            f"{len(pids)} of its processes are running (pids {', '.join(map(str, pids[:8]))}): it may be another run's"
            if pids
            else "could not be removed"
        )
        raise BadInput(
            f"a lab named {cfg.name!r} already exists at {cfg.lab_dir} and {running}; "
            f"run `dralab down --name {cfg.name} --force` to remove it"
        )


def known_feature_gates(tools: Toolchain) -> set[str]:
    """Gate names the pinned kube-apiserver knows, parsed from its --help once and cached."""
    cache = tools.kubernetes / "feature-gates.txt"
    if not cache.exists():
        help_text = subprocess.run([str(tools.kube("kube-apiserver")), "--help"], capture_output=True, text=True).stdout
        gates = sorted(set(re.findall(r"^\s+(?:kube:)?([A-Z][A-Za-z0-9]+)=true\|false", help_text, re.MULTILINE)))
        if not gates:
            raise LabBroken(f"could not read the feature gate list from `{tools.kube('kube-apiserver')} --help`")
        cache.write_text("\n".join(gates) + "\n")
    return set(cache.read_text().split())


def require_known_gates(cfg: ClusterConfig, tools: Toolchain) -> None:
    known = known_feature_gates(tools)
    asked = set(cfg.feature_gates) | {g for gates in cfg.component_feature_gates.values() for g in gates}
    unknown = sorted(asked - known)
    if unknown:
        close = {g: [k for k in known if k.lower().startswith(g.lower()[:6])][:3] for g in unknown}
        hints = "; ".join(f"{g} (similar: {', '.join(c) or 'none'})" for g, c in close.items())
        raise BadInput(f"unknown feature gate(s) for Kubernetes {tools.versions()['kubernetes']}: {hints}")


def _listeners() -> dict[tuple[str, int], int]:
    """(address, port) -> socket inode of every listening TCP socket of the host netns."""
    result = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] != "0A":  # LISTEN
            continue
        hex_ip, hex_port = fields[1].split(":")
        ip = ".".join(str(int(hex_ip[i : i + 2], 16)) for i in (6, 4, 2, 0))
        result[(ip, int(hex_port, 16))] = int(fields[9])
    return result


def _owner(inode: int) -> str:
    target = f"socket:[{inode}]"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) == target:
                    return f"pid {proc.name} ({(proc / 'comm').read_text().strip()})"
        except OSError:
            continue
    return "an unknown process"


def require_free_ports(cfg: ClusterConfig) -> None:
    listeners = _listeners()
    ports = {
        configs.ETCD_PORT: "etcd",
        configs.ETCD_PORT + 1: "etcd peer",
        configs.APISERVER_PORT: "kube-apiserver",
        configs.CONTROLLER_MANAGER_PORT: "kube-controller-manager",
        configs.SCHEDULER_PORT: "kube-scheduler",
    }
    for port, component in ports.items():
        for addr in ("0.0.0.0", cfg.host_ip):
            if (addr, port) in listeners:
                raise BadInput(
                    f"port {port} on {addr} (needed by {component}) is already in use by "
                    f"{_owner(listeners[(addr, port)])}; stop it, or pick another lab slot with --slot"
                )


@contextmanager
def slot_lock() -> Iterator[None]:
    """Held while a lab picks its slot and writes its state file, which marks the slot taken:
    labs brought up side by side (certify --shards) would otherwise pick the same one."""
    path = labs_root() / "slots.lock"  # not among the labs: an empty labs dir means no lab is left
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def locks_dir() -> Path:
    return labs_root() / "locks"  # not among the labs: an empty labs dir means no lab is left


def lab_name_lock(name: str) -> AbstractContextManager[None]:
    """Held by the process bringing lab `name` up (until it is up, or torn down again) or tearing it
    down: another command must not take a lab in that state for one left by a dead run."""
    return exclusive(
        locks_dir() / f"lab-{name}.lock",
        lambda pid: f"lab {name!r} is being brought up or torn down by another dralab (pid {pid}): wait for it, or give another --name",
    )


def allocate_slot(cfg: ClusterConfig) -> ClusterConfig:
    """The config with a free slot: no other lab uses it and no bridge of that name exists."""
    taken = {int(json.loads(p.read_text())["slot"]) for p in (labs_root() / "labs").glob("*/cluster.json") if p.parent.name != cfg.name}
    bridges = (re.fullmatch(r"dralab(\d+)", n) for n in network.links_named("dralab"))
    taken |= {int(m.group(1)) for m in bridges if m}
    if cfg.slot:
        if cfg.slot in taken:
            raise BadInput(f"lab slot {cfg.slot} is used by another lab; choose another --slot or omit it")
        return cfg
    for slot in range(1, MAX_SLOTS + 1):
        if slot not in taken:
            return cfg.model_copy(update={"slot": slot})
    raise BadInput(f"all {MAX_SLOTS} lab slots are in use: `dralab status --all` lists the labs; `dralab down` one")
