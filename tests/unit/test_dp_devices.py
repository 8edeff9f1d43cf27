"""DP-01's match of the device IDs a plugin lists (the kubelet's checkpoint of ListAndWatch) to the
node's emulated GPUs, both ways, and the GPUs' IDs and device nodes as the emulated hardware
gives them (fake_hardware/nvml.py's driver root)."""

from __future__ import annotations

import re

from clusters.config import ClusterConfig
from drivers_under_test.profile import load_profile
from fake_hardware.lab import HardwareLab
from suites.device_plugin import devices
from suites.framework import node_files

CFG = ClusterConfig(name="ids", nodes=1, hardware={"node-1": "dgx-like"})
GPUS = devices.of_plan(HardwareLab(CFG.hardware_site()).node("node-1").plan)
UUIDS = [g.uuid for g in GPUS.gpus]  # what fake-gpu-plugin lists
PHANTOM = "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff"  # the ID its list-phantom-device variant adds


def _message(listed: list[str]) -> str:
    """DP-01's FAIL message for a node whose counts are as many as the IDs listed."""
    return devices.registration_problem(GPUS, "dralab.dev/fake-gpu", (len(listed), len(listed)), listed) or ""


def test_each_gpu_has_its_ids_and_nvidias_device_node_and_the_drivers_nodes_are_no_ones() -> None:
    plan = {f.name: f for f in HardwareLab(CFG.hardware_site()).node("node-1").plan.functions if f.kind == "gpu"}
    assert [g.name for g in GPUS.gpus] == sorted(plan, key=lambda n: int(n[3:]))
    gpu3 = GPUS.named(plan["gpu3"].gpu["uuid"])
    assert gpu3 is not None and gpu3.name == "gpu3" and gpu3.numbers == "195:3"
    assert GPUS.named(plan["gpu3"].bdf) == gpu3 == GPUS.named("3") == GPUS.owning("195:3")
    assert GPUS.named(PHANTOM) is None and GPUS.owning("195:255") is None
    assert GPUS.shared["195:255"] == "nvidiactl" and "nvidia-uvm" in GPUS.shared.values()


def test_a_plugin_listing_every_gpu_once_by_any_of_its_ids_passes() -> None:
    assert devices.listing_problems(UUIDS, GPUS) == []
    assert devices.listing_problems([str(g.index) for g in GPUS.gpus], GPUS) == []  # NVIDIA's index strategy
    assert devices.listing_problems([g.bdf for g in GPUS.gpus], GPUS) == []


def test_a_phantom_id_is_named_as_none_of_the_gpus() -> None:
    problems = devices.listing_problems([*UUIDS, PHANTOM], GPUS)
    assert problems == [f"lists {PHANTOM}, which is none of the GPUs of node-1"]
    named = load_profile("fake-gpu-plugin").variants["list-phantom-device"].violations["DP-01"]
    assert re.search(named, _message([*UUIDS, PHANTOM])) and not re.search(named, _message(UUIDS[:-1]))


def test_a_gpu_left_out_or_listed_twice_is_named_with_its_ids() -> None:
    last = GPUS.gpus[-1]
    assert devices.listing_problems(UUIDS[:-1], GPUS) == [f"lists no ID of gpu7 (UUID {last.uuid}, PCI address {last.bdf}, index 7)"]
    assert devices.listing_problems([*UUIDS, "7"], GPUS) == [f"lists gpu7 2 times: {sorted(['7', last.uuid])}"]
    named = load_profile("fake-gpu-plugin").variants["missing-device"].violations["DP-01"]
    assert re.search(named, _message(UUIDS[:-1]))


def test_a_node_is_judged_on_its_counts_and_its_ids() -> None:
    assert devices.registration_problem(GPUS, "r", (8, 8), UUIDS) is None
    counted = devices.registration_problem(GPUS, "r", (8, 7), UUIDS)
    assert counted is not None and counted.startswith(f"node-1 has 8 GPUs; capacity, allocatable of r: (8, 7); the plugin lists {UUIDS}")
    assert "gpu7 (" in counted  # the GPUs, each with its UUID and device node


def test_a_node_file_is_read_with_its_device_numbers_in_decimal() -> None:
    assert node_files._entry("666|character special file|c3:ff|/host/dev/nvidiactl") == (
        "/host/dev/nvidiactl",
        node_files.Entry("666", "character special file", "195:255"),
    )
    assert node_files._entry("644|regular file|0:0|/host/a|b") == ("/host/a|b", node_files.Entry("644", "regular file"))
