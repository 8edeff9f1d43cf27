"""Cluster providers as the suites see them: a `Lab` with API access, nodes and logs, and the
`Provider` that makes it, with what its labs can do (`Capability`).

Each provider is a folder of its own (clusters/local, clusters/kind, clusters/kubeconfig) and a
line of clusters/provider_registry.py. `local` and `kind` start labs: dralab owns their nodes,
their configuration and their emulated hardware. `kubeconfig` uses an existing cluster (for
example one with real hardware), where what only an owned lab can do (restarting a node's
kubelet, reading its files) is unsupported and the tests that need it SKIP, naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from clusters import audit, nri_log, plugin_calls, watch_log
from clusters.config import ClusterConfig
from basics.errors import NotSupported
from clusters.local.cluster import LocalCluster
from clusters.local.node import LocalNode
from clusters.provision import Image
from fake_hardware.site import HardwareSite


class Capability(StrEnum):
    """What a lab can do beyond the Kubernetes API, by provider (Lab.capabilities). A check asks for
    what it needs (Lab.require); on a lab without it the check SKIPs, naming what it needed."""

    HOST_ACCESS = "host access to the nodes' files and services"
    EMULATED_HARDWARE = "emulated hardware"
    IMAGE_LOADING = "image archives loaded into the nodes"
    COMPONENT_RESTARTS = "kubelet and containerd restarts under running pods"
    LAB_STARTS = "labs dralab starts, of the configuration the run asks for"
    OTHER_LABS = "labs of other cluster configurations started beside the run's"
    HOST_PROCESSES = "the nodes' processes on this host"
    NODE_REBOOTS = "node reboots"
    AUDIT_LOG = "the API server's audit log of claim status writes"
    REUSED_LABS = "labs kept up for the next run (--reuse-labs)"
    SHARDED_RUNS = "runs in shards side by side, each on labs of its own"


class Provider(Protocol):
    """Where a run's labs come from: a folder of clusters/ and a line of clusters/provider_registry.py."""

    @property
    def name(self) -> str:
        """What --cluster calls it."""

    @property
    def description(self) -> str:
        """One line, for --cluster's help."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What its labs can do beyond the Kubernetes API."""

    @property
    def lab_noun(self) -> str:
        """What its labs are called in progress lines ("lab", "kind lab")."""

    def require_version(self, kubernetes_version: str) -> None:
        """BadInput unless its labs can run this Kubernetes version: checked before anything starts."""

    def for_run(self, cfg: ClusterConfig) -> ClusterConfig:
        """`cfg` as a run's lab on this provider (kind's named apart from the run's local labs)."""

    def up(self, cfg: ClusterConfig, *, offline: bool = False, images: Sequence[Image] = ()) -> Lab:
        """A lab of `cfg` started for the caller, `images` in its nodes (Capability.LAB_STARTS);
        `Lab.down` takes it down."""

    def running(self, cfg: ClusterConfig) -> Lab | None:
        """The live lab started earlier with exactly `cfg`, if there is one (Capability.REUSED_LABS)."""

    def attach(self, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
        """The existing cluster of `kubeconfig`, whose nodes' kubelets use `kubelet_root_dir`
        (providers without Capability.LAB_STARTS)."""


class NodeHandle(Protocol):
    name: str

    @property
    def kubelet_root_dir(self) -> str: ...
    def host_path(self, node_path: str) -> Path: ...
    def restart_kubelet(self) -> None: ...
    def restart_containerd(self) -> None: ...
    def stop_kubelet(self) -> None: ...
    def start_kubelet(self) -> object: ...
    def wait_kubelet(self) -> None: ...
    @property
    def kubelet_kubeconfig(self) -> Path: ...
    def kill_pod_sandbox(self, pod_uid: str) -> None: ...
    def reboot(self) -> None: ...
    @property
    def plugin_calls_file(self) -> Path: ...


@dataclass
class Lab:
    provider: Provider
    kubeconfig: Path
    kubectl: Path
    log_dir: Path
    nodes: list[NodeHandle]
    slice_only_nodes: list[str] = field(default_factory=list)
    # The fields a capability guards, each read through the accessor that asks for it: the embedded
    # lab (local_cluster), the configuration of a lab dralab started (started_config), how image
    # archives get into its nodes (import_images).
    local: LocalCluster | None = None
    cfg: ClusterConfig | None = None
    image_loader: Callable[[Sequence[Path]], None] | None = None
    # The lab's parts that died, each with its evidence: none known of a cluster dralab did not start.
    dead_parts: Callable[[], list[str]] = list
    # When this run took the lab on: what its nodes recorded before is an earlier run's (a lab reused
    # across runs, as selfcheck's variants share one), not this run's to judge.
    taken: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    # Takes down a lab dralab started, its logs kept (Provider.up); nothing of a cluster it did not.
    down: Callable[[], object] = lambda: None

    def api(self):  # -> kubernetes.client.ApiClient
        from clusters.api_client import client_for

        return client_for(self.kubeconfig)

    def node(self, name: str) -> NodeHandle:
        return next(n for n in self.nodes if n.name == name)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self.provider.capabilities

    def require(self, capability: Capability, needed_for: str) -> None:
        """NotSupported (the check does not apply here: a SKIP naming what it needed, not a harness
        error) unless this lab has `capability`."""
        if capability not in self.capabilities:
            raise NotSupported(f"{needed_for} needs {capability.value}, which the {self.provider.name} provider does not give")

    def local_node(self, name: str) -> LocalNode:
        return self.local_cluster(f"reaching node {name}'s processes").node(name)

    def local_cluster(self, needed_for: str) -> LocalCluster:
        """The embedded local lab."""
        self.require(Capability.HOST_PROCESSES, needed_for)
        assert self.local is not None  # the local provider's labs have it
        return self.local

    def started_config(self, needed_for: str) -> ClusterConfig:
        """The configuration, emulated hardware included, of a lab dralab started."""
        self.require(Capability.LAB_STARTS, needed_for)
        assert self.cfg is not None  # every lab dralab started has it
        return self.cfg

    def hardware_site(self, needed_for: str) -> HardwareSite:
        """What the emulated hardware of this lab's nodes is made of (fake_hardware/site.py)."""
        self.require(Capability.EMULATED_HARDWARE, needed_for)
        return self.started_config(needed_for).hardware_site()

    def import_images(self, archives: Sequence[Path]) -> None:
        """The image archives into every node's container runtime."""
        self.require(Capability.IMAGE_LOADING, f"importing {len(archives)} image archive(s)")
        assert self.image_loader is not None  # the providers that load images give it
        self.image_loader(archives)

    def audit_log(self, needed_for: str) -> Path:
        """The API server's audit log of claim status writes (clusters/audit.py)."""
        self.require(Capability.AUDIT_LOG, needed_for)
        return self.log_dir / audit.LOG_NAME

    @property
    def restartable(self) -> tuple[str, ...]:
        """What dralab can restart under a running pod on this lab's nodes."""
        return (("kubelet", "containerd") if Capability.COMPONENT_RESTARTS in self.capabilities else ()) + (
            ("node",) if Capability.NODE_REBOOTS in self.capabilities else ()
        )

    @property
    def plugin_registries(self) -> tuple[str, str] | None:
        """The kubelet's plugins_registry and the driver registry the plugins' sockets go to
        instead, in a lab whose nodes run the plugin recorder (clusters/plugin_calls.py): every lab
        dralab started, local or kind."""
        if Capability.LAB_STARTS not in self.capabilities:
            return None
        root = self.started_config("the plugin recorder's registries").kubelet_root_dir
        return plugin_calls.kubelet_registry(root), plugin_calls.driver_registry(root)

    def registration_dir(self, node: NodeHandle) -> str:
        """Where the drivers' registration sockets are on `node`: the driver registry under the
        plugin recorder, else the kubelet's plugins_registry."""
        return self.plugin_registries[1] if self.plugin_registries else plugin_calls.kubelet_registry(node.kubelet_root_dir)

    def plugin_calls(self) -> list[plugin_calls.PluginCall]:
        """Every call between the kubelets and their plugins recorded since this run took the lab,
        node by node."""
        if self.plugin_registries is None:
            raise NotSupported(f"the {self.provider.name} provider's nodes run no plugin recorder: no kubelet-plugin calls are recorded")
        return [call for node in self.nodes for call in plugin_calls.read(node.plugin_calls_file) if call.start >= self.taken]

    def record_container_files(self, records: list[dict[str, Any]]) -> None:
        """Keep what the suites saw in containers (one record each: when, where, what the container
        uses, its files) for the run's trace and the checks over it."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / plugin_calls.CONTAINER_FILES_LOG).open("a") as out:
            out.writelines(json.dumps({"kind": "ContainerFiles", **r}) + "\n" for r in records)

    def container_files(self) -> list[dict[str, Any]]:
        """Every record of files seen in a container since this run took the lab."""
        log = self.log_dir / plugin_calls.CONTAINER_FILES_LOG
        if not log.exists():
            return []
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        return [r for r in records if datetime.fromisoformat(r["start"]) >= self.taken]

    def claims_allocated(self) -> dict[str, dict[str, Any]]:
        """Each claim the run saw allocated in this lab, by UID: its last version in the claim log
        (clusters/watch_log.py), which a lab dralab started keeps; none for a kubeconfig cluster."""
        return watch_log.allocations(self.log_dir / watch_log.CLAIM_LOG)

    def claim_history(self) -> dict[str, list[dict[str, Any]]]:
        """Every version of each claim the run saw allocated in this lab, by UID, in the order the
        claim log saw them; none for a kubeconfig cluster."""
        return watch_log.allocation_history(self.log_dir / watch_log.CLAIM_LOG)

    def claim_versions(self) -> list[dict[str, Any]]:
        """Every version of every claim created since this run took the lab, as the claim log saw them."""
        return watch_log.versions(self.log_dir / watch_log.CLAIM_LOG, self.taken)

    def pod_versions(self) -> list[dict[str, Any]]:
        """Every version of every pod created since this run took the lab, as the pod log saw them."""
        return watch_log.versions(self.log_dir / watch_log.POD_LOG, self.taken)

    def nri_errors(self) -> list[str]:
        """containerd's lines against NRI plugins since this run took the lab (clusters/nri_log.py);
        none where the nodes' containerd logs are not at hand (a cluster dralab did not start)."""
        return nri_log.errors(self.log_dir, self.taken)

    def check_components(self) -> None:
        if Capability.HOST_PROCESSES in self.capabilities:
            self.local_cluster("checking the lab's components").check_components()
