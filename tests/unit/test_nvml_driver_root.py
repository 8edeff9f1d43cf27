"""HW-10: the driver root fake_hardware/nvml.py renders for the lab's libnvidia-ml.so.1, and the GPU
identities (architecture, compute capability, MIG) profiles give. The library itself is tested
through go-nvml in tests/e2e/test_nvml_library.py."""

import json
import os
import stat
from pathlib import Path

import pydantic
import pytest

from fake_hardware import nvml
from fake_hardware.lab import NODE_SYSFS_ROOT
from fake_hardware.profile import Gpu, load_node_profile, mig_layout
from fake_hardware.topology import plan_node

H100 = {
    "name": "gpu0",
    "model": "NVIDIA H100 80GB HBM3",
    "memory": "80Gi",
    "vendor": "0x10de",
    "device": "0x2330",
    "numa": 0,
    "switch": "sw0",
}


def test_a_known_model_brings_its_identity_and_a_profile_may_override_it() -> None:
    h100 = Gpu.model_validate(H100)
    assert (h100.architecture, h100.compute_capability, h100.mig_profiles["3g.40gb"]) == ("hopper", "9.0", 2)
    l40 = Gpu.model_validate({**H100, "model": "NVIDIA L40"})
    assert (l40.architecture, l40.compute_capability, l40.mig_profiles) == ("ada", "8.9", {})
    unknown = Gpu.model_validate({**H100, "model": "M"})
    assert (unknown.architecture, unknown.compute_capability, unknown.mig_profiles) == ("unknown", None, {})
    assert Gpu.model_validate({**H100, "compute_capability": "9.1"}).compute_capability == "9.1"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"mig_devices": ["3g.40gb"] * 3}, "3 MIG devices 3g.40gb, the GPU takes 2"),
        ({"mig_devices": ["2g.99gb"]}, "1 MIG devices 2g.99gb, the GPU takes 0"),
        ({"mig_devices": ["4g.40gb", "3g.40gb", "1g.10gb"]}, "need more than the GPU's 7 compute slices"),
        ({"mig_devices": ["3g.40gb", "3g.40gb", "1g.10gb"]}, r"do not fit the GPU's 8 memory slices \(each takes \[4, 4, 1\]\)"),
        ({"mig_profiles": {"big": 1}}, "MIG profile 'big' is not like 3g.40gb"),
        ({"architecture": "fermi"}, "architecture 'fermi' is none of"),
        ({"compute_capability": "nine"}, "String should match pattern"),
    ],
)
def test_mig_and_identity_mistakes_are_rejected(change: dict[str, object], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        Gpu.model_validate({**H100, **change})


def test_driver_root_gives_every_gpu_of_the_plan_by_bdf(tmp_path: Path) -> None:
    plan = plan_node(load_node_profile("hgx-h100"), "node-1", 3)
    nvml.render(plan, tmp_path, NODE_SYSFS_ROOT)
    config = json.loads((tmp_path / "dralab" / "nvml.json").read_text())
    assert config["sysfsRoot"] == NODE_SYSFS_ROOT and config["driverVersion"] == nvml.DRIVER_VERSION
    gpus = [fn for fn in plan.functions if fn.kind == "gpu"]
    assert sorted(config["gpus"]) == sorted(fn.bdf for fn in gpus)
    for fn in gpus:
        assert fn.gpu is not None
        gpu = config["gpus"][fn.bdf]
        assert (gpu["uuid"], gpu["minorNumber"], gpu["memoryBytes"]) == (fn.gpu["uuid"], fn.gpu["index"], 80 * 2**30)
        assert (gpu["name"], gpu["architecture"], gpu["computeCapability"]) == ("NVIDIA H100 80GB HBM3", "hopper", [9, 0])
        assert gpu["migCapable"] and gpu["migDevices"] == [] and len(gpu["serial"]) == 13
    assert len({g["serial"] for g in config["gpus"].values()}) == len(gpus)
    version = (tmp_path / "proc" / "driver" / "nvidia" / "version").read_text()
    assert version.startswith("NVRM version: NVIDIA UNIX Open Kernel Module for ") and f"  {nvml.DRIVER_VERSION}  " in version
    assert not list(tmp_path.rglob(".*.tmp"))


def test_mig_profiles_are_placed_as_nvml_places_them() -> None:
    """An 80 GB part's profiles over its 8 memory slices, as `nvidia-smi mig -lgipp` lists them."""
    h100 = Gpu.model_validate(H100)
    placements = {p["name"]: (p["memorySlices"], p["placements"], p["instanceCount"]) for p in nvml.mig_profiles(h100)}
    assert placements == {
        "1g.10gb": (1, list(range(7)), 7),
        "1g.20gb": (2, [0, 2, 4, 6], 4),
        "2g.20gb": (2, [0, 2, 4], 3),
        "3g.40gb": (4, [0, 4], 2),
        "4g.40gb": (4, [0], 1),
        "7g.80gb": (8, [0], 1),
    }
    h200 = Gpu.model_validate({**H100, "model": "NVIDIA H200", "memory": "143771Mi"})
    assert {p["name"]: p["memorySlices"] for p in nvml.mig_profiles(h200)} == {
        "1g.18gb": 1,
        "1g.35gb": 2,
        "2g.35gb": 2,
        "3g.71gb": 4,
        "4g.71gb": 4,
        "7g.141gb": 8,
    }


@pytest.mark.parametrize(
    "layout, starts",
    [
        (["3g.40gb", "3g.40gb"], [0, 4]),
        (["3g.40gb", "4g.40gb"], [4, 0]),  # the 4g.40gb has one placement: it goes first
        (["1g.10gb"] * 7, list(range(7))),
        (["1g.10gb", "2g.20gb", "1g.20gb"], [4, 0, 2]),
        ([], []),
    ],
)
def test_a_mig_layout_takes_free_placements_of_its_profiles(layout: list[str], starts: list[int]) -> None:
    gpu = Gpu.model_validate({**H100, "mig_devices": layout})
    assert mig_layout(gpu) == starts
    assert [d["placementStart"] for d in nvml.mig_devices(gpu, "GPU-38c9132b-7340-42a4-a400-ecefa6895fdc")] == starts


def test_proc_shows_each_gpu_and_the_mig_capabilities_of_its_instances(tmp_path: Path) -> None:
    """As the kernel modules show them: each GPU's information, and per MIG device a GPU and a
    compute instance access capability whose minor mig-minors gives and whose device node exists."""
    profile = load_node_profile("hgx-h100").model_copy(deep=True)
    gpu0 = profile.gpus[0].model_copy(update={"mig_devices": ["3g.40gb", "3g.40gb"]})
    profile.gpus[0] = gpu0
    plan = plan_node(profile, "node-1", 3)
    nvml.render(plan, tmp_path, NODE_SYSFS_ROOT)
    proc = tmp_path / "proc" / "driver"
    for fn in (f for f in plan.functions if f.kind == "gpu"):
        assert fn.gpu is not None
        lines = (proc / "nvidia" / "gpus" / fn.bdf / "information").read_text().splitlines()
        assert {k: v.strip() for k, v in (line.split(":", 1) for line in lines)} == {
            "Model": "NVIDIA H100 80GB HBM3",
            "GPU UUID": fn.gpu["uuid"],
            "Bus Type": "PCIe",
            "Bus Location": fn.bdf,
            "Device Minor": str(fn.gpu["index"]),
            "GPU Excluded": "No",
        }
    minors = dict(line.split(" ")[::-1] for line in (proc / "nvidia-caps" / "mig-minors").read_text().splitlines())
    assert len(minors) == 2 + 32 * 15 * 9 and minors["1"] == "config" and minors["4322"] == "gpu31/gi14/ci7/access"
    gpu = next(fn for fn in plan.functions if fn.name == "gpu0").gpu
    assert gpu is not None
    caps = proc / "nvidia" / "capabilities"
    granted = sorted(str(p.relative_to(caps)) for p in caps.rglob("access"))
    assert granted == [f"gpu{gpu['index']}/mig/gi{gi}/{what}access" for gi in (1, 2) for what in ("", "ci0/")]
    for path in granted:
        gpu_part, _, rest = path.partition("/mig/")
        text = (caps / path).read_text()
        number = int(text.split("DeviceFileMinor: ")[1].split("\n")[0])
        assert minors[str(number)] == f"{gpu_part}/{rest}" and "DeviceFileMode: 292\n" in text
        assert f"nvidia-caps/nvidia-cap{number}" in nvml.device_nodes(plan)
    assert "DeviceFileMode: 256" in (caps / "mig" / "config").read_text()


def test_mig_devices_get_instance_ids_uuids_and_their_profiles_memory() -> None:
    gpu = Gpu.model_validate({**H100, "mig_devices": ["3g.40gb", "1g.10gb"]})
    devices = nvml.mig_devices(gpu, "GPU-38c9132b-7340-42a4-a400-ecefa6895fdc")
    assert [(d["gpuInstanceId"], d["computeInstanceId"], d["memoryBytes"]) for d in devices] == [(1, 0, 40 * 10**9), (2, 0, 10 * 10**9)]
    assert [d["name"] for d in devices] == ["NVIDIA H100 80GB HBM3 MIG 3g.40gb", "NVIDIA H100 80GB HBM3 MIG 1g.10gb"]
    uuids = [str(d["uuid"]) for d in devices]
    assert all(u.startswith("MIG-") for u in uuids) and len(set(uuids)) == 2
    assert nvml.mig_devices(gpu, "GPU-38c9132b-7340-42a4-a400-ecefa6895fdc") == devices  # deterministic


def test_command_writes_a_tree_and_a_driver_root_reading_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nvml.main(["--profile", "gpu-small", "--out", str(tmp_path)])
    config = json.loads((tmp_path / "driver-root" / "dralab" / "nvml.json").read_text())
    assert config["sysfsRoot"] == str(tmp_path / "sys")
    for bdf in config["gpus"]:
        assert (tmp_path / "sys" / "bus" / "pci" / "devices" / bdf / "dralab-gpu.json").exists()
    assert "2 GPUs" in capsys.readouterr().out


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_installed_driver_root_has_the_kernel_modules_device_nodes_and_the_library(tmp_path: Path) -> None:
    plan = plan_node(load_node_profile("gpu-small"), "node-1", 0)
    library = tmp_path / "built.so"
    library.write_bytes(b"\x7fELF")
    smi = tmp_path / "nvidia-smi"
    smi.write_bytes(b"\x7fELF smi")
    nvml.install(plan, tmp_path / "root", NODE_SYSFS_ROOT, nvml.Userspace(library, smi))
    installed = tmp_path / "root" / "usr" / "bin" / "nvidia-smi"
    assert installed.read_bytes() == b"\x7fELF smi" and stat.S_IMODE(installed.stat().st_mode) == 0o755
    dev = tmp_path / "root" / "dev"
    indexes = sorted(int(fn.gpu["index"]) for fn in plan.functions if fn.kind == "gpu" and fn.gpu is not None)
    assert sorted(p.name for p in dev.iterdir()) == sorted(
        [f"nvidia{i}" for i in indexes] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"]
    )
    assert sorted(p.name for p in (dev / "nvidia-caps").iterdir()) == ["nvidia-cap1", "nvidia-cap2"]  # no MIG devices
    for name, (major, minor, mode) in {
        "nvidia0": (195, 0, 0o666),
        "nvidiactl": (195, 255, 0o666),
        "nvidia-uvm-tools": (510, 1, 0o666),
        "nvidia-caps/nvidia-cap1": (511, 1, 0o400),
        "nvidia-caps/nvidia-cap2": (511, 2, 0o444),
    }.items():
        st = (dev / name).stat()
        assert stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (major, minor)
        assert stat.S_IMODE(st.st_mode) == mode
    assert_library_installed(tmp_path / "root", b"\x7fELF")
    assert (tmp_path / "root" / nvml.CONFIG).exists()


def assert_library_installed(driver_root: Path, content: bytes) -> None:
    """The library as the driver's installer leaves it: libnvidia-ml.so.<version>, and the soname a
    relative link to it. NVIDIA's container toolkit finds the driver's libraries by that version."""
    versioned = driver_root / "usr" / "lib64" / f"libnvidia-ml.so.{nvml.DRIVER_VERSION}"
    assert nvml.LIBRARY_FILE == versioned.relative_to(driver_root) and versioned.read_bytes() == content
    assert not versioned.is_symlink() and os.readlink(driver_root / nvml.LIBRARY) == versioned.name


def test_command_installs_a_built_library_as_the_driver_installs_it(tmp_path: Path) -> None:
    library = tmp_path / "built.so"
    library.write_bytes(b"\x7fELF")
    nvml.main(["--profile", "gpu-small", "--out", str(tmp_path / "node"), "--library", str(library)])
    assert_library_installed(tmp_path / "node" / "driver-root", b"\x7fELF")
    library.write_bytes(b"\x7fELF2")  # a rebuilt library replaces the installed one
    nvml.main(["--profile", "gpu-small", "--out", str(tmp_path / "node"), "--library", str(library)])
    assert_library_installed(tmp_path / "node" / "driver-root", b"\x7fELF2")
