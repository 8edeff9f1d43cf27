"""What the hardware of a lab needs of the lab: where it keeps its files, its nodes and their
network namespaces, the prefix its host links share, and which node has which hardware profile.
The lab hands it down (a local lab's ClusterConfig.hardware_site), so the hardware knows no cluster."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class HardwareSite(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lab_dir: Path
    # Every node of the lab, in order (a node's place numbers its netdevs' fabric ends), with its
    # network namespace.
    netns: dict[str, str]
    # The fabric bridge and the netdevs' fabric ends are host links named from it, so that the lab
    # finds and removes them with its own.
    link_prefix: str
    # Node name -> hardware profile (fake_hardware/profiles, or a .yaml path), and the seed of the IDs.
    hardware: dict[str, str] = Field(default_factory=dict)
    seed: int = 0

    def node_names(self) -> list[str]:
        return list(self.netns)

    @property
    def fabric_bridge(self) -> str:
        return f"{self.link_prefix}fab"

    def fabric_peer(self, node_index: int, k: int) -> str:
        return f"{self.link_prefix}f{node_index}x{k}"
