"""The labs the test run starts, by what each is for. A configuration other than the session
lab starts once per run, when the first test that needs it asks (the `extra_lab` fixture), so
tests are grouped by cluster configuration rather than each starting its own."""

from __future__ import annotations

from clusters.config import ClusterConfig

# Every configuration's name starts with it; a run that starts labs next to another's renames them.
PREFIX = "e2e"

# Two kubelet nodes with dgx-like emulated hardware, two slice-only nodes, DRA alpha features on.
SESSION_LAB = ClusterConfig(
    name=PREFIX,
    nodes=2,
    slice_only_nodes=2,
    feature_gates={"DRADerivedAttributes": True, "DRAListTypeAttributes": True},
    hardware={"node-1": "dgx-like", "node-2": "dgx-like"},
)

# DRADerivedAttributes off everywhere (DA-09, LAB-02), resource.k8s.io/v1beta2 served, kubelets
# rooted at a non-default path (LAB-04: drivers deployed there must follow it), two emulated GPUs.
GATES_OFF = ClusterConfig(
    name="e2e-gates-off",
    nodes=1,
    feature_gates={"DRADerivedAttributes": False},
    runtime_config={"resource.k8s.io/v1beta2": True},
    kubelet_root_dir="/var/lib/kubelet-dralab",
    hardware={"node-1": "gpu-small"},
)

# Gate skew (DA-09): DRADerivedAttributes on in the API server, off in the scheduler; and
# DRAListTypeAttributes off, so the API server refuses list results (DA-08).
SCHEDULER_GATE_OFF = ClusterConfig(
    name="e2e-skew",
    nodes=1,
    slice_only_nodes=1,
    feature_gates={"DRADerivedAttributes": True, "DRAListTypeAttributes": False},
    component_feature_gates={"kube-scheduler": {"DRADerivedAttributes": False}},
)

# Placement (DA-04): node-1's GPUs and NICs sit on different NUMA nodes, node-2 has aligned pairs.
PLACEMENT = ClusterConfig(
    name="e2e-placement",
    nodes=2,
    feature_gates={"DRADerivedAttributes": True},
    hardware={"node-1": "misaligned", "node-2": "dgx-like"},
)


# The performance report's lab (PF-01 bring-up, PF-02/03 pod startup): two nodes of dgx-like GPUs.
PERF = ClusterConfig(name="perf", nodes=2, hardware={"node-1": "dgx-like", "node-2": "dgx-like"})


def scale(slice_only_nodes: int) -> ClusterConfig:
    """The scale harness (DA-11, PF-04): slice-only nodes carry the devices; one kubelet node
    because a lab has at least one."""
    return ClusterConfig(
        name="e2e-scale",
        nodes=1,
        slice_only_nodes=slice_only_nodes,
        feature_gates={"DRADerivedAttributes": True},
        control_plane_api_qps=200,
    )


def on_kind(cfg: ClusterConfig) -> ClusterConfig:
    """A lab configuration as a kind cluster (--cluster kind), named apart from the run's local labs:
    its hardware lives in a local lab's directory of its name."""
    return ClusterConfig.model_validate(cfg.model_dump() | {"name": f"{cfg.name}-kind"})


def at_version(cfg: ClusterConfig, kubernetes_version: str, known_gates: set[str]) -> tuple[ClusterConfig, list[str]]:
    """The configuration on another Kubernetes version, without the feature gates that version's
    components lack (the tests needing them SKIP, as the catalogue's `gates` say); and those gates."""
    dropped = sorted(
        {g for g in cfg.feature_gates if g not in known_gates}
        | {g for gates in cfg.component_feature_gates.values() for g in gates if g not in known_gates}
    )
    changes = {
        "kubernetes_version": kubernetes_version,
        "feature_gates": {g: on for g, on in cfg.feature_gates.items() if g in known_gates},
        "component_feature_gates": {
            c: {g: on for g, on in gates.items() if g in known_gates} for c, gates in cfg.component_feature_gates.items()
        },
    }
    return ClusterConfig.model_validate(cfg.model_dump() | changes), dropped


def renamed(cfg: ClusterConfig, prefix: str, **changes: object) -> ClusterConfig:
    """The configuration under another name prefix (e2e-skew -> cert-skew), with other changes."""
    return ClusterConfig.model_validate(cfg.model_dump() | {"name": prefix + cfg.name.removeprefix(PREFIX), **changes})
