"""The emulated hardware of a lab's nodes: build it, inject faults (HW-04), show it.

Each node's tree is kept in plain files (`NodeHardware.tree`), which the lab writes as the hardware
changes. Everyone else sees it served through FUSE by the node's hardware agent (fake_hardware/agent.py),
which gives writes the kernel's semantics: at NODE_SYSFS_ROOT in the node's private /var/lib (see
clusters/local/network.py), the same path on every node, which is what a driver DaemonSet mounts,
and at that directory's host path (`sys_root`) for dralab and its user. A node's device nodes
(/dev/vfio, /dev/infiniband) live in its own dev dir in the lab dir, which the node mounts at
/dev/vfio and /dev/infiniband. Teardown is the lab's: deleting the node network namespaces and the
slot's links removes the netdevs and the fabric, unmounting and removing the lab dir removes the
trees and the device nodes.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from basics.errors import BadInput
from fake_hardware import netdevs, nvml, sysfs
from fake_hardware.profile import cpu_ids, load_node_profile
from fake_hardware.site import HardwareSite
from fake_hardware.system_tree import cpu_list
from fake_hardware.topology import NodePlan, PciFunction, plan_node

NODE_SYSFS_ROOT = "/var/lib/dralab-hardware/sys"
HOST_CPUS_ONLINE = "/sys/devices/system/cpu/online"
# The NVIDIA driver root of a node with GPUs (fake_hardware/nvml.py), beside its tree.
NODE_DRIVER_ROOT = "/var/lib/dralab-hardware/driver-root"
# The node's root as charts mount it (fake_hardware/host_root.py), beside them.
NODE_HOST_ROOT = "/var/lib/dralab-hardware/host-root"
# /dev/infiniband/rdma_cm is rdma_ucm's misc device: major 10 and a minor the kernel hands out as the
# module loads, so it depends on load order (recent kernels count up from 256, where a 6.18 host has
# vga_arbiter, userfaultfd, vsock and cpu_dma_latency at 256-259; older ones count down from 127).
# The lab fixes one just past those boot-time ones, the same on every node and in every run.
RDMA_CM = (10, 262)


def _make_char_device(path: Path, numbers: tuple[int, int], mode: int) -> None:
    """A device node made aside and renamed in, so it never shows the umask's mode (mknod: as root)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    os.mknod(tmp, stat.S_IFCHR | mode, os.makedev(*numbers))
    os.chmod(tmp, mode)
    os.replace(tmp, path)


@dataclass
class NodeHardware:
    site: HardwareSite
    index: int
    plan: NodePlan

    @property
    def name(self) -> str:
        return self.plan.node

    @property
    def netns(self) -> str:
        return self.site.netns[self.name]

    @property
    def sys_root(self) -> Path:
        """The tree as the kernel serves it (once the agent runs), at the host path of NODE_SYSFS_ROOT
        inside the node's private /var/lib."""
        return self._host_path(NODE_SYSFS_ROOT)

    @property
    def tree(self) -> Path:
        """The tree's state, plain files: what the lab and the kernel stand-in change."""
        return self.site.lab_dir / "nodes" / self.name / "sysfs-state"

    @property
    def driver_root(self) -> Path:
        return self._host_path(NODE_DRIVER_ROOT)

    @property
    def host_root(self) -> Path:
        return self._host_path(NODE_HOST_ROOT)

    def _host_path(self, node_var_lib_path: str) -> Path:
        return self.site.lab_dir / "nodes" / self.name / "var-lib" / Path(node_var_lib_path).relative_to("/var/lib")

    @property
    def dev_dir(self) -> Path:
        """The node's own /dev entries (its /dev/vfio and /dev/infiniband), as a host path."""
        return self.site.lab_dir / "nodes" / self.name / "dev"

    def agent_ready_file(self) -> Path:
        return self.site.lab_dir / "nodes" / self.name / "hardware-agent.ready"

    def peer(self, fn: PciFunction) -> str:
        return self.site.fabric_peer(self.index, self.plan.netdevs().index(fn))

    def present_vfs(self, pf: PciFunction) -> list[PciFunction]:
        """The PF's VFs in the tree now: they come and go with sriov_numvfs and faults."""
        vfs = [self.plan.by_bdf(b) for b in pf.virtfns]
        return [vf for vf in vfs if sysfs.device_dir(self.tree, vf).is_dir()]

    def sync_num_vfs(self, pf: PciFunction) -> None:
        """sriov_numvfs shows how many VFs are present."""
        sysfs.set_num_vfs(self.tree, pf, len(self.present_vfs(pf)))

    def plug(self, fns: list[PciFunction], bound: bool = True) -> None:
        """Functions appear in the tree; bound to their driver, those with a netdev get it and those
        with an RDMA device its /dev/infiniband nodes."""
        for fn in fns:
            if bound:
                self._rdma_nodes(fn, present=True)
            sysfs.write_function(self.tree, self.plan, fn)
            if not bound:
                sysfs.set_driver(self.tree, fn, None)
                sysfs.unregister_devices(self.tree, self.plan, fn)
        if bound:
            netdevs.create([(f, self.peer(f)) for f in fns if f.netdev], self.netns, self.site.fabric_bridge)

    def unplug(self, fns: list[PciFunction]) -> None:
        for fn in reversed(fns):
            sysfs.remove_function(self.tree, self.plan, fn)
            self._rdma_nodes(fn, present=False)
        netdevs.delete([self.peer(f) for f in fns if f.netdev])

    def make_device_nodes(self) -> None:
        """/dev/infiniband as the node boots: rdma_cm once the RDMA stack loads (a node with RDMA
        NICs), and the nodes of every RDMA device present."""
        if any(fn.rdma_device for fn in self.plan.functions):
            _make_char_device(self.dev_dir / "infiniband" / "rdma_cm", RDMA_CM, 0o666)
        for fn in self.plan.at_boot():
            self._rdma_nodes(fn, present=True)

    def _rdma_nodes(self, fn: PciFunction, present: bool) -> None:
        """The function's RDMA character devices in /dev/infiniband: made before the tree shows them
        and removed after it stopped, so a driver that finds one in the tree can hand its node on."""
        for char in sysfs.rdma_char_devices(fn):
            node = self.dev_dir / "infiniband" / char.name
            if present:
                _make_char_device(node, (char.major, char.minor), char.mode)
            else:
                node.unlink(missing_ok=True)

    def lost_netdevs(self, host_links: set[str]) -> list[PciFunction]:
        """Functions whose driver has a netdev registered (it is in the tree) that no longer
        exists: a veth dies with the namespace it was moved into, a real NIC's netdev does not."""
        return [
            fn
            for fn in self.plan.netdevs()
            if self.peer(fn) not in host_links and (sysfs.device_dir(self.tree, fn) / "net" / fn.netdev).is_dir()  # type: ignore[operator]  # netdevs(): each has one
        ]

    def return_netdevs(self, fns: list[PciFunction]) -> None:
        """Back in the node's namespace, as the kernel returns a physical netdev whose namespace is
        destroyed (under the tree's name: the kernel would keep the name it had there)."""
        netdevs.create([(f, self.peer(f)) for f in fns], self.netns, self.site.fabric_bridge)

    def register_devices(self, fn: PciFunction) -> None:
        """What the function's own driver registers when bound: its netdev (tree and veth), its RDMA
        device (tree and /dev/infiniband nodes)."""
        self._rdma_nodes(fn, present=True)
        sysfs.register_devices(self.tree, self.plan, fn)
        if fn.netdev:
            netdevs.create([(fn, self.peer(fn))], self.netns, self.site.fabric_bridge)

    def unregister_devices(self, fn: PciFunction) -> None:
        sysfs.unregister_devices(self.tree, self.plan, fn)
        self._rdma_nodes(fn, present=False)
        if fn.netdev:
            netdevs.delete([self.peer(fn)])


class HardwareLab:
    def __init__(self, site: HardwareSite) -> None:
        self.site = site
        unknown = sorted(set(site.hardware) - set(site.node_names()))
        if unknown:
            raise BadInput(
                f"hardware is assigned to {', '.join(unknown)}, which the lab does not have (its nodes: {', '.join(site.node_names())})"
            )
        profiles = {name: load_node_profile(profile) for name, profile in site.hardware.items()}
        online = set(cpu_ids(Path(HOST_CPUS_ONLINE).read_text().strip()))
        for name, profile in profiles.items():
            missing = profile.cpus_missing_on_host(online)
            if missing:
                raise BadInput(
                    f"hardware profile {site.hardware[name]} (node {name}) names CPUs {cpu_list(missing)}, "
                    f"which this machine does not have (online: {cpu_list(sorted(online))}); its CPUs "
                    "are the host's own (cpus_on_host): list only those, or set cpus_on_host: false"
                )
        self.nodes = {
            name: NodeHardware(site, site.node_names().index(name) + 1, plan_node(profile, name, site.seed))
            for name, profile in profiles.items()
        }

    @property
    def state_file(self) -> Path:
        return self.site.lab_dir / "hardware-faults.json"

    @property
    def site_file(self) -> Path:
        """The site as built, for the node's hardware agents (fake_hardware/agent.py)."""
        return self.site.lab_dir / "hardware-site.json"

    def node(self, name: str) -> NodeHardware:
        if name not in self.nodes:
            raise BadInput(f"node {name!r} has no emulated hardware (nodes with hardware: {', '.join(self.nodes)})")
        return self.nodes[name]

    # Build ------------------------------------------------------------------------------

    def build(self, nvidia: nvml.Userspace | None = None) -> None:
        """The trees, netdevs and fabric; with the lab's NVML and nvidia-smi, a driver root on every node with GPUs."""
        netdevs.create_fabric(self.site.fabric_bridge)
        for hw in self.nodes.values():
            hw.make_device_nodes()
            sysfs.write_tree(hw.tree, hw.plan)
            hw.sys_root.mkdir(parents=True, exist_ok=True)  # where the agent mounts the tree
            if nvidia is not None and nvml.device_nodes(hw.plan):
                nvml.install(hw.plan, hw.driver_root, NODE_SYSFS_ROOT, nvidia)
            netdevs.create([(fn, hw.peer(fn)) for fn in hw.plan.at_boot() if fn.netdev], hw.netns, self.site.fabric_bridge)
        self._save({})
        sysfs.write_atomic(self.site_file, self.site.model_dump_json(indent=2))

    # Faults (HW-04) ----------------------------------------------------------------------

    def faults(self) -> dict[str, dict[str, list[str]]]:
        return json.loads(self.state_file.read_text()) if self.state_file.exists() else {}

    def _save(self, faults: dict[str, dict[str, list[str]]]) -> None:
        sysfs.write_atomic(self.state_file, json.dumps(faults, indent=2))

    def _record(self, node: str, kind: str, device: str, present: bool) -> None:
        faults = self.faults()
        entries = faults.setdefault(node, {}).setdefault(kind, [])
        if present and device not in entries:
            entries.append(device)
        elif not present and device in entries:
            entries.remove(device)
        self._save(faults)

    def remove_device(self, node: str, device: str) -> None:
        """The device disappears: its tree entries (a NIC's VFs too) and its netdevs."""
        hw = self.node(node)
        fn = self._device(hw, device, ("gpu", "nic", "vf"))
        hw.unplug([fn, *hw.present_vfs(fn)])
        self._sync_num_vfs(hw, fn)
        self._record(node, "removed", device, True)

    def restore_device(self, node: str, device: str) -> None:
        hw = self.node(node)
        fn = self._device(hw, device, ("gpu", "nic", "vf"))
        # A NIC comes back as it booted: with the VFs its profile enables.
        hw.plug([fn] + [vf for vf in map(hw.plan.by_bdf, fn.virtfns) if vf.at_boot])
        self._sync_num_vfs(hw, fn)
        self._record(node, "removed", device, False)

    @staticmethod
    def _sync_num_vfs(hw: NodeHardware, fn: PciFunction) -> None:
        """After a VF came or went, its PF's sriov_numvfs counts the VFs present."""
        if fn.kind == "vf":
            hw.sync_num_vfs(hw.plan.by_bdf(fn.physfn or ""))

    def set_gpu_health(self, node: str, device: str, healthy: bool) -> None:
        hw = self.node(node)
        sysfs.set_gpu_health(hw.tree, self._device(hw, device, ("gpu",)), healthy)
        self._record(node, "unhealthy", device, not healthy)

    def _device(self, hw: NodeHardware, device: str, kinds: tuple[str, ...]) -> PciFunction:
        try:
            fn = hw.plan.by_name(device)
        except KeyError as e:
            raise BadInput(str(e.args[0])) from None
        if fn.kind not in kinds:
            raise BadInput(f"{device} on {hw.name} is a {fn.kind}; this fault applies to: {', '.join(kinds)}")
        return fn

    # Show ---------------------------------------------------------------------------------

    def describe(self) -> list[dict[str, object]]:
        faults = self.faults()
        rows = []
        for hw in self.nodes.values():
            removed = set(faults.get(hw.name, {}).get("removed", []))
            unhealthy = set(faults.get(hw.name, {}).get("unhealthy", []))
            for fn in hw.plan.functions:
                if fn.kind in ("gpu", "nic", "vf"):
                    state = (
                        "removed"
                        if fn.name in removed or (fn.physfn and hw.plan.by_bdf(fn.physfn).name in removed)
                        else "not enabled"
                        if not sysfs.device_dir(hw.tree, fn).exists()
                        else "unhealthy"
                        if fn.name in unhealthy
                        else "present"
                    )
                    rows.append(
                        {
                            "node": hw.name,
                            "device": fn.name,
                            "kind": fn.kind,
                            "bdf": fn.bdf,
                            "numa": fn.numa,
                            "netdev": fn.netdev,
                            "mac": fn.mac,
                            "uuid": fn.gpu["uuid"] if fn.gpu else None,
                            "state": state,
                        }
                    )
        return rows
