"""What NVML tells a driver about a node's GPUs, for the lab's libnvidia-ml.so.1 (HW-10).

The library (fake_hardware/cmd/libnvidia-ml) finds which GPUs are present, their PCI IDs,
NUMA node, CPUs and health in the node's tree, as the kernel module would; what sysfs does not
carry comes from a driver root this module renders from the same NodePlan, so both views agree:

    <driver root>/dralab/nvml.json             versions, the tree's path, and per GPU (by BDF) its
                                               name, UUID, serial, minor number, memory, architecture,
                                               compute capability, MIG profiles (with their placements)
                                               and MIG devices (with theirs)
    <driver root>/proc/driver/nvidia/version   as the kernel modules show them: the version, each
      .../nvidia/gpus/<bdf>/information        GPU's information, the access capabilities of MIG
      .../nvidia/capabilities/                 (config, monitor, each MIG device's GPU and compute
      .../nvidia-caps/mig-minors               instance) and the nvidia-caps minor of every one. Most
                                               tools read these at /proc itself, which a lab node's
                                               kernel does not have (nvidia-ctk reads the information
                                               files under its dev root)
    <driver root>/usr/lib64/libnvidia-ml.so.<driver version>
                                               the library, put there by whoever built it, with
    <driver root>/usr/lib64/libnvidia-ml.so.1  its soname's link to it, as the driver's installer and
                                               ldconfig leave them: NVIDIA's container toolkit takes the
                                               driver's libraries to be those named for its version
    <driver root>/usr/bin/nvidia-smi           cmd/nvidia-smi, over the library
    <driver root>/dev/nvidia0.., nvidiactl,    character devices with the kernel modules' numbers,
      nvidia-uvm, nvidia-uvm-tools,            in a lab (`install`): what a vendor driver's CDI
      nvidia-caps/nvidia-cap<minor>            specs hand to containers. NVIDIA's drivers take a
                                               driver root holding dev/ as the root of its /dev.

`python -m fake_hardware.nvml --profile hgx-h100 --out DIR` writes a node's tree (DIR/sys) and its
driver root (DIR/driver-root) without a lab, to try the library or a driver against.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from basics.errors import BadInput
from fake_hardware import sysfs
from fake_hardware.profile import Gpu, load_node_profile, mig_layout, mig_memory_bytes, mig_slices
from fake_hardware.topology import NodePlan, PciFunction, plan_node

DRIVER_VERSION = "580.95.05"
CUDA_DRIVER_VERSION = 13000  # CUDA 13.0, what the 580 branch supports, as NVML encodes it (major*1000 + minor*10)
NVML_VERSION = f"13.{DRIVER_VERSION}"  # NVML API 13, the version go-nvml's nvml.h declares
CONFIG = Path("dralab/nvml.json")
PROC_VERSION = Path("proc/driver/nvidia/version")
PROC_GPUS = Path("proc/driver/nvidia/gpus")
PROC_CAPABILITIES = Path("proc/driver/nvidia/capabilities")
PROC_MIG_MINORS = Path("proc/driver/nvidia-caps/mig-minors")
# The MIG capabilities the nvidia-caps module numbers: GPU minors, GPU instances per GPU, compute
# instances per GPU instance.
MIG_CAP_GPUS, MIG_CAP_GIS, MIG_CAP_CIS = 32, 15, 8
LIBRARY = Path("usr/lib64/libnvidia-ml.so.1")  # what drivers load: a link to LIBRARY_FILE
NVIDIA_SMI = Path("usr/bin/nvidia-smi")
LIBRARY_FILE = LIBRARY.with_name(f"libnvidia-ml.so.{DRIVER_VERSION}")
# The kernel module's character devices: nvidia's major is fixed (GPUs by minor number, the control
# device 255); nvidia-uvm's is dynamic, this being a common value.
NVIDIA_MAJOR, NVIDIACTL_MINOR, NVIDIA_UVM_MAJOR = 195, 255, 510
NVIDIA_CAPS_MAJOR = 511  # dynamic too: nvidia.ko registers nvidia-caps before nvidia-uvm.ko loads


def serial(gpu_uuid: str) -> str:
    """A 13-digit board serial, as NVIDIA's data-centre boards have, derived from the GPU's UUID."""
    return str(int.from_bytes(hashlib.sha256(gpu_uuid.encode()).digest()[:8]) % 10**13).zfill(13)


def mig_profiles(gpu: Gpu) -> list[dict[str, object]]:
    """The GPU instance profiles the GPU offers, as NVML describes them: compute slices, memory, the
    memory slices an instance spans and where it may start, and how many fit at once."""
    return [
        {
            "name": name,
            "slices": mig_slices(name),
            "memoryBytes": mig_memory_bytes(name),
            "memorySlices": gpu.mig_memory_slices(name),
            "instanceCount": count,
            "placements": gpu.mig_placements(name),
        }
        for name, count in gpu.mig_profiles.items()
    ]


class MigDevice(TypedDict):
    uuid: str
    name: str
    profile: str
    gpuInstanceId: int
    computeInstanceId: int
    memoryBytes: int
    placementStart: int


def mig_devices(gpu: Gpu, gpu_uuid: str) -> list[MigDevice]:
    """The GPU's MIG devices: GPU instances numbered from 1 in the profile's order, one compute
    instance (0) each, at the placements mig_layout gives them."""
    devices: list[MigDevice] = []
    starts = mig_layout(gpu) or []
    for gi, (profile, start) in enumerate(zip(gpu.mig_devices, starts, strict=True), start=1):
        devices.append(
            {
                "uuid": "MIG-" + str(uuid.uuid5(uuid.UUID(gpu_uuid.removeprefix("GPU-")), f"{gi}/0")),
                "name": f"{gpu.model} MIG {profile}",
                "profile": profile,
                "gpuInstanceId": gi,
                "computeInstanceId": 0,
                "memoryBytes": mig_memory_bytes(profile),
                "placementStart": start,
            }
        )
    return devices


def identity(fn: PciFunction, gpu: Gpu) -> dict[str, object]:
    assert fn.gpu is not None
    gpu_uuid = str(fn.gpu["uuid"])
    major, _, minor = (gpu.compute_capability or "").partition(".")
    return {
        "name": gpu.model,
        "uuid": gpu_uuid,
        "serial": serial(gpu_uuid),
        "minorNumber": fn.gpu["index"],  # /dev/nvidia<N>: the kernel module numbers GPUs in probe order
        "memoryBytes": gpu.memory_bytes(),
        "architecture": gpu.architecture,
        "computeCapability": [int(major), int(minor)] if gpu.compute_capability else None,
        "migCapable": bool(gpu.mig_profiles),
        "migProfiles": mig_profiles(gpu),
        "migDevices": mig_devices(gpu, gpu_uuid),
    }


def config(plan: NodePlan, sysfs_root: str) -> dict[str, object]:
    gpus = {g.name: g for g in plan.profile.gpus}
    return {
        "sysfsRoot": sysfs_root,
        "driverVersion": DRIVER_VERSION,
        "nvmlVersion": NVML_VERSION,
        "cudaDriverVersion": CUDA_DRIVER_VERSION,
        "gpus": {fn.bdf: identity(fn, gpus[fn.name]) for fn in plan.functions if fn.kind == "gpu"},
    }


def proc_version() -> str:
    """/proc/driver/nvidia/version; tools take the driver version from the NVRM line."""
    return (
        f"NVRM version: NVIDIA UNIX Open Kernel Module for {platform.machine()}  {DRIVER_VERSION}  "
        "Release Build  (dralab emulated hardware)\nGCC version:  unknown\n"
    )


def gpu_information(fn: PciFunction, gpu: Gpu) -> str:
    """/proc/driver/nvidia/gpus/<bdf>/information, with the fields the lab knows (no IRQ, no VBIOS)."""
    assert fn.gpu is not None
    return "".join(
        f"{key + ':':<17}{value}\n"
        for key, value in (
            ("Model", gpu.model),
            ("GPU UUID", fn.gpu["uuid"]),
            ("Bus Type", "PCIe"),
            ("Bus Location", fn.bdf),
            ("Device Minor", fn.gpu["index"]),
            ("GPU Excluded", "No"),
        )
    )


def mig_minor(gpu: int, gi: int, ci: int | None = None) -> int:
    """The nvidia-caps minor of a GPU instance's access capability (ci None) or a compute instance's,
    as the kernel module numbers them in mig-minors: after config (1) and monitor (2), per GPU minor
    15 GPU instances of a GI access and 8 CI accesses each."""
    return 3 + gpu * MIG_CAP_GIS * (1 + MIG_CAP_CIS) + gi * (1 + MIG_CAP_CIS) + (0 if ci is None else 1 + ci)


def proc_mig_minors() -> str:
    """/proc/driver/nvidia-caps/mig-minors: every capability the module numbers, present or not."""
    lines = ["config 1", "monitor 2"]
    for gpu in range(MIG_CAP_GPUS):
        for gi in range(MIG_CAP_GIS):
            lines.append(f"gpu{gpu}/gi{gi}/access {mig_minor(gpu, gi)}")
            lines += [f"gpu{gpu}/gi{gi}/ci{ci}/access {mig_minor(gpu, gi, ci)}" for ci in range(MIG_CAP_CIS)]
    return "\n".join(lines) + "\n"


def cap_mode(minor: int) -> int:
    """The mode of an nvidia-caps device node: MIG config is root's alone, the rest readable by all."""
    return 0o400 if minor == 1 else 0o444


def capability(minor: int) -> str:
    """A file of /proc/driver/nvidia/capabilities: the nvidia-caps device node that grants it."""
    return f"DeviceFileMinor: {minor}\nDeviceFileMode: {cap_mode(minor)}\nDeviceFileModify: 1\n"


def mig_instances(plan: NodePlan) -> list[tuple[int, int, int]]:
    """(GPU minor, GPU instance ID, compute instance ID) of every MIG device of the plan."""
    gpus = {g.name: g for g in plan.profile.gpus}
    return [
        (int(fn.gpu["index"]), int(m["gpuInstanceId"]), int(m["computeInstanceId"]))
        for fn in plan.functions
        if fn.kind == "gpu" and fn.gpu is not None
        for m in mig_devices(gpus[fn.name], str(fn.gpu["uuid"]))
    ]


def proc_files(plan: NodePlan) -> dict[Path, str]:
    """What the kernel modules show under /proc/driver for the plan's GPUs: the driver version, each
    GPU's information, the MIG capabilities of its GPU and compute instances and their minors."""
    gpus = {g.name: g for g in plan.profile.gpus}
    files = {
        PROC_VERSION: proc_version(),
        PROC_MIG_MINORS: proc_mig_minors(),
        PROC_CAPABILITIES / "mig" / "config": capability(1),
        PROC_CAPABILITIES / "mig" / "monitor": capability(2),
    }
    for fn in plan.functions:
        if fn.kind == "gpu":
            files[PROC_GPUS / fn.bdf / "information"] = gpu_information(fn, gpus[fn.name])
    for gpu, gi, ci in mig_instances(plan):
        files[PROC_CAPABILITIES / f"gpu{gpu}" / "mig" / f"gi{gi}" / "access"] = capability(mig_minor(gpu, gi))
        files[PROC_CAPABILITIES / f"gpu{gpu}" / "mig" / f"gi{gi}" / f"ci{ci}" / "access"] = capability(mig_minor(gpu, gi, ci))
    return files


def render(plan: NodePlan, driver_root: Path, sysfs_root: str) -> None:
    """The driver root's data for the node of `plan`, whose tree the library reads at `sysfs_root`
    (a path in the mount namespace the library runs in)."""
    files = {CONFIG: json.dumps(config(plan, sysfs_root), indent=2) + "\n"}
    if any(fn.kind == "gpu" for fn in plan.functions):
        files.update(proc_files(plan))
    for path, content in files.items():
        (driver_root / path).parent.mkdir(parents=True, exist_ok=True)
        sysfs.write_atomic(driver_root / path, content)


def device_nodes(plan: NodePlan) -> dict[str, tuple[int, int]]:
    """dev/ entries of the driver root: name (a path under dev/) -> (major, minor). The nvidia-caps
    nodes are those of the MIG config and monitor capabilities and of the MIG devices' instances."""
    gpus = {
        f"nvidia{fn.gpu['index']}": (NVIDIA_MAJOR, int(fn.gpu["index"])) for fn in plan.functions if fn.kind == "gpu" and fn.gpu is not None
    }
    caps = [1, 2] + [m for gpu, gi, ci in mig_instances(plan) for m in (mig_minor(gpu, gi), mig_minor(gpu, gi, ci))]
    return (
        {
            **gpus,
            "nvidiactl": (NVIDIA_MAJOR, NVIDIACTL_MINOR),
            "nvidia-uvm": (NVIDIA_UVM_MAJOR, 0),
            "nvidia-uvm-tools": (NVIDIA_UVM_MAJOR, 1),
            **{f"nvidia-caps/nvidia-cap{m}": (NVIDIA_CAPS_MAJOR, m) for m in caps},
        }
        if gpus
        else {}
    )


@dataclass(frozen=True)
class Userspace:
    """The driver's userspace as dralab builds it (fake_hardware/cmd/libnvidia-ml, cmd/nvidia-smi)."""

    library: Path
    nvidia_smi: Path


def install(plan: NodePlan, driver_root: Path, sysfs_root: str, nvidia: Userspace) -> None:
    """A lab node's driver root, complete: data, device nodes (mknod: as root), the library and nvidia-smi."""
    render(plan, driver_root, sysfs_root)
    dev = driver_root / "dev"
    dev.mkdir(exist_ok=True)
    for name, (major, minor) in device_nodes(plan).items():
        mode = cap_mode(minor) if major == NVIDIA_CAPS_MAJOR else 0o666
        (dev / name).parent.mkdir(exist_ok=True)
        os.mknod(dev / name, mode | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(dev / name, mode)  # mknod's mode is masked by the umask
    install_library(driver_root, nvidia.library)
    install_nvidia_smi(driver_root, nvidia.nvidia_smi)


def install_library(driver_root: Path, library: Path) -> None:
    """The library as the driver's installer leaves it: a file named for the driver version and its
    soname, libnvidia-ml.so.1, a relative link to it (so it holds wherever the root is mounted).
    nvidia-ctk's CDI generation infers the driver's libraries from that versioned name."""
    (driver_root / LIBRARY_FILE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(library, driver_root / LIBRARY_FILE)
    (driver_root / LIBRARY).unlink(missing_ok=True)
    (driver_root / LIBRARY).symlink_to(LIBRARY_FILE.name)


def install_nvidia_smi(driver_root: Path, nvidia_smi: Path) -> None:
    """nvidia-smi where the driver's installer puts it: NVIDIA's DRA driver will not start without it."""
    (driver_root / NVIDIA_SMI).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(nvidia_smi, driver_root / NVIDIA_SMI)
    os.chmod(driver_root / NVIDIA_SMI, 0o755)


def write_node(plan: NodePlan, out: Path, library: Path | None = None, nvidia_smi: Path | None = None) -> None:
    """A node's tree at out/sys and its driver root at out/driver-root, reading that tree; no lab needed.
    With `library` (a built libnvidia-ml) and `nvidia_smi`, the root holds them as a lab node's does."""
    sysfs.write_tree(out / "sys", plan)
    render(plan, out / "driver-root", str((out / "sys").resolve()))
    if library is not None:
        install_library(out / "driver-root", library)
    if nvidia_smi is not None:
        install_nvidia_smi(out / "driver-root", nvidia_smi)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fake_hardware.nvml", description=write_node.__doc__)
    parser.add_argument("--profile", required=True, help="hardware profile name or YAML file")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--node", default="node-1", help="node name (GPU UUIDs derive from it and the seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--library", type=Path, help="a built libnvidia-ml.so to install in the driver root")
    parser.add_argument("--nvidia-smi", type=Path, help="a built nvidia-smi (cmd/nvidia-smi) to install there")
    args = parser.parse_args(argv)
    try:
        plan = plan_node(load_node_profile(args.profile), args.node, args.seed)
    except BadInput as e:
        parser.error(str(e))
    for option, path in (("--library", args.library), ("--nvidia-smi", args.nvidia_smi)):
        if path is not None and not path.is_file():
            parser.error(f"{option} {path}: no such file")
    write_node(plan, args.out, args.library, args.nvidia_smi)
    root = (args.out / "driver-root").resolve()
    where = (
        f"installed at {root / LIBRARY_FILE}"
        if args.library is not None
        else f"point it at them with DRALAB_NVML_ROOT={root} or install it with --library"
    )
    print(f"{sum(fn.kind == 'gpu' for fn in plan.functions)} GPUs; the library: {where}")


if __name__ == "__main__":
    main()
