"""A node's host files as the checks see them: through a pod on that node with the node's root
mounted read-only, so the same checks work on local labs and on `kubeconfig` clusters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from clusters.providers import Lab
from suites.framework import pods
from suites.framework.pods import PodBuilder

NAMESPACE = "dralab-node-files"
HOST = "/host"


@dataclass
class Entry:
    mode: str  # octal permission bits, e.g. "644"
    kind: str  # "regular file", "directory", ...


@dataclass
class NodeFiles:
    lab: Lab
    api: Any
    _ready: set[str] = field(default_factory=set)

    def _pod(self, node: str) -> str:
        name = f"node-files-{node}"
        if node not in self._ready:
            core = client.CoreV1Api(self.api)
            try:
                core.create_namespace({"metadata": {"name": NAMESPACE}})
            except ApiException as e:
                if e.status != 409:
                    raise
            pod = PodBuilder(name).with_volume({"name": "host", "hostPath": {"path": "/"}}, HOST).build()
            pod["spec"]["nodeName"] = node  # no scheduling: this pod observes, it is not under test
            pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] = True
            pod["spec"]["tolerations"] = [{"operator": "Exists"}]
            try:
                pods.create(self.api, NAMESPACE, pod)
            except ApiException as e:
                if e.status != 409:
                    raise
            pods.wait_phase(self.api, NAMESPACE, name)
            self._ready.add(node)
        return name

    @staticmethod
    def _host(path: str) -> str:
        """The path under the pod's view of the node's root. /var/run is an absolute symlink to
        /run on the node, which would resolve inside the pod's own root: follow it here."""
        if path == "/var/run" or path.startswith("/var/run/"):
            path = "/run" + path[len("/var/run"):]
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
        out = self._observe(node, f"{pods.absent_unless(host)}find {host} -exec stat -c '%a|%F|%n' {{}} +") or ""
        entries = {}
        for line in out.splitlines():
            mode, kind, name = line.split("|", 2)
            entries[path + name[len(host):]] = Entry(mode, kind)
        return entries

    def glob(self, node: str, pattern: str) -> list[str]:
        host = self._host(pattern)
        out = self._observe(node, f"for f in {host}; do [ -e \"$f\" ] && echo \"$f\"; done; true") or ""
        found = [line[len(HOST):] for line in out.splitlines()]
        if pattern.startswith("/var/run/"):  # name them as asked
            found = ["/var" + f for f in found]
        return found

    def close(self) -> None:
        if self._ready:
            client.CoreV1Api(self.api).delete_namespace(NAMESPACE, grace_period_seconds=0)
