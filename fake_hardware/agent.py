"""The hardware agent: one process per node with emulated hardware, playing the kernel's part (HW-08).

It watches the node's tree with inotify and hands every completed write to an attribute the
kernel acts on (sriov_numvfs, driver_override, a driver's bind/unbind/new_id/remove_id, the bus's
drivers_probe) to fake_hardware.kernel. Directories come and go as functions are plugged and
replaced, so the watches are renewed after each write and every half second. At the same pace
it returns to the node the netdevs whose namespace was destroyed, as the kernel does for a real
NIC's (a veth would die with it).

    python -m fake_hardware.agent --lab-config LAB_DIR/cluster.json --node node-1
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import select
import struct
import time
from pathlib import Path

from fake_hardware.kernel import BUS_ATTRIBUTES, DRIVER_ATTRIBUTES, NodeKernel
from fake_hardware.lab import HardwareLab

IN_CLOSE_WRITE = 0x00000008
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len, then the name
ATTRIBUTES = {*DRIVER_ATTRIBUTES, *BUS_ATTRIBUTES, "sriov_numvfs", "driver_override"}
RENEW_SECONDS = 0.5


class Inotify:
    """Close-after-write events of the files in a set of directories."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs: dict[int, Path] = {}

    def watch(self, directories: list[Path]) -> None:
        for d in directories:
            wd = self._libc.inotify_add_watch(self.fd, str(d).encode(), IN_CLOSE_WRITE)
            if wd >= 0:  # a directory removed meanwhile is simply not watched
                self.dirs[wd] = d

    def written(self, timeout: float) -> list[Path]:
        if not select.select([self.fd], [], [], timeout)[0]:
            return []
        data, out = os.read(self.fd, 65536), []
        offset = 0
        while offset < len(data):
            wd, _mask, _cookie, size = EVENT.unpack_from(data, offset)
            name = data[offset + EVENT.size: offset + EVENT.size + size].rstrip(b"\0").decode()
            offset += EVENT.size + size
            if wd in self.dirs and name:
                out.append(self.dirs[wd] / name)
        return out


def serve(kernel: NodeKernel, ready_file: Path) -> None:
    kernel.install()
    inotify = Inotify()
    inotify.watch(kernel.watched_dirs())
    ready_file.write_text(f"{os.getpid()}\n")
    logging.info("watching %d directories of %s", len(inotify.dirs), kernel.root)
    while True:
        for path in inotify.written(RENEW_SECONDS):
            if path.name not in ATTRIBUTES:
                continue
            try:
                kernel.written(path)
            except OSError:  # the function went away meanwhile (a fault, another write): the node lives on
                logging.exception("write to %s", path)
        inotify.watch(kernel.watched_dirs())
        kernel.return_lost_netdevs(set(os.listdir("/sys/class/net")), time.monotonic())  # fabric ends are host links


def main(argv: list[str] | None = None) -> None:
    from clusters.config import ClusterConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab-config", type=Path, required=True, help="the lab's cluster.json")
    parser.add_argument("--node", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    hw = HardwareLab(ClusterConfig.model_validate_json(args.lab_config.read_text())).node(args.node)
    serve(NodeKernel(hw, hw.dev_dir), hw.agent_ready_file())


if __name__ == "__main__":
    main()
