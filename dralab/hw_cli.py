"""`dralab hw`: emulated hardware on its own (no Kubernetes), and fault injection for any lab."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from basics.progress import console
from clusters.config import ClusterConfig
from fake_hardware.profile import hardware_assignment


@click.group()
def hw() -> None:
    """Emulated GPUs and NICs: fake sysfs trees and veth-backed netdevs (HW-01..HW-06)."""


@hw.command()
@click.option("--profile", default=None, help="Node profile for every node (gpu-small, dgx-like, misaligned, ...).")
@click.option(
    "--cluster-profile", type=click.Path(dir_okay=False, path_type=Path), default=None, help="YAML: seed and a node profile per node."
)
@click.option("--name", default="hw", show_default=True)
@click.option("--nodes", default=2, show_default=True)
def up(profile: str | None, cluster_profile: Path | None, name: str, nodes: int) -> None:
    """Build the hardware of NODES nodes, each in its own network namespace, without Kubernetes."""
    from clusters.local import hardware, network, preflight
    from clusters.local.cluster import LocalCluster, require_no_live_lab, teardown
    from clusters.provision import ensure_go
    from clusters.provision.components import DRIVERS_UNDER_TEST
    from fake_hardware.lab import HardwareLab

    preflight.require_root("hw up")
    cfg = ClusterConfig(name=name, nodes=nodes)
    assignment, seed = hardware_assignment(profile, cluster_profile, cfg.node_names())
    cfg = cfg.model_copy(update={"hardware": assignment, "hardware_seed": seed})
    require_no_live_lab(cfg)
    HardwareLab(cfg.hardware_site())  # validates profiles and node names before anything is created
    binaries = ensure_go(DRIVERS_UNDER_TEST, offline=False)  # sysfs-fuse and modprobe, for the nodes
    cfg = preflight.allocate_slot(cfg)
    start = time.monotonic()
    try:
        cfg.lab_dir.mkdir(parents=True)
        LocalCluster.state_file(name).write_text(cfg.model_dump_json(indent=2))
        for node in cfg.node_names():
            network.sh("ip", "netns", "add", cfg.netns(node))
        # No NVML driver root: its paths hold in a node's mount namespace, which only a cluster's nodes
        # have (`python -m fake_hardware.nvml` renders one to try without a lab).
        lab = hardware.bring_up(cfg, cfg.lab_dir / "logs", nvidia=None, binaries=binaries, node_mount_ns={})
    except BaseException:
        teardown(cfg)
        raise
    console.print(f"hardware lab {name!r} up in {time.monotonic() - start:.2f}s")
    for hw_node in lab.nodes.values():
        console.print(f"  {hw_node.name}: {cfg.hardware[hw_node.name]}, tree {hw_node.sys_root}, netns {hw_node.netns}")


def _config(name: str) -> ClusterConfig:
    """The configuration of the lab `name`, which has emulated hardware."""
    from basics.errors import BadInput
    from clusters.config import saved_config

    cfg = saved_config(name)
    if cfg is None:
        raise BadInput(f"no lab named {name!r}: start one with `dralab hw up` or `dralab up --hardware PROFILE`")
    if not cfg.hardware:
        raise BadInput(f"lab {name!r} has no emulated hardware: start it with `dralab up --hardware PROFILE`")
    return cfg


def _lab(name: str):  # -> HardwareLab
    from fake_hardware.lab import HardwareLab

    return HardwareLab(_config(name).hardware_site())


@hw.command()
@click.option("--name", default="hw", show_default=True, help="The lab (a hardware-only lab or a cluster).")
@click.option("--json", "as_json", is_flag=True)
def show(name: str, as_json: bool) -> None:
    """List every GPU, NIC and VF with its address, NUMA node, netdev, MAC and state."""
    rows = _lab(name).describe()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        click.echo(
            f"{r['node']:8} {r['device']:10} {r['kind']:4} {r['bdf']} numa{r['numa']} "
            f"{r['netdev'] or '':12} {r['mac'] or r['uuid'] or '':40} {r['state']}"
        )


@hw.command()
@click.argument("action", type=click.Choice(["remove", "restore", "unhealthy", "healthy"]))
@click.option("--name", default="hw", show_default=True)
@click.option("--node", required=True)
@click.option("--device", required=True, help="Profile device name: gpu0, nic1, or a VF as nic1-vf2.")
def fault(action: str, name: str, node: str, device: str) -> None:
    """Inject or clear a fault: remove/restore a device or VF, mark a GPU unhealthy/healthy (HW-04)."""
    lab = _lab(name)
    {
        "remove": lab.remove_device,
        "restore": lab.restore_device,
        "unhealthy": lambda n, d: lab.set_gpu_health(n, d, False),
        "healthy": lambda n, d: lab.set_gpu_health(n, d, True),
    }[action](node, device)
    console.print(f"{action}: {device} on {node}")


@hw.command()
@click.option("--name", default="hw", show_default=True)
def down(name: str) -> None:
    """Remove a hardware-only lab: netdevs, fabric, namespaces and trees."""
    from clusters.lab_cli import exit_if_left_behind
    from clusters.local.cluster import remove
    from clusters.local.preflight import require_root

    require_root("hw down")
    start = time.monotonic()
    left = remove(_config(name))
    console.print(f"hardware lab {name!r} down in {time.monotonic() - start:.2f}s")
    exit_if_left_behind(left)
