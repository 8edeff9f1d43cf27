"""The device plugin oracle's judgement (DP-04): what a container must hold for its plugin's
Allocate answer (and the CDI devices it names), read against the container's own view of itself;
and each device node against the GPU it belongs to. The answers are fake-gpu-plugin's as the
kubelet's checkpoint holds them, its broken variants' and other correct plugins' choices; the
views are what view_script prints in the lab's workload image."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from drivers_under_test.profile import load_profile
from suites.device_plugin import allocation
from suites.device_plugin.allocation import ContainerView, DeviceFile, Observed, Promise
from suites.device_plugin.checkpoint import AllocateAnswer, DeviceSpec, Entry, Mount
from suites.device_plugin.devices import Gpu, NodeGpus

DEV_ROOT = "/var/lib/dralab-hardware/driver-root/dev"  # where the lab's nodes have the GPUs' device nodes
ANSWER = AllocateAnswer(
    envs={"VENDOR_VISIBLE_DEVICES": "GPU-a", "VENDOR_MODE": "allocate"},
    mounts=[Mount("/run/vendor/GPU-a", "/sys/devices/x", True)],
    devices=[DeviceSpec("/dev/vendor0", f"{DEV_ROOT}/nvidia0", "rw")],
    cdi_devices=["vendor.example/gpu=GPU-a"],
)
CHAR = "character special file"
GPUS = NodeGpus(
    "node-1",
    (
        Gpu("gpu0", "GPU-a", "0000:01:00.0", 0, "195:0"),
        Gpu("gpu1", "GPU-b", "0000:02:00.0", 1, "195:1"),
        Gpu("gpu2", "GPU-c", "0000:03:00.0", 2, "195:2"),
    ),
    {"195:255": "nvidiactl", "510:0": "nvidia-uvm"},
)
SPECS = [
    {"cdiVersion": "0.6.0", "kind": "other.example/nic", "devices": [{"name": "GPU-a", "containerEdits": {}}]},
    {
        "cdiVersion": "0.6.0",
        "kind": "vendor.example/gpu",
        "containerEdits": {"env": ["VENDOR_MODE=cdi"]},
        "devices": [
            {
                "name": "GPU-a",
                "containerEdits": {
                    "env": ["VENDOR_CDI_GPU=GPU-a"],
                    "deviceNodes": [{"path": "/dev/vendor-ctl", "hostPath": f"{DEV_ROOT}/nvidiactl"}],
                    "mounts": [{"hostPath": "/usr/lib/vendor", "containerPath": "/opt/vendor", "options": ["ro", "bind"]}],
                },
            }
        ],
    },
]
# What a correct container holds for ANSWER and SPECS, as view_script prints it.
PRINTED = (
    "22 21 0:45 / / rw,relatime - overlay overlay rw\n"
    "31 22 8:1 /sys/devices/x /run/vendor/GPU-a ro,relatime - sysfs sysfs rw\n"
    "32 22 8:1 /usr/lib/vendor /opt/vendor ro,nosuid - ext4 /dev/sda1 rw\n"
    "33 22 8:1 /data /mnt/with\\040space rw - ext4 /dev/sda1 rw\n"
    "---device nodes\n"
    "character special file|c3:0|/dev/vendor0\n"
    "character special file|c3:ff|/dev/vendor-ctl\n"
    "character special file|1:3|/dev/null\n"
    "character special file|c3:0|/dev/vendor0\n"
    "character special file|c3:ff|/dev/vendor-ctl\n"
    "---mount paths\n"
    "/run/vendor/GPU-a|/run/vendor/GPU-a\n"
    "/opt/vendor|/opt/vendor\n"
    "---env\n"
    "PATH=/bin\0VENDOR_VISIBLE_DEVICES=GPU-a\0VENDOR_MODE=cdi\0VENDOR_CDI_GPU=GPU-a\0NOTE=two\nlines\0"
)
HOST = {f"{DEV_ROOT}/nvidia0": DeviceFile(CHAR, "195:0"), f"{DEV_ROOT}/nvidiactl": DeviceFile(CHAR, "195:255")}


def _expected() -> list[Promise]:
    expected, problems = allocation.promises(ANSWER, SPECS)
    assert problems == []
    return expected


def test_allocate_and_its_cdi_devices_make_the_promises() -> None:
    by_target = {(p.what, p.target): p for p in _expected()}
    assert set(by_target) == {
        ("env", "VENDOR_VISIBLE_DEVICES"),
        ("env", "VENDOR_MODE"),
        ("env", "VENDOR_CDI_GPU"),
        ("mount", "/run/vendor/GPU-a"),
        ("mount", "/opt/vendor"),
        ("device node", "/dev/vendor0"),
        ("device node", "/dev/vendor-ctl"),
    }
    # The runtime applies CDI edits after the kubelet's config: the spec's env wins.
    assert by_target[("env", "VENDOR_MODE")] == Promise("CDI device vendor.example/gpu=GPU-a", "env", "VENDOR_MODE", "cdi")
    assert by_target[("mount", "/opt/vendor")].read_only
    assert by_target[("device node", "/dev/vendor0")].host_path == f"{DEV_ROOT}/nvidia0"
    assert by_target[("device node", "/dev/vendor-ctl")].host_path == f"{DEV_ROOT}/nvidiactl"
    # A CDI device node without a hostPath is the same path on the host.
    (plain,) = allocation.promises(
        AllocateAnswer(cdi_devices=["k/c=d"]),
        [{"kind": "k/c", "devices": [{"name": "d", "containerEdits": {"deviceNodes": [{"path": "/dev/x"}]}}]}],
    )[0]
    assert plain.host_path == "/dev/x"


def test_a_cdi_device_no_spec_defines_is_a_violation() -> None:
    _, problems = allocation.promises(AllocateAnswer(cdi_devices=["vendor.example/gpu=GPU-z"]), SPECS)
    assert problems == [
        "Allocate named CDI device vendor.example/gpu=GPU-z, which no CDI spec in the runtime's CDI spec directories defines"
    ]


def test_the_container_view_is_read_from_mountinfo_stat_and_pid_1s_environment() -> None:
    view = allocation.parse_view(PRINTED)
    assert view.mounts["/run/vendor/GPU-a"] == ["ro", "relatime"] and "/mnt/with space" in view.mounts
    # The asked paths, and every device file under /dev, with their numbers in decimal.
    assert view.nodes == {
        "/dev/vendor0": DeviceFile(CHAR, "195:0"),
        "/dev/vendor-ctl": DeviceFile(CHAR, "195:255"),
        "/dev/null": DeviceFile(CHAR, "1:3"),
    }
    assert view.env["VENDOR_MODE"] == "cdi" and view.env["NOTE"] == "two\nlines"


@pytest.mark.skipif(shutil.which("busybox") is None, reason="runs the script with busybox, as the workload image does")
def test_the_view_script_quotes_paths_and_stops_on_a_failed_command() -> None:
    script = allocation.view_script(["/dev/a b", "/dev/null"], ["/var/run/x", "/tmp"])
    assert script.startswith("set -e;") and "'/dev/a b' /dev/null" in script
    # busybox's sh and stat, as in the lab's workload image; this process stands in for PID 1.
    done = subprocess.run(
        ["busybox", "sh", "-c", script.replace("/proc/1/", "/proc/self/").replace("stat -", "busybox stat -")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    view = allocation.parse_view(done.stdout)
    assert view.nodes["/dev/a b"] == DeviceFile("") and view.nodes["/dev/null"] == DeviceFile(CHAR, "1:3") and "/" in view.mounts
    assert view.resolved["/tmp"] == os.path.realpath("/tmp") and view.resolved["/var/run/x"] == os.path.join(
        os.path.realpath("/var/run"), "x"
    )
    assert view.env["PATH"]
    failing = subprocess.run(["busybox", "sh", "-c", script.replace("/proc/1/", "/proc/nonesuch/")], capture_output=True, text=True)
    assert failing.returncode != 0 and "---env" not in failing.stdout


def test_an_answer_naming_only_the_granted_device_names_no_foreign_one() -> None:
    # GPU-a is granted; neither GPU-b nor a longer ID containing GPU-a is named, an index never looked for.
    assert allocation.foreign_devices(ANSWER, SPECS, ["GPU-b", "GPU-a0", "GPU", "0"]) == []


def test_an_answer_naming_another_device_names_it_and_where() -> None:
    # fake-gpu-plugin's wrong-device variant: for GPU-a it answers the env, mount and CDI device of GPU-b.
    answer = AllocateAnswer(
        envs={"VENDOR_VISIBLE_DEVICES": "GPU-a", "VENDOR_GPU_1": "GPU-b"},
        mounts=[Mount("/run/vendor/GPU-b", "/sys/devices/y", True)],
        devices=[DeviceSpec("/dev/vendor1", f"{DEV_ROOT}/nvidia1", "rw")],
        cdi_devices=["vendor.example/gpu=GPU-b", "vendor.example/gpu=1"],
    )
    specs = [
        {
            "kind": "vendor.example/gpu",
            "devices": [{"name": "GPU-b", "containerEdits": {}}, {"name": "1", "containerEdits": {"env": ["VENDOR_CDI_GPU=GPU-c"]}}],
        }
    ]
    assert allocation.foreign_devices(answer, specs, ["GPU-c", "GPU-b", "GPU-d", "1"]) == [
        "GPU-b (in env VENDOR_GPU_1=GPU-b, mount /run/vendor/GPU-b from /sys/devices/y, CDI device vendor.example/gpu=GPU-b)",
        "GPU-c (in the edits of CDI device vendor.example/gpu=1)",
    ]


def test_a_container_holding_everything_has_no_violation() -> None:
    assert allocation.violations(_expected(), allocation.parse_view(PRINTED), HOST) == []


def test_each_broken_promise_is_named_with_what_the_container_holds() -> None:
    view = allocation.parse_view(PRINTED)
    view.env.pop("VENDOR_CDI_GPU")
    view.env["VENDOR_VISIBLE_DEVICES"] = "GPU-b"
    view.mounts.pop("/opt/vendor")
    view.mounts["/run/vendor/GPU-a"] = ["rw", "relatime"]
    view.nodes["/dev/vendor0"] = DeviceFile("regular file")
    view.nodes["/dev/vendor-ctl"] = DeviceFile("")
    cdi = "CDI device vendor.example/gpu=GPU-a"
    assert sorted(allocation.violations(_expected(), view, HOST)) == sorted(
        [
            "Allocate set env VENDOR_VISIBLE_DEVICES='GPU-a', the container has VENDOR_VISIBLE_DEVICES='GPU-b'",
            f"{cdi} set env VENDOR_CDI_GPU='GPU-a', the container has no VENDOR_CDI_GPU",
            f"{cdi} mounted /opt/vendor, the container has no mount there",
            "Allocate mounted /run/vendor/GPU-a read-only, the container has it rw,relatime",
            f"Allocate gave device node /dev/vendor0: the container's is a regular file, the node's {DEV_ROOT}/nvidia0 a {CHAR} 195:0",
            f"{cdi} gave device node /dev/vendor-ctl ({DEV_ROOT}/nvidiactl), the container has none",
        ]
    )


def test_a_mount_is_found_where_the_container_resolves_its_path() -> None:
    # An image whose /var/run links to /run: the runtime mounted onto /run/vendor, mountinfo says so.
    promised = [Promise("Allocate", "mount", "/var/run/vendor", read_only=True)]
    view = ContainerView(mounts={"/run/vendor": ["ro"]}, resolved={"/var/run/vendor": "/run/vendor"})
    assert allocation.violations(promised, view, {}) == []
    view.resolved.clear()
    assert allocation.violations(promised, view, {}) == ["Allocate mounted /var/run/vendor, the container has no mount there"]


def test_an_empty_answer_promises_nothing() -> None:
    assert allocation.promises(AllocateAnswer(), []) == ([], [])
    assert allocation.violations([], ContainerView(), {}) == []


# fake-gpu-plugin's answer for GPU-b (index 1), as the kubelet's checkpoint holds it, its CDI
# spec, and what the container holds for it in the lab (mountinfo trimmed to the mounts it made).
SYSFS_DIR = "/var/lib/dralab-hardware/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0"
REFERENCE = AllocateAnswer(
    envs={"DRALAB_FAKE_GPU_UUIDS": "GPU-b", "DRALAB_FAKE_GPU_1": "GPU-b"},
    mounts=[Mount("/var/run/dralab/fake-gpu/GPU-b", SYSFS_DIR, True)],
    devices=[DeviceSpec("/dev/nvidia1", f"{DEV_ROOT}/nvidia1", "rw")],
    cdi_devices=["dralab.dev/fake-gpu=GPU-b"],
)
REFERENCE_SPECS = [
    {
        "cdiVersion": "0.5.0",
        "kind": "dralab.dev/fake-gpu",
        "devices": [{"name": g.uuid, "containerEdits": {"env": [f"DRALAB_CDI_GPU_{g.index}={g.uuid}"]}} for g in GPUS.gpus],
    }
]
DEFAULT_DEV = "character special file|1:3|/dev/null\ncharacter special file|1:5|/dev/zero\ncharacter special file|5:0|/dev/tty\n"


def _printed(nodes: str, env: str) -> str:
    return (
        "22 21 0:45 / / rw,relatime - overlay overlay rw\n"
        f"40 22 0:30 {SYSFS_DIR} /run/dralab/fake-gpu/GPU-b ro,relatime - fuse fuse rw\n"
        f"---device nodes\n{nodes}{DEFAULT_DEV}"
        "---mount paths\n/var/run/dralab/fake-gpu/GPU-b|/run/dralab/fake-gpu/GPU-b\n"
        f"---env\nPATH=/bin\0{env}\0"
    )


REFERENCE_ENV = "DRALAB_FAKE_GPU_UUIDS=GPU-b\0DRALAB_FAKE_GPU_1=GPU-b\0DRALAB_CDI_GPU_1=GPU-b"
REFERENCE_VIEW = _printed("character special file|c3:1|/dev/nvidia1\ncharacter special file|c3:1|/dev/nvidia1\n", REFERENCE_ENV)


def _seen(
    answer: AllocateAnswer = REFERENCE,
    printed: str = REFERENCE_VIEW,
    ids: tuple[str, ...] = ("GPU-b",),
    asked: int = 1,
    specs: list | None = None,
    host: dict[str, DeviceFile] | None = None,
) -> Observed:
    return Observed(
        pod="gen-x/gen-3",
        container="side1",
        init=False,
        node="node-1",
        asked=asked,
        entry=Entry("uid-3", "side1", "dralab.dev/fake-gpu", {-1: list(ids)}, answer),
        registered=[g.uuid for g in GPUS.gpus],
        specs=REFERENCE_SPECS if specs is None else specs,
        view=allocation.parse_view(printed),
        host={f"{DEV_ROOT}/nvidia{g.index}": DeviceFile(CHAR, g.numbers) for g in GPUS.gpus} | (host or {}),
    )


def _message(seen: Observed) -> str:
    """The FAIL message of the checks (checks.holds_its_allocation, and over the generated pods)."""
    return f"{seen.name} was granted {seen.entry.device_ids}: " + "; ".join(allocation.judge(seen, GPUS))


def test_the_reference_plugins_container_holds_its_allocation_and_its_gpus_node() -> None:
    assert allocation.judge(_seen(), GPUS) == []


def test_other_correct_plugins_pass_whatever_ids_paths_and_way_the_node_comes() -> None:
    # IDs by index, the GPU's node through its CDI device at a path of the plugin's, the driver's
    # control device as a DeviceSpec of its own.
    by_index = AllocateAnswer(devices=[DeviceSpec("/dev/nvidiactl", f"{DEV_ROOT}/nvidiactl", "rw")], cdi_devices=["vendor.example/gpu=1"])
    specs = [
        {
            "kind": "vendor.example/gpu",
            "devices": [{"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/gpus/1", "hostPath": f"{DEV_ROOT}/nvidia1"}]}}],
        }
    ]
    printed = _printed("character special file|c3:ff|/dev/nvidiactl\ncharacter special file|c3:1|/dev/gpus/1\n", "")
    ctl = {f"{DEV_ROOT}/nvidiactl": DeviceFile(CHAR, "195:255")}
    assert allocation.judge(_seen(by_index, printed, ids=("1",), specs=specs, host=ctl), GPUS) == []
    # IDs by PCI address, env only: the runtime's hook makes the node in /dev (NVIDIA's envvar strategy).
    env_only = AllocateAnswer(envs={"NVIDIA_VISIBLE_DEVICES": "0000:02:00.0"})
    printed = _printed("character special file|c3:1|/dev/nvidia1\n", "NVIDIA_VISIBLE_DEVICES=0000:02:00.0")
    assert allocation.judge(_seen(env_only, printed, ids=("0000:02:00.0",), specs=[]), GPUS) == []


def test_allocate_other_device_hands_another_gpus_node_which_only_matching_nodes_to_gpus_shows() -> None:
    # fake-gpu-plugin's allocate-other-device variant, a second container request: GPU-b's env,
    # mount and CDI device, the node of the GPU after it.
    other = AllocateAnswer(
        REFERENCE.envs, REFERENCE.mounts, [DeviceSpec("/dev/nvidia2", f"{DEV_ROOT}/nvidia2", "rw")], {}, REFERENCE.cdi_devices
    )
    seen = _seen(other, _printed("character special file|c3:2|/dev/nvidia2\n" * 2, REFERENCE_ENV))
    # What was judged before: no foreign ID named, every promise held.
    expected, wrong = allocation.promises(other, REFERENCE_SPECS)
    assert allocation.foreign_devices(other, REFERENCE_SPECS, ["GPU-a", "GPU-c"]) == [] and wrong == []
    assert allocation.violations(expected, seen.view, seen.host) == []
    assert allocation.judge(seen, GPUS) == [
        f"Allocate gave device node /dev/nvidia2 from {DEV_ROOT}/nvidia2, the node of gpu2 (GPU-c, device node 195:2); granted: ['gpu1']",
        "the container holds no device node of granted gpu1 (GPU-b, device node 195:1); its GPU device nodes: ['/dev/nvidia2 (195:2)']",
        "the container holds the device node of gpu2 (GPU-c, device node 195:2), which it was not granted (['gpu1'])",
    ]
    named = load_profile("fake-gpu-plugin").variants["allocate-other-device"].violations["DP-04"]
    assert re.search(named, _message(seen)), _message(seen)
    assert not re.search(named, _message(_seen()))


def test_a_stand_in_node_is_none_of_the_gpus_and_leaves_the_granted_one_out() -> None:
    stand_in = AllocateAnswer(devices=[DeviceSpec("/dev/gpu1", "/dev/null", "rw")])
    printed = _printed("character special file|1:3|/dev/gpu1\n", "")
    assert allocation.judge(_seen(stand_in, printed, specs=[], host={"/dev/null": DeviceFile(CHAR, "1:3")}), GPUS) == [
        "Allocate gave device node /dev/gpu1 from /dev/null, a character special file 1:3: none of the device nodes of the GPUs of "
        "node-1 nor of their driver (nvidia-uvm, nvidiactl)",
        "the container holds no device node of granted gpu1 (GPU-b, device node 195:1); its GPU device nodes: []",
    ]


def test_a_granted_id_no_gpu_has_and_a_wrong_count_are_named() -> None:
    phantom = "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff"  # fake-gpu-plugin's list-phantom-device
    problems = allocation.judge(_seen(ids=("GPU-b", phantom), asked=3), GPUS)
    assert problems[:2] == [
        f"it asked for 3 devices, the kubelet granted 2: ['GPU-b', '{phantom}']",
        f"the kubelet granted {phantom}, which names none of the GPUs of node-1",
    ]
