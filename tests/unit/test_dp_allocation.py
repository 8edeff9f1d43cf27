"""The device plugin oracle's judgement: what a container must hold for its plugin's Allocate
answer (and the CDI devices it names), read against the container's own view of itself."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from suites.device_plugin import allocation
from suites.device_plugin.allocation import ContainerView, Promise
from suites.device_plugin.checkpoint import AllocateAnswer, DeviceSpec, Mount

ANSWER = AllocateAnswer(
    envs={"VENDOR_VISIBLE_DEVICES": "GPU-a", "VENDOR_MODE": "allocate"},
    mounts=[Mount("/run/vendor/GPU-a", "/sys/devices/x", True)],
    devices=[DeviceSpec("/dev/vendor0", "/dev/null", "rw")],
    cdi_devices=["vendor.example/gpu=GPU-a"],
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
                    "deviceNodes": [{"path": "/dev/vendor-ctl"}],
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
    "character special file|/dev/vendor0\n"
    "character special file|/dev/vendor-ctl\n"
    "---mount paths\n"
    "/run/vendor/GPU-a|/run/vendor/GPU-a\n"
    "/opt/vendor|/opt/vendor\n"
    "---env\n"
    "PATH=/bin\0VENDOR_VISIBLE_DEVICES=GPU-a\0VENDOR_MODE=cdi\0VENDOR_CDI_GPU=GPU-a\0NOTE=two\nlines\0"
)
HOST = {"/dev/null": "character special file", "/dev/vendor-ctl": "character special file"}


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
    assert by_target[("device node", "/dev/vendor0")].host_path == "/dev/null"
    assert by_target[("device node", "/dev/vendor-ctl")].host_path == "/dev/vendor-ctl"


def test_a_cdi_device_no_spec_defines_is_a_violation() -> None:
    _, problems = allocation.promises(AllocateAnswer(cdi_devices=["vendor.example/gpu=GPU-z"]), SPECS)
    assert problems == [
        "Allocate named CDI device vendor.example/gpu=GPU-z, which no CDI spec in the runtime's CDI spec directories defines"
    ]


def test_the_container_view_is_read_from_mountinfo_stat_and_pid_1s_environment() -> None:
    view = allocation.parse_view(PRINTED)
    assert view.mounts["/run/vendor/GPU-a"] == ["ro", "relatime"] and "/mnt/with space" in view.mounts
    assert view.nodes == {"/dev/vendor0": "character special file", "/dev/vendor-ctl": "character special file"}
    assert view.env["VENDOR_MODE"] == "cdi" and view.env["NOTE"] == "two\nlines"


@pytest.mark.skipif(shutil.which("busybox") is None, reason="runs the script with busybox, as the workload image does")
def test_the_view_script_quotes_paths_and_stops_on_a_failed_command() -> None:
    script = allocation.view_script(["/dev/a b", "/dev/null"], ["/var/run/x", "/tmp"])
    assert script.startswith("set -e;") and "'/dev/a b' /dev/null" in script
    # busybox's sh and stat, as in the lab's workload image; this process stands in for PID 1.
    done = subprocess.run(
        ["busybox", "sh", "-c", script.replace("/proc/1/", "/proc/self/").replace("stat -L", "busybox stat -L")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    view = allocation.parse_view(done.stdout)
    assert view.nodes == {"/dev/a b": "", "/dev/null": "character special file"} and "/" in view.mounts
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
        devices=[DeviceSpec("/dev/vendor1", "/dev/null", "rw")],
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
    view.nodes["/dev/vendor0"] = "regular file"
    view.nodes["/dev/vendor-ctl"] = ""
    cdi = "CDI device vendor.example/gpu=GPU-a"
    assert sorted(allocation.violations(_expected(), view, HOST)) == sorted(
        [
            "Allocate set env VENDOR_VISIBLE_DEVICES='GPU-a', the container has VENDOR_VISIBLE_DEVICES='GPU-b'",
            f"{cdi} set env VENDOR_CDI_GPU='GPU-a', the container has no VENDOR_CDI_GPU",
            f"{cdi} mounted /opt/vendor, the container has no mount there",
            "Allocate mounted /run/vendor/GPU-a read-only, the container has it rw,relatime",
            "Allocate gave device node /dev/vendor0: the container's is a regular file, the node's /dev/null a character special file",
            f"{cdi} gave device node /dev/vendor-ctl (/dev/vendor-ctl), the container has none",
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
