"""A node's host files as the checks see them: through a pod on that node with the node's root
mounted read-only, so the same checks work on local labs and on `kubeconfig` clusters."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, NoReturn

from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.providers import Lab
from suites.framework import cdi_dirs, pods, validation
from suites.framework.cdi_dirs import CdiDirs
from suites.framework.pods import PodBuilder
from suites.framework.verdicts import skip
from suites.framework.waits import wait_for

NAMESPACE = "dralab-node-files"
HOST = "/host"


@dataclass
class Entry:
    mode: str  # octal permission bits, e.g. "644"
    kind: str  # "regular file", "directory", ...
    numbers: str = ""  # a device file's "major:minor"


# stat's format for an Entry and its path; %t:%T are a device's numbers in hex (0:0 for other files).
_STAT = "%a|%F|%t:%T|%n"


def _entry(line: str) -> tuple[str, Entry]:
    """A line stat printed in _STAT: the path and its entry."""
    mode, kind, numbers, name = line.split("|", 3)
    major, minor = (int(n, 16) for n in numbers.split(":"))
    return name, Entry(mode, kind, f"{major}:{minor}" if kind.endswith("special file") else "")


# Pod Security admission: the observer mounts the node's root (hostPath), which only the
# privileged level allows.
POD_SECURITY = {"pod-security.kubernetes.io/enforce": "privileged"}
REMEDY = (
    f"let dralab run a privileged pod with hostPath / in namespace {NAMESPACE}: allow the namespace "
    f"label pod-security.kubernetes.io/enforce=privileged (or exempt the namespace in the PodSecurity "
    f"admission configuration and in any policy webhook), and give dralab's user the right to create the "
    f"namespace and its pods"
)


def _refused(what: str, e: ApiException) -> NoReturn:
    """SKIP: the cluster does not let dralab observe its nodes' files; not the driver's FAIL."""
    skip(f"the cluster refused {what} ({e.status} {e.reason}: {validation.message(e)}), so this check cannot read node files", REMEDY)


def _terminating(core: client.CoreV1Api) -> bool:
    try:
        return core.read_namespace(NAMESPACE).status.phase == "Terminating"
    except ApiException as e:
        if e.status in (403, 404):  # absent, or not ours to read: creating it answers
            return False
        raise


@dataclass
class NodeFiles:
    lab: Lab
    api: Any
    _ready: set[str] = field(default_factory=set)
    _cdi_dirs: dict[str, CdiDirs] = field(default_factory=dict)

    def _namespace(self) -> None:
        """The observers' namespace, labelled for Pod Security admission (also when it exists)."""
        core = client.CoreV1Api(self.api)
        # One an earlier session left terminating would refuse the pod as if forbidden.
        wait_for(f"namespace {NAMESPACE} of an earlier session deleted", lambda: not _terminating(core), 120)
        try:
            core.create_namespace({"metadata": {"name": NAMESPACE, "labels": POD_SECURITY}})  # type: ignore[arg-type]  # a dict: validate_call builds the model
            return
        except ApiException as e:
            if e.status == 403:
                _refused(f"creating namespace {NAMESPACE}", e)
            if e.status != 409:
                raise
        try:
            core.patch_namespace(NAMESPACE, {"metadata": {"labels": POD_SECURITY}})
        except ApiException as e:
            if e.status == 403:
                _refused(f"labelling namespace {NAMESPACE} {POD_SECURITY}", e)
            raise

    def _pod(self, node: str) -> str:
        name = f"node-files-{node}"
        if node not in self._ready:
            self._namespace()
            pod = PodBuilder(name).with_volume({"name": "host", "hostPath": {"path": "/"}}, HOST).build()
            pod["spec"]["nodeName"] = node  # no scheduling: this pod observes, it is not under test
            pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] = True
            pod["spec"]["tolerations"] = [{"operator": "Exists"}]
            try:
                pods.create(self.api, NAMESPACE, pod)
            except ApiException as e:
                if e.status == 403:  # Pod Security or a policy webhook said no
                    _refused(f"the node observer pod {NAMESPACE}/{name} (privileged, hostPath /)", e)
                if e.status != 409:
                    raise
            pods.wait_phase(self.api, NAMESPACE, name)
            self._ready.add(node)
        return name

    def cdi_dirs(self, node: str) -> CdiDirs:
        """Where the node's container runtime reads CDI specs (read once per node)."""
        if node not in self._cdi_dirs:
            self._cdi_dirs[node] = cdi_dirs.of_node(self, node)
        return self._cdi_dirs[node]

    def find(self, node: str, dirs: tuple[str, ...], name: str) -> tuple[str, str] | None:
        """(path, content) of file `name` in the first of `dirs` that has it, None if none does."""
        for d in dirs:
            text = self.read(node, f"{d}/{name}")
            if text is not None:
                return f"{d}/{name}", text
        return None

    @staticmethod
    def _host(path: str) -> str:
        """The path under the pod's view of the node's root. /var/run is an absolute symlink to
        /run on the node, which would resolve inside the pod's own root: follow it here."""
        if path == "/var/run" or path.startswith("/var/run/"):
            path = "/run" + path[len("/var/run") :]
        return HOST + path

    def _observe(self, node: str, script: str) -> str | None:
        return pods.observe(self.lab, NAMESPACE, self._pod(node), script)

    def read(self, node: str, path: str) -> str | None:
        """The file's content, None if there is no such file."""
        host = self._host(path)
        return self._observe(node, f"{pods.absent_unless(host)}cat {host}")

    def version(self, node: str, path: str) -> str | None:
        """The file's inode and modification time (ns): it changes whenever the file is written anew.
        The inode alone does not do: two atomic replacements in a row can reuse the first inode."""
        host = self._host(path)
        out = self._observe(node, f"{pods.absent_unless(host)}stat -c '%i %y' {host}")
        return out.strip() if out is not None else None

    def listing(self, node: str, path: str) -> dict[str, Entry]:
        """Every file and directory under `path` (itself included), by host path; empty if it does not exist."""
        host = self._host(path)
        out = self._observe(node, f"{pods.absent_unless(host)}find {host} -exec stat -c '{_STAT}' {{}} +") or ""
        return {path + name[len(host) :]: entry for name, entry in map(_entry, out.splitlines())}

    def entries(self, node: str, paths: list[str]) -> dict[str, Entry]:
        """Each of `paths` that exists on the node, with its entry (one look for all of them)."""
        if not paths:
            return {}
        hosts = {self._host(p): p for p in paths}
        quoted = " ".join(shlex.quote(h) for h in hosts)
        out = self._observe(node, f'for p in {quoted}; do [ -e "$p" ] && stat -c \'{_STAT}\' "$p"; done; true') or ""
        return {hosts[name]: entry for name, entry in map(_entry, out.splitlines())}

    def glob(self, node: str, pattern: str) -> list[str]:
        host = self._host(pattern)
        out = self._observe(node, f'for f in {host}; do [ -e "$f" ] && echo "$f"; done; true') or ""
        found = [line[len(HOST) :] for line in out.splitlines()]
        if pattern.startswith("/var/run/"):  # name them as asked
            found = ["/var" + f for f in found]
        return found

    def close(self) -> None:
        if self._ready:
            client.CoreV1Api(self.api).delete_namespace(NAMESPACE, grace_period_seconds=0)
