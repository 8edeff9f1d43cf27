"""What a container must hold when its plugin answered Allocate (the kubelet's record of the answer,
checkpoint.AllocateAnswer), against what it does hold: each env var with its value, a mount at each
container path (read-only when asked), a device node at each container path (the same device as
the node's at the host path), and the edits of each CDI device the answer names. And the answer
against the devices the kubelet granted: it names none of the resource's others, each device node
it hands is a granted GPU's own (or its driver's shared one), and the container holds the node of
every granted GPU and of no other. Pure: the check observes (Observed), this module judges."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from suites.device_plugin.checkpoint import AllocateAnswer, Entry
from suites.device_plugin.devices import NodeGpus
from suites.framework.cdi_specs import edits as cdi_edits

ALLOCATE = "Allocate"
CHARACTER = "character special file"  # stat %F
DEVICE_KINDS = (CHARACTER, "block special file")
DEV = "/dev"  # where the runtime and its hooks put a container's device nodes: looked through whole


@dataclass(frozen=True)
class DeviceFile:
    """A file as stat names it: its type and, for a device, its numbers ("major:minor")."""

    kind: str
    numbers: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.numbers}" if self.numbers else self.kind


@dataclass(frozen=True)
class Promise:
    """One thing the container must hold, and who promised it (Allocate or a CDI device)."""

    source: str
    what: str  # "env", "mount" or "device node"
    target: str  # the env var's name, or a path in the container
    value: str = ""  # an env var's value
    read_only: bool = False  # a mount's
    host_path: str = ""  # a device node's, on the node


def promises(answer: AllocateAnswer, cdi_specs: list[dict[str, Any]]) -> tuple[list[Promise], list[str]]:
    """The answer's promises with its CDI devices' edits resolved against the specs, and a
    violation for each CDI device no spec defines. The runtime applies CDI edits after the
    kubelet's container config, so a CDI edit of the same env var or path replaces Allocate's."""
    found: list[Promise] = [Promise(ALLOCATE, "env", k, v) for k, v in sorted(answer.envs.items())]
    found += [Promise(ALLOCATE, "mount", m.container_path, read_only=m.read_only) for m in answer.mounts]
    found += [Promise(ALLOCATE, "device node", d.container_path, host_path=d.host_path) for d in answer.devices]
    problems = []
    for name in answer.cdi_devices:
        edits = cdi_edits(cdi_specs, name)
        if edits is None:
            problems.append(f"{ALLOCATE} named CDI device {name}, which no CDI spec in the runtime's CDI spec directories defines")
            continue
        source = f"CDI device {name}"
        for edit in edits:
            found += [Promise(source, "env", *e.split("=", 1)) for e in edit.get("env") or [] if "=" in e]
            found += [
                Promise(source, "mount", m["containerPath"], read_only="ro" in (m.get("options") or [])) for m in edit.get("mounts") or []
            ]
            found += [
                Promise(source, "device node", d["path"], host_path=d.get("hostPath") or d["path"]) for d in edit.get("deviceNodes") or []
            ]
    last = {(p.what, p.target): p for p in found}
    return list(last.values()), problems


def foreign_devices(answer: AllocateAnswer, cdi_specs: list[dict[str, Any]], others: list[str]) -> list[str]:
    """Each of `others` (the resource's devices the container was not granted) that the answer or
    the edits of its CDI devices name, with where: a plugin answering with another device's env,
    path or CDI device hands that device out. An ID counts where it stands whole (not inside a
    longer name); a bare number (an index as ID) is not looked for, as numbers turn up in paths
    and values by chance."""
    places = _places(answer, cdi_specs)
    found = []
    for device in sorted(others):
        if device.isdigit():
            continue
        named = re.compile(rf"(?<![\w-]){re.escape(device)}(?![\w-])")
        where = [place for place, text in places if named.search(text)]
        if where:
            found.append(f"{device} (in {', '.join(where)})")
    return found


def _places(answer: AllocateAnswer, cdi_specs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each part of the answer, and the edits of each CDI device it names: (where, its text)."""
    places = [(f"env {k}={v}", f"{k}={v}") for k, v in sorted(answer.envs.items())]
    places += [(f"mount {m.container_path} from {m.host_path}", f"{m.container_path} {m.host_path}") for m in answer.mounts]
    places += [(f"device node {d.container_path} ({d.host_path})", f"{d.container_path} {d.host_path}") for d in answer.devices]
    places += [(f"annotation {k}={v}", f"{k}={v}") for k, v in sorted(answer.annotations.items())]
    for name in answer.cdi_devices:
        places.append((f"CDI device {name}", name))
        places += [(f"the edits of CDI device {name}", json.dumps(edit, ensure_ascii=False)) for edit in cdi_edits(cdi_specs, name) or []]
    return places


@dataclass
class ContainerView:
    """What the container holds, as its main process sees it."""

    env: dict[str, str] = field(default_factory=dict)
    mounts: dict[str, list[str]] = field(default_factory=dict)  # mount point -> its mount options
    # Asked path, and every device file under /dev -> what it is; an asked path it lacks: kind "".
    nodes: dict[str, DeviceFile] = field(default_factory=dict)
    # Asked path -> the path it resolves to: the runtime mounts onto a destination with its
    # symlinks resolved (an image's /var/run -> /run), and mountinfo names that.
    resolved: dict[str, str] = field(default_factory=dict)

    def mount_at(self, path: str) -> list[str] | None:
        """The options of the mount at `path` as the container resolves it; None if there is none."""
        return self.mounts.get(self.resolved.get(path, path))

    def as_evidence(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "mount points": self.mounts,
            "device nodes": {p: str(f) for p, f in self.nodes.items()},
            "mount paths resolved": self.resolved,
        }


_NODES, _MOUNTS, _ENV = "---device nodes", "---mount paths", "---env"
_STAT = "'%F|%t:%T|%n'"  # %t:%T: a device's numbers, in hex


def view_script(nodes: list[str], mounts: list[str]) -> str:
    """Prints the container's mounts, what each of `nodes` and each device file under /dev is,
    where each of `mounts` resolves to, and PID 1's environment (the container's command, so
    exactly what the runtime gave it; NUL-separated, as values may hold newlines)."""

    def quoted(paths: list[str]) -> str:
        return " ".join(shlex.quote(p) for p in paths)

    return (
        f"set -e; cat /proc/1/mountinfo; echo {_NODES}; for p in {quoted(nodes)}; do "
        f'if [ -e "$p" ]; then stat -L -c {_STAT} "$p"; else echo "||$p"; fi; done; '
        f"find {DEV} \\( -type c -o -type b \\) -exec stat -c {_STAT} {{}} +; "
        f"echo {_MOUNTS}; for p in {quoted(mounts)}; do "
        'echo "$p|$(readlink -f "$p" || echo "$p")"; done; '
        f"echo {_ENV}; cat /proc/1/environ"
    )


def parse_view(out: str) -> ContainerView:
    head, _, environ = out.partition(f"\n{_ENV}\n")
    mountinfo, _, rest = head.partition(f"{_NODES}\n")
    nodes, _, mounts = rest.partition(f"{_MOUNTS}\n")
    view = ContainerView()
    for line in mountinfo.splitlines():
        # mountinfo(5): ID parent major:minor root mount-point options ...; paths octal-escaped.
        fields = line.split(" ")
        if len(fields) > 5:
            view.mounts[_unescape(fields[4])] = fields[5].split(",")
    for line in nodes.splitlines():
        kind, numbers, path = line.split("|", 2)
        view.nodes.setdefault(path, DeviceFile(kind, _decimal(numbers) if kind in DEVICE_KINDS else ""))
    for line in mounts.splitlines():
        path, _, resolved = line.rpartition("|")
        view.resolved[path] = resolved
    view.env = dict(e.split("=", 1) for e in environ.split("\0") if "=" in e)
    return view


def _decimal(numbers: str) -> str:
    """stat's hex major:minor in decimal, as devices are named (195:0)."""
    major, minor = numbers.split(":")
    return f"{int(major, 16)}:{int(minor, 16)}"


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash as \\ooo."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def violations(expected: list[Promise], view: ContainerView, host: dict[str, DeviceFile]) -> list[str]:
    """Each promise the container breaks, named with what it holds instead. `host`: what the node
    has at each device node's host path (absent: nothing)."""
    found = []
    for p in expected:
        if p.what == "env":
            got = view.env.get(p.target)
            if got != p.value:
                holds = f"{p.target}={got!r}" if got is not None else f"no {p.target}"
                found.append(f"{p.source} set env {p.target}={p.value!r}, the container has {holds}")
        elif p.what == "mount":
            options = view.mount_at(p.target)
            if options is None:
                found.append(f"{p.source} mounted {p.target}, the container has no mount there")
            elif p.read_only and "ro" not in options:
                found.append(f"{p.source} mounted {p.target} read-only, the container has it {','.join(options)}")
        else:
            held, on_node = view.nodes.get(p.target, DeviceFile("")), host.get(p.host_path)
            if not held.kind:
                found.append(f"{p.source} gave device node {p.target} ({p.host_path}), the container has none")
            elif held.kind not in DEVICE_KINDS or held != on_node:
                found.append(
                    f"{p.source} gave device node {p.target}: the container's is a {held}, "
                    f"the node's {p.host_path} a {on_node or 'missing file'}"
                )
    return found


def gpu_node_problems(
    granted: list[str], expected: list[Promise], view: ContainerView, host: dict[str, DeviceFile], gpus: NodeGpus
) -> list[str]:
    """The device nodes against the granted devices, each matched to its GPU by its numbers: each
    device node the answer (or a CDI device it names) hands is a granted GPU's own or a node of
    their driver no one GPU owns; and the container holds the node of each granted GPU and of no
    other GPU, wherever in /dev or at the answer's paths."""
    problems = [f"the kubelet granted {i}, which names none of the GPUs of {gpus.node}" for i in granted if gpus.named(i) is None]
    mine = {g for g in map(gpus.named, granted) if g is not None}
    names = sorted(g.name for g in mine)
    for p in expected:
        on_node = host.get(p.host_path)
        if p.what != "device node" or on_node is None:  # a missing host file is violations()'
            continue
        owner = gpus.owning(on_node.numbers) if on_node.kind == CHARACTER else None
        if owner is None and (on_node.kind != CHARACTER or on_node.numbers not in gpus.shared):
            problems.append(
                f"{p.source} gave device node {p.target} from {p.host_path}, a {on_node}: none of the device nodes of the GPUs "
                f"of {gpus.node} nor of their driver ({', '.join(sorted(gpus.shared.values()))})"
            )
        elif owner is not None and owner not in mine:
            problems.append(f"{p.source} gave device node {p.target} from {p.host_path}, the node of {owner}; granted: {names}")
    held = {g for f in view.nodes.values() if f.kind == CHARACTER for g in [gpus.owning(f.numbers)] if g is not None}
    seen = sorted(f"{path} ({f.numbers})" for path, f in view.nodes.items() if f.kind == CHARACTER and gpus.owning(f.numbers))
    problems += [f"the container holds no device node of granted {g}; its GPU device nodes: {seen}" for g in sorted(mine - held, key=str)]
    problems += [f"the container holds the device node of {g}, which it was not granted ({names})" for g in sorted(held - mine, key=str)]
    return problems


@dataclass
class Observed:
    """One container's allocation as the check saw it: the kubelet's record (its checkpoint entry,
    and the resource's healthy devices then), the CDI specs of the node, what the container
    holds, and what the node has at each device node's host path."""

    pod: str  # namespace/name
    container: str
    init: bool
    node: str
    asked: int  # devices of the resource the container's limits ask for
    entry: Entry
    registered: list[str]
    specs: list[dict[str, Any]]
    view: ContainerView
    host: dict[str, DeviceFile]

    @property
    def name(self) -> str:
        return f"pod {self.pod} container {self.container}"

    def as_evidence(self) -> dict[str, Any]:
        return {
            "container": self.name,
            "the kubelet's record (checkpoint)": self.entry.as_evidence(),
            "what it holds": self.view.as_evidence(),
            "on the node": {p: str(f) for p, f in self.host.items()},
        }


def judge(seen: Observed, gpus: NodeGpus) -> list[str]:
    """DP-04 for one container: granted as many distinct devices as it asked for, an answer naming
    none of the resource's other devices, every promise of it held, every device node its GPU's."""
    ids = seen.entry.device_ids
    problems = []
    if not len(set(ids)) == len(ids) == seen.asked:
        problems.append(f"it asked for {seen.asked} devices, the kubelet granted {len(ids)}: {ids}")
    # The container gets whatever the answer names: naming another device hands that one out.
    foreign = foreign_devices(seen.entry.answer, seen.specs, sorted(set(seen.registered) - set(ids)))
    if foreign:
        problems.append("the plugin's Allocate answer for them names devices the kubelet did not grant: " + "; ".join(foreign))
    expected, wrong = promises(seen.entry.answer, seen.specs)
    problems += wrong + violations(expected, seen.view, seen.host) + gpu_node_problems(ids, expected, seen.view, seen.host, gpus)
    return problems
