"""Lab lifecycle commands: up, down, status, residue."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click
from pydantic import ValidationError

from basics.errors import BadInput
from basics.progress import console
from clusters import versions
from clusters.config import ClusterConfig
from clusters.provider_registry import DEFAULT, PROVIDERS, provider as provider_named
from clusters.providers import Capability

if TYPE_CHECKING:
    from clusters.kind.cluster import KindCluster
    from clusters.local.cluster import LocalCluster


def kubernetes_version_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--kubernetes-version, one of the versions dralab builds (versions.KUBERNETES_VERSIONS)."""
    return click.option(
        "--kubernetes-version",
        type=click.Choice(versions.KUBERNETES_VERSIONS),
        default=versions.KUBERNETES,
        show_default=True,
        help=help_text,
    )


class ProviderChoice(click.Choice):
    """The registered providers (those with `needs`), read from the registry when --cluster is
    parsed or its help shown: a provider registered after the command was defined is offered too."""

    def __init__(self, needs: Capability | None = None) -> None:
        self.needs = needs
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(name for name, p in PROVIDERS.items() if self.needs is None or self.needs in p.capabilities)

    @choices.setter
    def choices(self, _: object) -> None:
        """click.Choice sets its tuple at construction: the registry's stays the one."""


def cluster_option(*decls: str, help_text: str, needs: Capability | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--cluster, a registered provider's name (of those with `needs`)."""
    return click.option("--cluster", *decls, type=ProviderChoice(needs), default=DEFAULT, show_default=True, help=help_text)


def _gates(values: tuple[str, ...], flag: str) -> dict[str, bool]:
    gates = {}
    for item in values:
        for part in filter(None, item.split(",")):
            name, _, value = part.partition("=")
            if value.lower() not in ("true", "false"):
                raise BadInput(f"{flag} {part!r}: expected NAME=true or NAME=false")
            gates[name.strip()] = value.lower() == "true"
    return gates


@click.command()
@click.option("--name", default="default", show_default=True, help="Lab name (one lab directory each).")
@click.option("--nodes", default=2, show_default=True, help="kubelet-backed nodes.")
@click.option("--slice-only-nodes", default=0, show_default=True, help="Node objects without a kubelet, run by kwok.")
@click.option("--feature-gates", multiple=True, help="NAME=true|false,... for every component.")
@click.option("--scheduler-feature-gates", multiple=True, help="Overrides for kube-scheduler only.")
@click.option("--runtime-config", multiple=True, help="API groups/versions, e.g. resource.k8s.io/v1beta2=true.")
@click.option("--kubelet-root-dir", default="/var/lib/kubelet", show_default=True)
@click.option("--slot", default=0, help="Network slot 1-50 (10.99.SLOT.0/24); default: first free.")
@click.option("--hardware", default=None, help="Emulated hardware profile for every node (e.g. dgx-like).")
@click.option(
    "--hardware-profile", type=click.Path(dir_okay=False, path_type=Path), default=None, help="YAML: seed and a hardware profile per node."
)
@click.option("--offline", is_flag=True, help="Do not build: fail if a component is not cached.")
@cluster_option(
    "provider", help_text="kind: the lab's nodes as a kind cluster (docs/lab.md: the kind provider).", needs=Capability.LAB_STARTS
)
@kubernetes_version_option("Kubernetes version of the lab's components (built once per version).")
def up(
    name: str,
    nodes: int,
    slice_only_nodes: int,
    feature_gates: tuple[str, ...],
    scheduler_feature_gates: tuple[str, ...],
    runtime_config: tuple[str, ...],
    kubelet_root_dir: str,
    slot: int,
    hardware: str | None,
    hardware_profile: Path | None,
    offline: bool,
    provider: str,
    kubernetes_version: str,
) -> None:
    """Start a lab cluster (LAB-02, LAB-03; LAB-06 with --cluster kind)."""
    from clusters.local.preflight import require_root

    try:
        cfg = ClusterConfig(
            name=name,
            kubernetes_version=kubernetes_version,
            nodes=nodes,
            slice_only_nodes=slice_only_nodes,
            feature_gates=_gates(feature_gates, "--feature-gates"),
            component_feature_gates={"kube-scheduler": _gates(scheduler_feature_gates, "--scheduler-feature-gates")}
            if scheduler_feature_gates
            else {},
            runtime_config=_gates(runtime_config, "--runtime-config"),
            kubelet_root_dir=kubelet_root_dir,
            slot=slot,
        )
    except ValidationError as e:
        raise BadInput(
            "invalid lab settings:\n" + "\n".join(f"  {'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        ) from None
    if hardware or hardware_profile:
        from fake_hardware.profile import hardware_assignment

        assignment, seed = hardware_assignment(hardware, hardware_profile, cfg.node_names())
        cfg = cfg.model_copy(update={"hardware": assignment, "hardware_seed": seed})
    require_root("up")
    start = time.monotonic()
    chosen = provider_named(provider)
    lab = chosen.up(cfg, offline=offline)
    console.print(f"{chosen.lab_noun} {cfg.name!r} up in {time.monotonic() - start:.1f}s")
    console.print(f"  kubeconfig: {lab.kubeconfig}")
    console.print(f"  kubectl:    {lab.kubectl} --kubeconfig {lab.kubeconfig} get nodes")
    console.print(f"  logs:       {lab.log_dir}")


@click.command()
@click.option("--name", default="default", show_default=True)
@click.option("--force", is_flag=True, help="Also clean up a lab whose state is missing or from a crashed run.")
def down(name: str, force: bool) -> None:
    """Stop a lab and remove everything it created (LAB-05)."""
    from clusters.config import labs_root, saved_config, state_file
    from clusters.local.cluster import remove
    from clusters.local.preflight import require_root

    require_root("down")
    start = time.monotonic()
    from clusters.kind.cluster import down_kind

    if down_kind(name):
        console.print(f"kind lab {name!r} down in {time.monotonic() - start:.1f}s")
        return
    cfg = saved_config(name)
    if cfg is None and force:
        cfg = ClusterConfig(name=name)  # no state: remove what is found by the lab's name
    elif cfg is None:
        raise BadInput(
            f"no lab named {name!r} ({state_file(name)} does not exist); `dralab down --name {name} "
            "--force` cleans up whatever a crashed run left"
        )
    left = remove(cfg)
    console.print(f"lab {name!r} down in {time.monotonic() - start:.1f}s; logs kept under {labs_root() / 'logs' / name}")
    exit_if_left_behind(left)


def exit_if_left_behind(left: list[str]) -> None:
    """Name what teardown could not remove and exit 3 (the lab broke, RP-04)."""
    for item in left:
        console.print(f"[red]left behind:[/red] {item}")
    if left:
        sys.exit(3)


@click.command()
@click.option("--name", default=None, help="One lab; default: every lab.")
def status(name: str | None) -> None:
    """Show each lab's components (alive or dead, with the log tail of dead ones) and nodes; for a
    kind lab its engine and node containers too."""
    from clusters.kind.cluster import kind_labs, load
    from clusters.local.cluster import LocalCluster

    names = [name] if name else sorted(set(LocalCluster.names()) | set(kind_labs()))
    if not names:
        console.print("no labs")
        return
    broken = False
    for lab in names:
        kind = load(lab)  # a kind lab with emulated hardware has a local lab's state too
        broken |= _kind_status(kind) if kind else _local_status(LocalCluster.load(lab))
    if broken:
        sys.exit(3)


def _local_status(cluster: "LocalCluster") -> bool:
    console.print(f"[bold]lab {cluster.cfg.name}[/bold]  {cluster.server}  kubeconfig {cluster.kubeconfig}")
    return _components_status(cluster.lab_dir) | _nodes_status(cluster.api)


def _kind_status(cluster: "KindCluster") -> bool:
    """A kind lab: the engine, the node containers (with their logs' tail when not running), kwok
    and the hardware agents if it has them, the nodes."""
    from basics.errors import log_tail
    from clusters.kind import engine

    console.print(f"[bold]kind lab {cluster.cfg.name}[/bold]  cluster {cluster.name}  kubeconfig {cluster.kubeconfig}")
    if not engine.engine_running():
        console.print(
            f"  [red]dead[/red]    Docker engine (`docker info` fails; dralab's dockerd log: "
            f"{engine.engine_dir() / 'logs' / 'dockerd.log'})"
        )
        return True
    ours = engine.started_by_dralab()
    console.print(f"  [green]running[/green] Docker engine ({f'dockerd started by dralab, pid {ours.pid}' if ours else 'not dralab’s'})")
    containers = cluster.containers()
    broken = not containers
    if not containers:
        console.print(
            f"  [red]no node containers[/red] of kind cluster {cluster.name}; the last kind log: "
            f"{cluster.log}\n    " + log_tail(cluster.log, 8).replace("\n", "\n    ")
        )
    for container, (state, docker_status) in sorted(containers.items()):
        running = state == "running"
        broken |= not running
        console.print(
            f"  {'[green]running[/green]' if running else '[red]dead[/red]   '} container {container}"
            + ("" if running else f" ({docker_status}); the last lines of `docker logs {container}`:")
        )
        if not running:
            console.print("    " + cluster.container_log(container).replace("\n", "\n    "), markup=False)
    broken |= _components_status(cluster.dir)  # kwok, for slice-only nodes
    if cluster.cfg.hardware:
        broken |= _components_status(cluster.cfg.lab_dir)
    return broken | _nodes_status(cluster.api)


def _components_status(lab_dir: Path) -> bool:
    """The supervised processes of a lab dir; True if any is dead."""
    from basics.errors import log_tail
    from clusters.local import supervisor

    broken = False
    for comp in supervisor.load(lab_dir).values():
        alive = comp.alive()
        broken |= not alive
        console.print(f"  {'[green]running[/green]' if alive else '[red]dead[/red]   '} {comp.name:28} pid {comp.pid}")
        if not alive:
            console.print("    " + log_tail(comp.log, 8).replace("\n", "\n    "))
    return broken


def _nodes_status(api: Callable[[], Any]) -> bool:
    """Each node's Ready condition; True if the API server cannot be reached."""
    try:
        from kubernetes import client

        for node in client.CoreV1Api(api()).list_node().items:
            ready = next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "?")
            console.print(f"  node {node.metadata.name:20} Ready={ready}")
    except Exception as e:  # the API server may be the dead component
        console.print(f"  [red]API server unreachable:[/red] {e}")
        return True
    return False


@click.command("residue")
@click.option("--name", default=None, help="One lab; default: anything of any lab.")
def residue_command(name: str | None) -> None:
    """List what labs left behind: processes, mounts, netns, links, cgroups, files. Exit 1 if any."""
    from clusters import residue

    found = residue.find(name)
    for item in found:
        console.print(str(item))
    console.print(f"{len(found)} residue item(s)")
    if found:
        sys.exit(1)


COMMANDS: list[click.Command] = [up, down, status, residue_command]
