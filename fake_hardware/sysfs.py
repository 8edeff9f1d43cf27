"""Write a node's PCI functions as a directory tree shaped like Linux sysfs (HW-01, HW-07, HW-09).

    devices/pci0000:<bus>/<root port>/<switch ports>/<BDF>/{vendor,device,class,modalias,uevent,...}
                                         (one host bridge per socket: pci0000:00, pci0000:80)
    bus/pci/devices/<BDF>           -> ../../../devices/.../<BDF>; <BDF>/subsystem -> bus/pci
    bus/pci/drivers/<driver>/<BDF>  -> the device; <BDF>/driver -> bus/pci/drivers/<driver>
    kernel/iommu_groups/<n>/devices/<BDF>; <BDF>/iommu_group -> kernel/iommu_groups/<n>
    class/net/<ifname>              -> ../../devices/.../<BDF>/net/<ifname>; <ifname>/device -> <BDF>
    class/infiniband/mlx5_<n>       -> ../../devices/.../<BDF>/infiniband/mlx5_<n> (RDMA NICs)
    class/infiniband_verbs/uverbs<n> -> ../../devices/.../<BDF>/infiniband_verbs/uverbs<n>, and
    class/infiniband_mad/{umad,issm}<n> likewise (RDMA NICs' character devices: ibdev, dev, device);
    class/infiniband_{verbs,mad}/abi_version
    class/net/<ifname>              -> ../../devices/virtual/net/<ifname> for the node's own links (lo,
                                       eth0, cni0, pods' veth ends), kept in step with its namespace
    devices/system/{node,cpu,memory} (system_tree.py)

Every link is relative, so the tree works wherever it is mounted (a driver container sees it
at /sys/bus/pci, /sys/devices, /sys/class/net). Every change is atomic: files and links are
created under a temporary name and renamed into place, a device directory is assembled
beside its final place and renamed in, so a driver never reads a half-written device.

GPU_INFO_FILE is lab-specific: real drivers learn a GPU's UUID, memory, model and health from
vendor libraries (NVML), which sysfs does not carry. It is JSON:
{"uuid": "GPU-...", "index": 0, "model": "...", "memoryBytes": 85899345920, "health": "healthy"}
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from fake_hardware import system_tree
from fake_hardware.profile import cpu_ids
from fake_hardware.topology import REVISION, NodePlan, PciFunction

GPU_INFO_FILE = "dralab-gpu.json"
PCI_RESOURCE_LINES = 13
NO_DRIVER_OVERRIDE = "(null)"  # what the kernel shows while driver_override is unset
# A netdev's attributes as the kernel shows them for an Ethernet port that is up. There is no
# ifindex or iflink: the kernel numbers the veth behind the netdev, netlink tells it.
NETDEV_ATTRIBUTES = {
    "addr_assign_type": "0",
    "addr_len": "6",
    "broadcast": "ff:ff:ff:ff:ff:ff",
    "type": "1",
    "dev_id": "0x0",
    "dev_port": "0",
    "flags": "0x1003",
    "mtu": "1500",
    "operstate": "up",
    "carrier": "1",
    "duplex": "full",
    "tx_queue_len": "1000",
}
RDMA_RATES = {25_000: "25 Gb/sec (1X EDR)", 100_000: "100 Gb/sec (4X EDR)", 200_000: "200 Gb/sec (4X HDR)", 400_000: "400 Gb/sec (4X NDR)"}
# mlx5 firmware versions by the PF's device ID: the major number names the chip
MLX5_FIRMWARE = {0x101D: "22.39.1002", 0x1021: "28.39.1002", 0x1023: "40.43.1014", 0xA2DC: "32.39.1002"}
# The user-space interfaces the RDMA core registers for every RDMA device (drivers/infiniband/core,
# uverbs_main.c and user_mad.c): verbs, uverbs<n>, and per port MADs, umad<n> and issm<n>. Their
# classes and devices show ABI versions; mlx5's verbs ABI is 1.
UVERBS_CLASS, UMAD_CLASS = "infiniband_verbs", "infiniband_mad"
CLASS_ABI_VERSIONS = {UVERBS_CLASS: 6, UMAD_CLASS: 5}
MLX5_UVERBS_ABI_VERSION = 1
# Their device numbers: major 231 with fixed minors for the first devices (uverbs<n> 192 + n for 32 of
# them; umad<n> n and issm<n> 64 + n for 64), past those a major the module allocates as it loads,
# minors from 0 (issm's after all the umad ones the kernel allows: RDMA_MAX_PORTS - 64 of them).
# The dynamic majors are two of the kernel's dynamic range (254 down to 234) the lab uses nowhere else.
RDMA_MAJOR, UVERBS_BASE_MINOR, UVERBS_FIXED_MINORS, UMAD_FIXED_MINORS, RDMA_MAX_PORTS = 231, 192, 32, 64, 8192
UVERBS_DYNAMIC_MAJOR, UMAD_DYNAMIC_MAJOR = 239, 238


@dataclass
class CharDevice:
    """A character device of an RDMA device: class/<cls>/<name> in sysfs, /dev/infiniband/<name>."""

    cls: str
    name: str
    major: int
    minor: int
    mode: int  # of its /dev node: uverbs asks devtmpfs for 0666, umad and issm get its default 0600
    attributes: dict[str, str] = field(default_factory=dict)  # beyond ibdev and dev


def rdma_char_devices(fn: PciFunction) -> list[CharDevice]:
    """The function's RDMA device's character devices, numbered as the lab numbers the device
    (mlx5_<n>: uverbs<n>, umad<n>, issm<n>). The kernel gives each the lowest free number as devices
    register, so on a node that registers them in order the numbers agree; one port each, as RoCE."""
    if not fn.rdma_device:
        return []
    n = int(fn.rdma_device.rsplit("_", 1)[1])
    uverbs = (RDMA_MAJOR, UVERBS_BASE_MINOR + n) if n < UVERBS_FIXED_MINORS else (UVERBS_DYNAMIC_MAJOR, n - UVERBS_FIXED_MINORS)
    umad, issm = (
        ((RDMA_MAJOR, n), (RDMA_MAJOR, UMAD_FIXED_MINORS + n))
        if n < UMAD_FIXED_MINORS
        else ((UMAD_DYNAMIC_MAJOR, n - UMAD_FIXED_MINORS), (UMAD_DYNAMIC_MAJOR, RDMA_MAX_PORTS + n - 2 * UMAD_FIXED_MINORS))
    )
    port = {"port": "1"}
    return [
        CharDevice(UVERBS_CLASS, f"uverbs{n}", *uverbs, 0o666, {"abi_version": str(MLX5_UVERBS_ABI_VERSION)}),
        CharDevice(UMAD_CLASS, f"umad{n}", *umad, 0o600, port),
        CharDevice(UMAD_CLASS, f"issm{n}", *issm, 0o600, port),
    ]


def write_atomic(path: Path, content: str | bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content)
    os.replace(tmp, path)


def link_atomic(link: Path, target: Path) -> None:
    """A relative symlink at `link` pointing at `target` (both absolute paths of the tree)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(target, link.parent))
    os.replace(tmp, link)


def device_dir(root: Path, fn: PciFunction) -> Path:
    return root.joinpath("devices", *fn.path)


def modalias(fn: PciFunction) -> str:
    """As the kernel writes it, and as ghw and udev parse it: IDs and class bytes in upper-case hex."""
    return (
        f"pci:v{fn.vendor:08X}d{fn.device:08X}sv{fn.subsystem_vendor:08X}sd{fn.subsystem_device:08X}"
        f"bc{fn.class_code >> 16:02X}sc{(fn.class_code >> 8) & 0xFF:02X}i{fn.class_code & 0xFF:02X}"
    )


def _uevent(fn: PciFunction, driver: str | None) -> str:
    lines = [f"DRIVER={driver}"] if driver else []
    lines += [
        f"PCI_CLASS={fn.class_code:X}",
        f"PCI_ID={fn.vendor:04X}:{fn.device:04X}",
        f"PCI_SUBSYS_ID={fn.subsystem_vendor:04X}:{fn.subsystem_device:04X}",
        f"PCI_SLOT_NAME={fn.bdf}",
        f"MODALIAS={modalias(fn)}",
    ]
    return "\n".join(lines) + "\n"


def _files(plan: NodePlan, fn: PciFunction) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "vendor": f"0x{fn.vendor:04x}\n",
        "device": f"0x{fn.device:04x}\n",
        "subsystem_vendor": f"0x{fn.subsystem_vendor:04x}\n",
        "subsystem_device": f"0x{fn.subsystem_device:04x}\n",
        "class": f"0x{fn.class_code:06x}\n",
        "revision": f"0x{REVISION:02x}\n",
        "numa_node": f"{fn.numa}\n",
        "modalias": modalias(fn) + "\n",
        "uevent": _uevent(fn, fn.driver),
        "driver_override": f"{NO_DRIVER_OVERRIDE}\n",
        "local_cpulist": f"{fn.cpulist}\n",
        "irq": "0\n",
        "enable": "1\n",
        "local_cpus": system_tree.cpu_mask(cpu_ids(fn.cpulist), plan.profile.cpu_count()) + "\n",
        "current_link_speed": f"{fn.link_speed}\n",
        "current_link_width": f"{fn.link_width}\n",
        "max_link_speed": f"{fn.link_speed}\n",
        "max_link_width": f"{fn.link_width}\n",
        "resource": "0x0000000000000000 0x0000000000000000 0x0000000000000000\n" * PCI_RESOURCE_LINES,
        "config": fn.config_space(),
    }
    if fn.gpu is not None:
        files[GPU_INFO_FILE] = json.dumps({**fn.gpu, "health": "healthy"}, indent=2) + "\n"
    if fn.kind == "nic" and fn.sriov_total:
        files.update(
            {
                "sriov_totalvfs": f"{fn.sriov_total}\n",
                "sriov_numvfs": f"{fn.sriov_num_at_boot}\n",
                "sriov_offset": "1\n",
                "sriov_stride": "1\n",
                "sriov_vf_device": f"{fn.sriov_vf_device:04x}\n",
            }
        )
    return files


def _guid(mac: str) -> bytes:
    """mlx5 derives a port's GUIDs from its MAC (the OUI, 03:00, the rest); ice's switch id, the
    PCIe serial number, has the same shape."""
    raw = bytes.fromhex(mac.replace(":", ""))
    return raw[:3] + b"\x03\x00" + raw[3:]


def _rdma(plan: NodePlan, fn: PciFunction) -> dict[str, str]:
    """infiniband/mlx5_<n> of a RoCE function: what rdma-core, rdmamap and the RDMA device plugins read."""
    pf = plan.by_bdf(fn.physfn) if fn.physfn else fn
    raw = _guid(str(fn.mac))
    link_local = bytes.fromhex("fe80000000000000") + bytes([raw[0] ^ 0x02]) + raw[1:3] + b"\xff\xfe" + raw[5:]
    return {
        "node_guid": _colons(raw),
        "sys_image_guid": _colons(_guid(str(pf.mac))),
        "node_type": "1: CA",
        "node_desc": f"{plan.node} {fn.rdma_device}",
        "hca_type": f"MT{fn.device}",
        "hw_rev": "0x0",
        "fw_ver": MLX5_FIRMWARE.get(pf.device, "16.35.1012"),
        "ports/1/state": "4: ACTIVE",
        "ports/1/phys_state": "5: LinkUp",
        "ports/1/link_layer": "Ethernet",
        "ports/1/rate": RDMA_RATES.get(fn.port_speed, f"{fn.port_speed // 1000} Gb/sec (4X)"),
        "ports/1/lid": "0x0",
        "ports/1/sm_lid": "0x0",
        "ports/1/gids/0": _colons(link_local),
        "ports/1/gid_attrs/ndevs/0": str(fn.netdev),
        "ports/1/gid_attrs/types/0": "IB/RoCE v1",
    }


def _colons(raw: bytes) -> str:
    return ":".join(raw[i : i + 2].hex() for i in range(0, len(raw), 2))


def _up_to_root(fn: PciFunction, below: int = 0) -> str:
    """A relative path from a directory `below` levels under the function's up to the tree's root."""
    return "../" * (len(fn.path) + 1 + below)


def write_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """Write one function (assembled aside, renamed into place) and the links that point at it."""
    final = device_dir(root, fn)
    staging = final.with_name(f".{fn.bdf}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for name, content in _files(plan, fn).items():
        (staging / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    os.symlink(_up_to_root(fn) + "bus/pci", staging / "subsystem")
    for (cls, name), write in _registered(plan, fn).items():
        write(staging / cls / name)
    if final.exists():
        shutil.rmtree(final)
    os.rename(staging, final)
    _link_function(root, plan, fn)


def _write_netdev_dir(directory: Path, fn: PciFunction) -> None:
    """The attributes of a function's netdev, class/net/<ifname> as the kernel shows it.

    A PF's netdev has a devlink port of flavour physical (mlx5 and ice both register one), so
    it shows phys_port_name p<port> and phys_switch_id. A VF's netdev has none (iavf), or a
    virtual one (mlx5): reading those attributes fails with EOPNOTSUPP, so here they are absent.
    """
    directory.mkdir(parents=True)
    attributes = {**NETDEV_ATTRIBUTES, "address": str(fn.mac), "speed": str(fn.port_speed), "uevent": f"INTERFACE={fn.netdev}"}
    if fn.kind == "nic":
        attributes.update(phys_port_name="p0", phys_switch_id=_guid(str(fn.mac)).hex())
    for name, value in attributes.items():
        (directory / name).write_text(f"{value}\n")
    os.symlink(f"../../../{fn.bdf}", directory / "device")
    os.symlink(_up_to_root(fn, below=2) + "class/net", directory / "subsystem")


def _write_rdma_dir(directory: Path, plan: NodePlan, fn: PciFunction) -> None:
    for name, value in _rdma(plan, fn).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(f"{value}\n")
    os.symlink(f"../../../{fn.bdf}", directory / "device")


def _write_char_device_dir(directory: Path, fn: PciFunction, char: CharDevice) -> None:
    """<BDF>/<class>/<name>: the kernel parents these devices on the PCI function, not on mlx5_<n>.
    rdmamap and rdma-core match them to their RDMA device by ibdev; udev names the node by DEVNAME."""
    directory.mkdir(parents=True)
    mode = [f"DEVMODE={char.mode:04o}"] if char.mode != 0o600 else []  # a mode the class asked devtmpfs for
    uevent = "\n".join([f"MAJOR={char.major}", f"MINOR={char.minor}", f"DEVNAME=infiniband/{char.name}", *mode])
    attributes = {"ibdev": str(fn.rdma_device), "dev": f"{char.major}:{char.minor}", "uevent": uevent, **char.attributes}
    for name, value in attributes.items():
        (directory / name).write_text(f"{value}\n")
    os.symlink(f"../../../{fn.bdf}", directory / "device")
    os.symlink(_up_to_root(fn, below=2) + f"class/{char.cls}", directory / "subsystem")


def _registered(plan: NodePlan, fn: PciFunction) -> dict[tuple[str, str], Callable[[Path], None]]:
    """What the function's own driver registers, by (class, name), each with the writer of its
    directory <BDF>/<class>/<name>, which class/<class>/<name> links to: its netdev, its RDMA
    device and that device's character devices."""
    found: dict[tuple[str, str], Callable[[Path], None]] = {}
    if fn.netdev:
        found[("net", fn.netdev)] = lambda d: _write_netdev_dir(d, fn)
    if fn.rdma_device:
        found[("infiniband", fn.rdma_device)] = lambda d: _write_rdma_dir(d, plan, fn)
        for char in rdma_char_devices(fn):
            found[(char.cls, char.name)] = partial(_write_char_device_dir, fn=fn, char=char)
    return found


def _link_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    here = device_dir(root, fn)
    link_atomic(root / "bus" / "pci" / "devices" / fn.bdf, here)
    if fn.driver:
        driver = root / "bus" / "pci" / "drivers" / fn.driver
        link_atomic(driver / fn.bdf, here)
        link_atomic(here / "driver", driver)
    if fn.iommu_group is not None:
        group = root / "kernel" / "iommu_groups" / str(fn.iommu_group)
        link_atomic(group / "devices" / fn.bdf, here)
        link_atomic(here / "iommu_group", group)
    for cls, name in _registered(plan, fn):
        link_atomic(root / "class" / cls / name, here / cls / name)
    if fn.physfn:
        pf = plan.by_bdf(fn.physfn)
        link_atomic(here / "physfn", device_dir(root, pf))
        link_atomic(device_dir(root, pf) / f"virtfn{pf.virtfns.index(fn.bdf)}", here)
    for i, vf in enumerate(fn.virtfns):
        if device_dir(root, plan.by_bdf(vf)).exists():
            link_atomic(here / f"virtfn{i}", device_dir(root, plan.by_bdf(vf)))


def remove_function(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """Unlink a function from every index first, then take its directory away in one rename."""
    for link in (
        root / "bus" / "pci" / "devices" / fn.bdf,
        root / "bus" / "pci" / "drivers" / (fn.driver or "-") / fn.bdf,
        root / "kernel" / "iommu_groups" / str(fn.iommu_group) / "devices" / fn.bdf,
        *(root / "class" / cls / name for cls, name in _registered(plan, fn)),
    ):
        if link.is_symlink():
            link.unlink()
    if fn.physfn:
        pf = plan.by_bdf(fn.physfn)
        (device_dir(root, pf) / f"virtfn{pf.virtfns.index(fn.bdf)}").unlink(missing_ok=True)
    final = device_dir(root, fn)
    if final.exists():
        doomed = final.with_name(f".{fn.bdf}.removed")
        os.rename(final, doomed)
        shutil.rmtree(doomed)


def set_gpu_health(root: Path, fn: PciFunction, healthy: bool) -> None:
    info = device_dir(root, fn) / GPU_INFO_FILE
    data = json.loads(info.read_text())
    data["health"] = "healthy" if healthy else "unhealthy"
    write_atomic(info, json.dumps(data, indent=2) + "\n")


def set_num_vfs(root: Path, pf: PciFunction, count: int) -> None:
    write_atomic(device_dir(root, pf) / "sriov_numvfs", f"{count}\n")


@dataclass(frozen=True)
class VirtualLink:
    """A link of the node's own (no PCI function behind it), as `ip -j link` shows it."""

    ifindex: int
    address: str
    mtu: int
    operstate: str  # up, down, unknown
    arp_type: int  # 1 ether, 772 loopback (the kernel's ARPHRD_*)
    flags: int  # IFF_*


def sync_virtual_links(root: Path, links: dict[str, VirtualLink]) -> None:
    """devices/virtual/net/<name> and class/net/<name> for each of the node's own links, as the
    kernel shows virtual netdevs (no device link); those of links gone are removed. The tree's
    PCI netdevs are not touched: their names are never in `links`."""
    virtual = root / "devices" / "virtual" / "net"
    for gone in (set(os.listdir(virtual)) if virtual.is_dir() else set()) - set(links):
        if gone.startswith("."):
            continue
        (root / "class" / "net" / gone).unlink(missing_ok=True)
        shutil.rmtree(virtual / gone, ignore_errors=True)
    for name, link in links.items():
        attributes = {
            **{k: v for k, v in NETDEV_ATTRIBUTES.items() if k != "duplex"},  # no duplex: EINVAL
            "address": link.address,
            "mtu": str(link.mtu),
            "ifindex": str(link.ifindex),
            "iflink": str(link.ifindex),
            "operstate": link.operstate,
            "type": str(link.arp_type),
            "flags": hex(link.flags),
            "carrier": "1" if link.operstate != "down" else "0",
            "uevent": f"INTERFACE={name}\nIFINDEX={link.ifindex}",
        }
        if all((virtual / name / a).is_file() and (virtual / name / a).read_text() == f"{v}\n" for a, v in attributes.items()):
            continue  # as it was: a link whose state changed (up, a new address) is written again

        def write(directory: Path, attributes: dict[str, str] = attributes) -> None:
            directory.mkdir(parents=True)
            for attribute, value in attributes.items():
                (directory / attribute).write_text(f"{value}\n")
            os.symlink("../../../../class/net", directory / "subsystem")

        _rename_in(virtual / name, write)
        link_atomic(root / "class" / "net" / name, virtual / name)


def write_tree(root: Path, plan: NodePlan) -> None:
    # Every index exists, as in real sysfs, even with no device in it (a node without NICs still
    # has /sys/class/net): drivers and their hostPath mounts rely on that.
    for index in (
        *(f"devices/{bridge}" for bridge in plan.host_bridges()),
        "bus/pci/devices",
        "bus/pci/drivers",
        "class/net",
        "class/infiniband",
        f"class/{UVERBS_CLASS}",
        f"class/{UMAD_CLASS}",
        "kernel/iommu_groups",
        "module",
    ):
        (root / index).mkdir(parents=True, exist_ok=True)
    for cls, version in CLASS_ABI_VERSIONS.items():
        write_atomic(root / "class" / cls / "abi_version", f"{version}\n")
    for fn in plan.at_boot():
        write_function(root, plan, fn)
    system_tree.write_system(root, plan.profile)


# Modules a driver's module depends on, loaded with it (what `lsmod` shows as users).
MODULE_DEPENDENCIES = {"vfio_pci": ("vfio_pci_core", "vfio", "vfio_iommu_type1")}


def module_name(driver: str) -> str:
    """The kernel module a PCI driver is in: its name with dashes as underscores (vfio-pci: vfio_pci)."""
    return driver.replace("-", "_")


def write_driver(root: Path, driver: str, attributes: tuple[str, ...]) -> None:
    """A loaded PCI driver: bus/pci/drivers/<driver> with its write-only attributes, and its module
    in /sys/module (with the modules it needs), linked both ways, as drivers and `modprobe` check it."""
    directory = root / "bus" / "pci" / "drivers" / driver
    directory.mkdir(parents=True, exist_ok=True)
    for name in attributes:
        write_atomic(directory / name, "")
    module = module_name(driver)
    for name in (module, *MODULE_DEPENDENCIES.get(module, ())):
        (root / "module" / name / "parameters").mkdir(parents=True, exist_ok=True)
        write_atomic(root / "module" / name / "initstate", "live\n")
        write_atomic(root / "module" / name / "refcnt", "0\n")
    link_atomic(root / "module" / module / "drivers" / f"pci:{driver}", directory)
    link_atomic(directory / "module", root / "module" / module)


def _rename_in(final: Path, assemble: Callable[[Path], None]) -> None:
    staging = final.with_name(f".{final.name}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.parent.mkdir(parents=True, exist_ok=True)
    assemble(staging)
    if final.exists():
        shutil.rmtree(final)
    os.rename(staging, final)


def register_devices(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """The function's own driver bound: the netdev, RDMA device and character devices it registers
    appear, each assembled aside and renamed in before its class link."""
    here = device_dir(root, fn)
    for (cls, name), write in _registered(plan, fn).items():
        _rename_in(here / cls / name, write)
        link_atomic(root / "class" / cls / name, here / cls / name)


def unregister_devices(root: Path, plan: NodePlan, fn: PciFunction) -> None:
    """Every class link first, then the directories they led to."""
    registered = list(_registered(plan, fn))
    for cls, name in registered:
        (root / "class" / cls / name).unlink(missing_ok=True)
    for cls in dict.fromkeys(cls for cls, _ in registered):
        shutil.rmtree(device_dir(root, fn) / cls, ignore_errors=True)


def set_driver(root: Path, fn: PciFunction, driver: str | None) -> None:
    """Bind (links both ways, uevent's DRIVER=) or, with None, unbind; what the driver registered is the caller's."""
    here = device_dir(root, fn)
    current = here / "driver"
    if current.is_symlink():
        (root / "bus" / "pci" / "drivers" / Path(os.readlink(current)).name / fn.bdf).unlink(missing_ok=True)
        current.unlink()
    if driver:
        link_atomic(root / "bus" / "pci" / "drivers" / driver / fn.bdf, here)
        link_atomic(current, root / "bus" / "pci" / "drivers" / driver)
    write_atomic(here / "uevent", _uevent(fn, driver))
