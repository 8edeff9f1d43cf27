"""Kernel objects of a local lab: the host bridge, and per node a network namespace joined to it
by a veth pair plus a persistent mount namespace in which the node's /var/lib, /run, /var/log,
/dev/vfio, /dev/infiniband, /etc/cdi, /opt/cni/bin and /tmp are its own directories in the lab dir (so kubelet,
containerd, CDI and NRI use their standard paths and two nodes never collide), its mounts shared
within the node as a real node's are.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path
from typing import Sequence

from basics.errors import LabBroken
from clusters.config import ClusterConfig, labs_root

# Directories of the host that a node replaces with its own (host path -> name in the node dir).
# /dev/vfio holds the node's vfio group nodes, made by its hardware agent (HW-08); /dev/infiniband
# its RDMA devices' nodes (fake_hardware/lab.py), which CDI specs name and containerd stats there.
# /etc/cdi is the other directory containerd reads CDI specs from: a driver writing there must not
# reach the host, other nodes or other labs. Nor may what pods put in /opt/cni/bin (a chart's init
# container installing its CNI plugin, as the SR-IOV DRA driver's does) or under /tmp (a device
# plugin's host paths): a real node's are its own.
NODE_PRIVATE_DIRS = {
    "/var/lib": "var-lib",
    "/run": "run",
    "/var/log": "var-log",
    "/dev/vfio": "dev/vfio",
    "/dev/infiniband": "dev/infiniband",
    "/etc/cdi": "etc-cdi",
    "/opt/cni/bin": "opt-cni-bin",
    "/tmp": "tmp",
}


def sh(*cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise LabBroken(f"`{' '.join(map(str, cmd))}` failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


def in_netns(netns: str, *cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sh("ip", "netns", "exec", netns, *cmd, check=check)


def create_bridge(cfg: ClusterConfig) -> None:
    sh("ip", "link", "add", cfg.bridge, "type", "bridge")
    sh("ip", "addr", "add", f"{cfg.host_ip}/{cfg.subnet.prefixlen}", "dev", cfg.bridge)
    sh("ip", "link", "set", cfg.bridge, "up")


def create_node_network(cfg: ClusterConfig, index: int, node: str) -> None:
    ns, veth = cfg.netns(node), cfg.veth(index)
    sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
    sh("ip", "link", "set", veth, "master", cfg.bridge, "up")
    in_netns(ns, "ip", "link", "set", "lo", "up")
    in_netns(ns, "ip", "addr", "add", f"{cfg.node_ip(index)}/{cfg.subnet.prefixlen}", "dev", "eth0")
    in_netns(ns, "ip", "link", "set", "eth0", "up")
    in_netns(ns, "ip", "route", "add", "default", "via", cfg.host_ip)
    # The node routes between its pods (cni0) and the lab network (eth0).
    in_netns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    # Pod traffic to a Service is DNATed by kube-proxy; when the backend is a pod on the same
    # bridge the packet is bridged, and only br_netfilter makes iptables see it.
    in_netns(ns, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1", check=False)
    for other, _ in enumerate(cfg.node_names(), start=1):
        if other != index:
            in_netns(ns, "ip", "route", "add", cfg.pod_cidr(other), "via", cfg.node_ip(other))
    # The host (API server) answers pods directly, without masquerading.
    sh("ip", "route", "add", cfg.pod_cidr(index), "via", cfg.node_ip(index))


def mount_ns_dir(cfg: ClusterConfig) -> Path:
    return cfg.lab_dir / "ns"


def mount_ns_file(cfg: ClusterConfig, node: str) -> Path:
    return mount_ns_dir(cfg) / f"{node}.mnt"


def uts_ns_file(cfg: ClusterConfig, node: str) -> Path:
    return mount_ns_dir(cfg) / f"{node}.uts"


def create_mount_ns_dir(cfg: ClusterConfig) -> None:
    # A persistent mount namespace is a bind mount of /proc/PID/ns/mnt, which the kernel
    # only allows on a mount that does not propagate.
    ns_dir = mount_ns_dir(cfg)
    ns_dir.mkdir(parents=True, exist_ok=True)
    sh("mount", "--bind", ns_dir, ns_dir)
    sh("mount", "--make-private", ns_dir)


def host_mount_point_mark(host_path: str) -> Path:
    return labs_root() / f"{host_path.strip('/').replace('/', '-')}.created"


def create_host_mount_points() -> None:
    """A node's private dir is a bind mount and needs a mount point on the host; a host without
    one (/dev/vfio without the vfio module, /dev/infiniband without RDMA, /etc/cdi without a
    CDI-enabled runtime, /opt/cni/bin without CNI plugins) gets it from the first lab, which leaves a
    mark naming the dirs it made (its parents too), and the last lab removes them."""
    for host_path in NODE_PRIVATE_DIRS:
        point = Path(host_path)
        missing = [p for p in (point, *point.parents) if not p.exists()]
        point.parent.mkdir(parents=True, exist_ok=True)
        try:
            point.mkdir()
        except FileExistsError:
            continue  # the host's own, or one another lab created and marked
        host_mount_point_mark(host_path).write_text("".join(f"{p}\n" for p in missing))


def orphaned_host_mount_points() -> list[Path]:
    """The mount points labs created on the host, when no lab is left to use them."""
    labs = labs_root() / "labs"
    if labs.is_dir() and any(labs.iterdir()):
        return []
    return [Path(p) for p in NODE_PRIVATE_DIRS if host_mount_point_mark(p).exists()]


def release_host_mount_points() -> None:
    for point in orphaned_host_mount_points():
        mark = host_mount_point_mark(str(point))
        made = [Path(p) for p in mark.read_text().split()] or [point]  # deepest first
        try:
            for directory in made:
                with contextlib.suppress(FileNotFoundError):
                    directory.rmdir()
        except OSError:
            continue  # something else put files there since: it is not ours to remove
        mark.unlink()


def create_node_mount_ns(cfg: ClusterConfig, node: str, node_dir: Path) -> None:
    create_host_mount_points()
    ns_file = mount_ns_file(cfg, node)
    ns_file.touch()
    # The new namespace starts as a copy of the host's mounts. Copies of network and mount
    # namespace files (under /run/netns and other labs' ns dirs) would keep those namespaces,
    # and their veths, alive after their owner deletes them: detach them first, and every other
    # copy at or under the directories the node replaces (/run/netns is a mount of its own when
    # /run is not, and the node's bind mounts would only hide it).
    detached = "|".join([*NODE_PRIVATE_DIRS, str(labs_root())])
    script = [
        f"for m in $(awk '{{print $5}}' /proc/self/mountinfo | grep -E '^({detached})(/|$)' | sort -r); do umount -l \"$m\" || true; done",
    ]
    for host_path, name in NODE_PRIVATE_DIRS.items():
        (node_dir / name).mkdir(parents=True, exist_ok=True)
        script.append(f"mount --bind {node_dir / name} {host_path}")
    # LAB-08: as on a systemd host, every mount of the node is shared, so a pod's HostToContainer
    # hostPath sees what the node mounts later (`ip netns add` under /run/netns) and a privileged
    # pod's Bidirectional mounts reach the node; the kubelet root dir is under the shared /var/lib.
    # Done last: --propagation private has cut every copy off from the host's peer groups, so each
    # mount gets a new group of its own and nothing propagates to the host or another node.
    script.append("mount --make-rshared /")
    sh("unshare", f"--mount={ns_file}", "--propagation", "private", "sh", "-ec", "\n".join(script))
    # The node's own hostname, as a machine has: a hostNetwork pod shares it, and drivers that
    # name their node by os.Hostname (dra-driver-cpu) find their Node.
    uts_file = uts_ns_file(cfg, node)
    uts_file.touch()
    sh("unshare", f"--uts={uts_file}", "hostname", node)


def node_exec_prefix(cfg: ClusterConfig, node: str) -> list[str]:
    """Run a command as a process of `node`: in its network, mount and UTS namespaces."""
    return [
        "nsenter",
        f"--net=/run/netns/{cfg.netns(node)}",
        f"--mount={mount_ns_file(cfg, node)}",
        f"--uts={uts_ns_file(cfg, node)}",
        "--",
    ]


def _mountinfo() -> list[str]:
    return Path("/proc/self/mountinfo").read_text().splitlines()


def mounts_under(prefix: Path) -> list[str]:
    """Mount points at or under `prefix`, deepest first (the order to unmount them in)."""
    points = [line.split()[4] for line in _mountinfo()]
    inside = [p for p in points if p == str(prefix) or p.startswith(f"{prefix}/")]
    return sorted(set(inside), key=lambda p: p.count("/"), reverse=True)


def unmount_all(prefix: Path) -> None:
    # Loop: a point can be mounted more than once, one mount over another.
    for _ in range(10):
        points = mounts_under(prefix)
        if not points:
            return
        for point in points:
            sh("umount", "-l", point, check=False)


def links_named(prefix: str) -> list[str]:
    out = sh("ip", "-o", "link", "show", check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [n for n in names if n.startswith(prefix)]


def lab_netns(lab: str | None) -> list[str]:
    """Node network namespaces of one lab (exactly: lab "e2e" must not match "e2e-x"), or of any."""
    d = Path("/run/netns")
    pattern = re.compile(rf"^dralab-{re.escape(lab) if lab else '.+'}-node-\d+$")
    return sorted(p.name for p in d.iterdir() if pattern.match(p.name)) if d.is_dir() else []


def delete_links(names: Sequence[str]) -> None:
    for name in names:
        sh("ip", "link", "delete", name, check=False)


def delete_netns(names: Sequence[str]) -> None:
    for name in names:
        sh("ip", "netns", "delete", name, check=False)
