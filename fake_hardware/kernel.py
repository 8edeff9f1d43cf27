"""What the kernel does when a driver writes to sysfs (HW-08), applied to one node's emulated tree.

Real drivers configure hardware through sysfs attributes: `sriov_numvfs` enables VFs,
`driver_override` plus `bind`/`unbind`/`drivers_probe` move a function to another driver
(typically vfio-pci, which gives it a /dev/vfio/<iommu group> node), `new_id` teaches a driver
more IDs. The tree is served through FUSE (fake_hardware/cmd/sysfs-fuse), which hands each
write to one of those attributes to the hardware agent (fake_hardware/agent.py) before write(2)
returns; the agent calls `NodeKernel.written`, which changes the tree's state, the netdevs and the
node's /dev as the kernel would, or refuses the write with the errno the kernel gives, which is
what the writer gets. Each refusal is also logged, with why.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from basics.errors import LabBroken
from fake_hardware import netdevs, sysfs
from fake_hardware.lab import NodeHardware
from fake_hardware.topology import PciFunction

log = logging.getLogger("dralab.hardware-agent")

VFIO_PCI = "vfio-pci"
# Character device numbers of /dev/vfio: the container node is misc 10:196; groups get a dynamic
# major, here one from the range Linux reserves for local use, so nothing real answers it.
VFIO_CONTAINER = (10, 196)
VFIO_GROUP_MAJOR = 240
# Attributes of a driver directory and of the bus that take a write (all write-only in a real kernel).
DRIVER_ATTRIBUTES = ("bind", "unbind", "new_id", "remove_id")
BUS_ATTRIBUTES = ("drivers_probe",)
# Every attribute whose writes the kernel acts on: these the FUSE server hands to `written`.
ACTED_ATTRIBUTES = (*DRIVER_ATTRIBUTES, *BUS_ATTRIBUTES, "sriov_numvfs", "driver_override")
LOST_SECONDS = 0.3


class Refused(Exception):
    """A write the kernel would fail with `code` (an errno name such as EBUSY)."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"{errno.errorcode[code]}: {why}")
        self.code = code


def _bdf_in(value: str) -> str:
    bdf = value.strip()
    if not re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", bdf):
        raise Refused(errno.ENODEV, f"{bdf!r} is not a PCI address like 0000:18:00.2")
    return bdf


@dataclass
class NodeKernel:
    hw: NodeHardware
    dev_dir: Path  # the node's /dev, as a host path
    dynamic_ids: dict[str, set[tuple[int, int]]] = field(default_factory=dict)  # driver -> (vendor, device) by new_id
    lost_since: dict[str, float] = field(default_factory=dict)  # BDF -> when its netdev was first seen missing

    @property
    def root(self) -> Path:
        return self.hw.tree

    # The attributes ------------------------------------------------------------------

    def install(self) -> None:
        """Every driver a function may be bound to loaded, with the write-only attributes it offers."""
        drivers = {fn.driver for fn in self.hw.plan.functions if fn.driver} | {VFIO_PCI}
        for driver in sorted(drivers):
            sysfs.write_driver(self.root, driver, DRIVER_ATTRIBUTES)
        for name in BUS_ATTRIBUTES:
            sysfs.write_atomic(self.root / "bus" / "pci" / name, "")

    def driver_dir(self, driver: str) -> Path:
        return self.root / "bus" / "pci" / "drivers" / driver

    def written(self, relative: str, value: str) -> int:
        """Act on a write of `value` to the attribute at `relative` (to the tree's root), as the
        kernel's store method: 0 when done, else the errno the writer gets."""
        path = self.root / relative
        try:
            if not path.is_file():
                raise Refused(errno.ENOENT, "no such attribute (its device went away)")
            self._dispatch(path, value)
        except Refused as e:
            log.warning("write of %r to %s refused: %s", value.strip(), relative, e)
            return e.code
        log.info("write of %r to %s done", value.strip(), relative)
        return 0

    def _dispatch(self, path: Path, value: str) -> None:
        name, parent = path.name, path.parent
        if parent.parent == self.root / "bus" / "pci" / "drivers" and name in DRIVER_ATTRIBUTES:
            getattr(self, f"_{name}")(parent.name, value)
        elif parent == self.root / "bus" / "pci" and name == "drivers_probe":
            self._probe(self._function(_bdf_in(value)))
        elif name == "sriov_numvfs":
            self._set_num_vfs(self._function_at(parent), value)
        elif name == "driver_override":
            # As driver_set_override: the value ends at the first newline or NUL; empty clears it
            # (the SR-IOV DRA driver clears it with a NUL write).
            override = re.split(r"[\n\x00]", value, maxsplit=1)[0] or sysfs.NO_DRIVER_OVERRIDE
            sysfs.write_atomic(path, f"{override}\n")
        else:  # an attribute of that name elsewhere is a plain one: it keeps what was written
            sysfs.write_atomic(path, value)

    # Lookups ---------------------------------------------------------------------------

    def _function(self, bdf: str) -> PciFunction:
        try:
            fn = self.hw.plan.by_bdf(bdf)
        except StopIteration:
            raise Refused(errno.ENODEV, f"no PCI function {bdf} on {self.hw.name}") from None
        if not sysfs.device_dir(self.root, fn).is_dir():
            raise Refused(errno.ENODEV, f"{bdf} is not present")
        return fn

    def _function_at(self, directory: Path) -> PciFunction:
        return self._function(directory.name)

    def bound_driver(self, fn: PciFunction) -> str | None:
        link = sysfs.device_dir(self.root, fn) / "driver"
        return Path(os.readlink(link)).name if link.is_symlink() else None

    def _override(self, fn: PciFunction) -> str:
        path = sysfs.device_dir(self.root, fn) / "driver_override"
        return path.read_text().strip() if path.exists() else sysfs.NO_DRIVER_OVERRIDE

    def _matches(self, driver: str, fn: PciFunction) -> bool:
        """The kernel's driver_match_device: an override names the only driver; else the ID tables."""
        override = self._override(fn)
        if override != sysfs.NO_DRIVER_OVERRIDE:
            return override == driver
        return driver == fn.driver or (fn.vendor, fn.device) in self.dynamic_ids.get(driver, set())

    # Driver binding --------------------------------------------------------------------

    def _bind(self, driver: str, value: str) -> None:
        fn = self._function(_bdf_in(value))
        if self.bound_driver(fn):
            raise Refused(errno.EBUSY, f"{fn.bdf} is bound to {self.bound_driver(fn)}")
        if not self._matches(driver, fn):
            raise Refused(
                errno.ENODEV, f"{driver} does not match {fn.bdf} (driver_override {self._override(fn)}, ID {fn.vendor:04x}:{fn.device:04x})"
            )
        self.attach(fn, driver)

    def _unbind(self, driver: str, value: str) -> None:
        fn = self._function(_bdf_in(value))
        if self.bound_driver(fn) != driver:
            raise Refused(errno.ENODEV, f"{fn.bdf} is not bound to {driver}")
        self.detach(fn)

    def _new_id(self, driver: str, value: str) -> None:
        ids = self._parse_id(value)
        self.dynamic_ids.setdefault(driver, set()).add(ids)
        for fn in self.hw.plan.functions:  # the kernel probes every unbound device the new ID matches
            if (
                (fn.vendor, fn.device) == ids
                and sysfs.device_dir(self.root, fn).is_dir()
                and not self.bound_driver(fn)
                and self._matches(driver, fn)
            ):
                self.attach(fn, driver)

    def _remove_id(self, driver: str, value: str) -> None:
        ids = self._parse_id(value)
        if ids not in self.dynamic_ids.get(driver, set()):
            raise Refused(errno.ENODEV, f"{driver} has no dynamic ID {ids[0]:04x} {ids[1]:04x}")
        self.dynamic_ids[driver].discard(ids)

    @staticmethod
    def _parse_id(value: str) -> tuple[int, int]:
        fields = value.split()
        try:
            return int(fields[0], 16), int(fields[1], 16)
        except (IndexError, ValueError):
            raise Refused(errno.EINVAL, f"{value.strip()!r} is not 'vendor device' in hex, like '15b3 101e'") from None

    def _probe(self, fn: PciFunction) -> None:
        """drivers_probe: bind to the override if one is set, else to a driver whose IDs match."""
        if self.bound_driver(fn):
            return
        candidates = (
            [self._override(fn)]
            if self._override(fn) != sysfs.NO_DRIVER_OVERRIDE
            else [d for d in [fn.driver, *self.dynamic_ids] if d and self._matches(d, fn)]
        )
        driver = next((d for d in candidates if self.driver_dir(d).is_dir()), None)
        if driver is None:
            raise Refused(errno.ENODEV, f"no driver matches {fn.bdf}")
        self.attach(fn, driver)

    def attach(self, fn: PciFunction, driver: str) -> None:
        sysfs.set_driver(self.root, fn, driver)
        if driver == VFIO_PCI:
            self._vfio_node(fn, present=True)
        elif driver == fn.driver:
            self.hw.register_devices(fn)

    def detach(self, fn: PciFunction) -> None:
        driver = self.bound_driver(fn)
        if driver == fn.driver and fn.sriov_total:
            self._disable_vfs(fn)  # a PF driver's remove disables SR-IOV
        sysfs.set_driver(self.root, fn, None)
        if driver == VFIO_PCI:
            self._vfio_node(fn, present=False)
        elif driver == fn.driver:
            self.hw.unregister_devices(fn)

    def _vfio_node(self, fn: PciFunction, present: bool) -> None:
        vfio = self.dev_dir / "vfio"
        group = vfio / str(fn.iommu_group)
        if not present:
            group.unlink(missing_ok=True)
            return
        vfio.mkdir(parents=True, exist_ok=True)
        for node, mode, numbers in ((vfio / "vfio", 0o666, VFIO_CONTAINER), (group, 0o600, (VFIO_GROUP_MAJOR, fn.iommu_group or 0))):
            if not node.exists():
                os.mknod(node, stat.S_IFCHR, os.makedev(*numbers))
                os.chmod(node, mode)  # mknod's mode is masked by the umask

    # Namespaces ------------------------------------------------------------------------

    def sync_node_links(self) -> None:
        """The node's own links (its namespace's, but the emulated netdevs) as virtual netdevs in
        class/net, as the kernel lists every link of the namespace: drivers that scan class/net
        against netlink (dranet) find each link they see."""
        emulated = {fn.netdev for fn in self.hw.plan.functions if fn.netdev}
        sysfs.sync_virtual_links(self.root, {name: link for name, link in netdevs.links_of(self.hw.netns).items() if name not in emulated})

    def return_lost_netdevs(self, host_links: set[str], now: float) -> None:
        """Netdevs whose namespace was destroyed (a pod's, with a VF still in it) come back to the
        node. Missing for LOST_SECONDS first: plugging a function writes the tree just before its
        netdev is created, maybe in another process (a fault). One that cannot be made again now (a
        link of its name is there: a driver or a fault made it meanwhile) is tried again next time;
        the node lives on, as it would with a real NIC."""
        lost = self.hw.lost_netdevs(host_links)
        since = {fn.bdf: self.lost_since.get(fn.bdf, now) for fn in lost}
        back, failed = [], []
        for fn in (fn for fn in lost if now - since[fn.bdf] >= LOST_SECONDS):
            try:
                self.hw.return_netdevs([fn])
                back.append(fn)
            except LabBroken as e:
                log.warning("netdev %s of %s not returned to the node yet: %s", fn.netdev, fn.bdf, e)
                failed.append(fn.bdf)
        if back:
            log.info("netdevs back in the node's namespace, theirs was destroyed: %s", ", ".join(fn.netdev or "" for fn in back))
        self.lost_since = {bdf: t for bdf, t in since.items() if now - t < LOST_SECONDS or bdf in failed}

    # SR-IOV ----------------------------------------------------------------------------

    def _set_num_vfs(self, pf: PciFunction, value: str) -> None:
        present = self.hw.present_vfs(pf)
        try:
            wanted = int(value.strip())
        except ValueError:
            raise Refused(errno.EINVAL, f"{value.strip()!r} is not a number") from None
        if not pf.sriov_total:
            raise Refused(errno.ENOENT, f"{pf.bdf} has no SR-IOV capability")
        if self.bound_driver(pf) != pf.driver:
            raise Refused(errno.ENOENT, f"{pf.bdf} has no driver to enable VFs ({pf.driver} is not bound)")
        if not 0 <= wanted <= pf.sriov_total:
            raise Refused(errno.ERANGE, f"{wanted} VFs asked, sriov_totalvfs is {pf.sriov_total}")
        if wanted and present and wanted != len(present):
            raise Refused(errno.EBUSY, f"{len(present)} VFs already enabled: write 0 first")
        if wanted == len(present):
            return
        if wanted == 0:
            self._disable_vfs(pf)
            return
        vfs = [self.hw.plan.by_bdf(b) for b in pf.virtfns[:wanted]]
        autoprobe = sysfs.device_dir(self.root, pf) / "sriov_drivers_autoprobe"
        probe = not autoprobe.exists() or autoprobe.read_text().strip() != "0"
        self.hw.plug(vfs, bound=probe)
        sysfs.set_num_vfs(self.root, pf, wanted)

    def _disable_vfs(self, pf: PciFunction) -> None:
        vfs = self.hw.present_vfs(pf)
        for vf in vfs:
            if self.bound_driver(vf) == VFIO_PCI:
                self._vfio_node(vf, present=False)
        self.hw.unplug(vfs)
        sysfs.set_num_vfs(self.root, pf, 0)
