"""What a lab cluster looks like: nodes, feature gates, runtime-config, paths and addresses."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clusters import versions
from fake_hardware.site import HardwareSite

Component = Literal["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"]
COMPONENTS: tuple[Component, ...] = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy")

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
SERVICE_CIDR = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
MAX_SLOTS = 50


def labs_root() -> Path:
    """Where lab directories live: outside /var/lib and /run, which each node's mount namespace replaces."""
    return Path(os.environ.get("DRALAB_LABS", "/srv/dralab"))


def state_file(name: str) -> Path:
    """A lab's configuration as it was started (its slot included), written first at bring-up."""
    return labs_root() / "labs" / name / "cluster.json"


def saved_config(name: str) -> "ClusterConfig | None":
    """The configuration lab `name` was started with; None when it has no state file."""
    path = state_file(name)
    return ClusterConfig.model_validate_json(path.read_text()) if path.exists() else None


class ClusterConfig(BaseModel):
    """A local lab cluster. Everything that differs between two labs on one host derives from `slot`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "default"
    kubernetes_version: str = versions.KUBERNETES
    nodes: int = Field(2, ge=1, le=9, description="kubelet-backed nodes")
    slice_only_nodes: int = Field(0, ge=0, le=5000, description="Node objects with no kubelet, run by kwok")
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    # Per-component overrides on top of feature_gates, e.g. a gate on in the API server but off in the scheduler.
    component_feature_gates: dict[Component, dict[str, bool]] = Field(default_factory=dict)
    runtime_config: dict[str, bool] = Field(default_factory=dict)
    # kube-scheduler's and kube-controller-manager's client QPS (burst twice that); None keeps their
    # defaults (50 and 20). At 50 the scheduler's own API calls (claim status, binding, events: about
    # 3.5 per pod) cap it near 14 pods/s, so scale runs raise it as upstream's scheduler_perf does; at
    # 20 the node lifecycle controller lifts the not-ready taints of about 10 new nodes a second.
    control_plane_api_qps: int | None = Field(None, ge=1)
    kubelet_root_dir: str = "/var/lib/kubelet"
    slot: int = Field(0, ge=0, le=MAX_SLOTS, description="0: pick the first free one")
    # Emulated hardware: node name -> hardware profile (fake_hardware/profiles), and the seed of its IDs.
    hardware: dict[str, str] = Field(default_factory=dict)
    hardware_seed: int = 0

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not DNS_LABEL.match(v):
            raise ValueError(f"lab name {v!r} must be a DNS label of at most 32 characters (a-z, 0-9, -)")
        return v

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, v: str) -> str:
        if why := versions.unsupported(v):
            raise ValueError(why)
        return v

    @field_validator("kubelet_root_dir")
    @classmethod
    def _root_dir(cls, v: str) -> str:
        p = Path(v)
        if not p.is_absolute() or not str(p).startswith("/var/lib/") or ".." in p.parts:
            raise ValueError(
                f"kubelet_root_dir {v!r} must be an absolute path under /var/lib/ "
                "(each node's /var/lib is private to it, so any such path stays inside the lab)"
            )
        return str(p)

    @model_validator(mode="after")
    def _gates(self) -> "ClusterConfig":
        for name in list(self.feature_gates) + [g for gates in self.component_feature_gates.values() for g in gates]:
            if not re.match(r"^[A-Z][A-Za-z0-9]+$", name):
                raise ValueError(f"feature gate {name!r} is not a gate name (CamelCase, e.g. DRADerivedAttributes)")
        return self

    # Derived names and addresses -------------------------------------------------------

    def node_names(self) -> list[str]:
        return [f"node-{i}" for i in range(1, self.nodes + 1)]

    def slice_only_node_names(self) -> list[str]:
        return [f"slice-node-{i}" for i in range(1, self.slice_only_nodes + 1)]

    @property
    def lab_dir(self) -> Path:
        return labs_root() / "labs" / self.name

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"10.99.{self.slot}.0/24")

    @property
    def host_ip(self) -> str:
        return str(self.subnet.network_address + 1)

    def node_ip(self, index: int) -> str:
        return str(self.subnet.network_address + 10 + index)

    def pod_cidr(self, index: int) -> str:
        return f"10.{100 + self.slot}.{index}.0/24"

    @property
    def cluster_cidr(self) -> str:
        return f"10.{100 + self.slot}.0.0/16"

    @property
    def bridge(self) -> str:
        return f"dralab{self.slot}"

    def slot_links(self, names: list[str]) -> list[str]:
        """The links of this lab's slot among `names` (slot 1 must not match slot 10's dralab10)."""
        return [n for n in names if re.fullmatch(rf"dralab{self.slot}(?:[a-z].*)?", n)]

    def veth(self, index: int) -> str:
        return f"dralab{self.slot}n{index}"

    def netns(self, node: str) -> str:
        return f"dralab-{self.name}-{node}"

    def hardware_site(self) -> HardwareSite:
        """What the lab's emulated hardware needs of it; its links are named from the bridge's, as
        the slot's links are (slot_links)."""
        return HardwareSite(
            lab_dir=self.lab_dir,
            netns={n: self.netns(n) for n in self.node_names()},
            link_prefix=self.bridge,
            hardware=self.hardware,
            seed=self.hardware_seed,
        )

    @property
    def cgroup_parent(self) -> str:
        return f"/dralab/{self.name}"

    def gates_for(self, component: Component) -> dict[str, bool]:
        return {**self.feature_gates, **self.component_feature_gates.get(component, {})}


def flag_map(values: dict[str, bool]) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(values.items()))
