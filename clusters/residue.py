"""`dralab residue` (LAB-05): anything a lab left behind on the host."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from clusters.config import labs_root, saved_config
from clusters.kind.config import kind_dir
from clusters.kind.engine import engine_dir
from clusters.local import cgroups, network, supervisor


@dataclass(frozen=True)
class Residue:
    kind: str
    what: str

    def __str__(self) -> str:
        return f"{self.kind:9} {self.what}"


def _links_of(lab_dir: Path) -> set[str]:
    """The links of a lab (bridge, node veths, fabric), known from its slot while its state file exists."""
    cfg = saved_config(lab_dir.name)
    return set(cfg.slot_links(network.links_named("dralab"))) if cfg else set()


def _kind(lab: str | None) -> list[Residue]:
    """A kind lab not taken down (its state dir stays until `down` deletes its cluster) and, with
    no lab named, a dockerd dralab started and did not stop (it goes with the last kind lab)."""
    root = kind_dir()
    dirs = [root / lab] if lab else (sorted(root.iterdir()) if root.is_dir() else [])
    found = [
        Residue("kind", f"the kind cluster of lab {d.name} ({d}): `dralab down --name {d.name}` deletes it") for d in dirs if d.is_dir()
    ]
    if lab is None:
        found += [
            Residue("process", f"{c.pid} dockerd started by dralab (log {c.log})")
            for c in supervisor.load(engine_dir()).values()
            if c.alive()
        ]
    return found


def find(lab: str | None = None) -> list[Residue]:
    """Residue of one lab (by name) or of every lab, local or kind. The kept logs are not residue (LAB-07)."""
    labs = labs_root() / "labs"
    lab_dir = labs / lab if lab else None
    found: list[Residue] = []
    for pid in supervisor.lab_processes(lab_dir):
        if (cmd := supervisor.command(pid)) is not None:
            found.append(Residue("process", f"{pid} {cmd[:160]}"))
    for point in network.mounts_under(lab_dir or labs):
        found.append(Residue("mount", point))
    for ns in network.lab_netns(lab):
        found.append(Residue("netns", ns))
    lab_links = _links_of(lab_dir) if lab_dir else None
    found += [Residue("link", n) for n in network.links_named("dralab") if lab_links is None or n in lab_links]
    cgroup = f"/dralab/{lab}" if lab else "/dralab"
    for tree in cgroups.trees(cgroup):
        found.append(Residue("cgroup", str(tree)))
    for pid in cgroups.pids(cgroup):
        found.append(Residue("process", f"{pid} in cgroup {cgroup}"))
    for orphan in network.orphaned_host_mount_points():
        found.append(Residue("files", f"{orphan} (created as the mount point of the labs' node {orphan}, no lab left)"))
    candidates = [lab_dir] if lab_dir else (sorted(labs.iterdir()) if labs.is_dir() else [])
    for d in candidates:
        if d.exists():
            # os.walk passes over what it cannot list (a dead FUSE mount: ENOTCONN); rglob raised.
            sockets = [os.path.join(top, f) for top, _dirs, files in os.walk(d) for f in files if f.endswith(".sock")][:5]
            found.append(Residue("files", f"{d}" + (f" (sockets: {', '.join(sockets)})" if sockets else "")))
    return found + _kind(lab)
