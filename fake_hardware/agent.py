"""The hardware agent: one process per node with emulated hardware, playing the kernel's part (HW-08).

It starts the node's FUSE server (fake_hardware/cmd/sysfs-fuse) over the tree's state, which
mounts the tree where the node and the host see it, and answers the server's questions: each
write to an attribute the kernel acts on (sriov_numvfs, driver_override, a driver's bind/unbind/
new_id/remove_id, the bus's drivers_probe) goes to fake_hardware.kernel while the writer waits, and
its errno is what write(2) returns. Every half second it also returns to the node the netdevs whose
namespace was destroyed, as the kernel does for a real NIC's (a veth would die with it), and lists
the node's own links (lo, eth0, cni0, pods' veth ends) in class/net as virtual netdevs, at each
change `ip monitor link` reports. When the
agent dies, the server unmounts the tree and exits (its parent-death signal).

    python -m fake_hardware.agent --site LAB_DIR/hardware-site.json --node node-1 \\
        --sysfs-fuse BINARY [--node-mount-ns FILE]
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import select
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from fake_hardware import netdevs
from fake_hardware.kernel import ACTED_ATTRIBUTES, NodeKernel
from fake_hardware.lab import NODE_SYSFS_ROOT, HardwareLab, NodeHardware
from fake_hardware.site import HardwareSite

RENEW_SECONDS = 0.5


def fuse_command(binary: Path, hw: NodeHardware, node_mount_ns: Path | None) -> list[str]:
    """The server's command line: the tree at its host path, and at the node's path in the node's
    mount namespace when it has one (a cluster's node; `dralab hw up` nodes have only a netns)."""
    mounts = [str(hw.sys_root), *([f"{node_mount_ns}:{NODE_SYSFS_ROOT}"] if node_mount_ns else [])]
    return [str(binary), "--backing", str(hw.tree), "--acted", ",".join(ACTED_ATTRIBUTES), *(arg for m in mounts for arg in ("--mount", m))]


def serve(kernel: NodeKernel, command: list[str], ready_file: Path) -> None:
    kernel.install()
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    assert server.stdin and server.stdout
    if json.loads(server.stdout.readline() or "{}").get("ready") is not True:
        raise SystemExit(f"the FUSE server did not mount the tree (exit {server.wait()}); its errors are above")
    ready_file.write_text(f"{os.getpid()}\n")
    logging.info("serving %s at %s", kernel.root, ", ".join(command[command.index("--mount") + 1 :: 2]))
    # The node's own links follow its namespace's: synced at each link event, as the kernel adds a
    # netdev's class/net entry as it registers it (dranet reads class/net for every link it sees).
    monitor = netdevs.watch_links(kernel.hw.netns)  # referenced for as long as the agent serves
    links: IO[Any] | None = monitor.stdout  # IO[Any]: watched beside the server's text stdout
    kernel.sync_node_links()
    checked = time.monotonic()
    while True:
        # The server asks one write at a time and waits for its answer: a line is never left buffered.
        readable = select.select([server.stdout, *([links] if links else [])], [], [], RENEW_SECONDS)[0]
        if links in readable:
            if not os.read(links.fileno(), 1 << 16):  # the namespace went (the node is being torn down)
                links.close()
                links = None
            kernel.sync_node_links()
        if server.stdout in readable:
            line = server.stdout.readline()
            if not line:
                raise SystemExit(f"the FUSE server exited ({server.wait()}): the tree is no longer served")
            asked = json.loads(line)
            try:
                code = kernel.written(asked["path"], asked["value"])
            except OSError as e:  # the function went away meanwhile (a fault, another write): the node lives on
                logging.exception("write to %s", asked["path"])
                code = e.errno or errno.EIO
            server.stdin.write(json.dumps({"errno": code}) + "\n")
        if time.monotonic() - checked >= RENEW_SECONDS:  # not after every write: writes come in bursts
            checked = time.monotonic()
            kernel.return_lost_netdevs(set(os.listdir("/sys/class/net")), checked)  # fabric ends are host links


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True, help="the lab's hardware-site.json, which HardwareLab.build writes")
    parser.add_argument("--node", required=True)
    parser.add_argument("--sysfs-fuse", type=Path, required=True, help="the FUSE server's binary")
    parser.add_argument("--node-mount-ns", type=Path, help="the node's mount namespace file, to mount the tree there")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    hw = HardwareLab(HardwareSite.model_validate_json(args.site.read_text())).node(args.node)
    serve(NodeKernel(hw, hw.dev_dir), fuse_command(args.sysfs_fuse, hw, args.node_mount_ns), hw.agent_ready_file())


if __name__ == "__main__":
    main()
