"""HW-10: go-nvml, as vendor GPU drivers use it, loads the lab's libnvidia-ml.so.1 and sees every GPU
profile's GPUs as the tree and the profile give them, and hears of faults. No lab and no root: each
profile's tree and driver root are rendered into a temporary directory (fake_hardware.nvml), and
the Go tests of fake_hardware/internal/gonvml build the library and read them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from fake_hardware import nvml
from fake_hardware.profile import (
    PROFILES_DIR,
    Gpu,
    NodeProfile,
    load_node_profile,
    mig_layout,
    mig_memory_bytes,
    mig_slices,
    node_profile_path,
)
from fake_hardware.topology import NodePlan, plan_node

GO_MODULE = Path(__file__).resolve().parents[2] / "fake_hardware"
SEED = 7
# hgx-h100 with MIG on for three GPUs: two 3g.40gb on the first, seven 1g.10gb on the second, and
# on the third a 3g.40gb listed before the 4g.40gb that must take the first placement
MIG_LAYOUTS = {"gpu0": ["3g.40gb", "3g.40gb"], "gpu1": ["1g.10gb"] * 7, "gpu2": ["3g.40gb", "4g.40gb"]}


def mig_profile() -> NodeProfile:
    data = yaml.safe_load(node_profile_path("hgx-h100").read_text())
    data["name"] = "hgx-h100-mig"
    data["gpus"] = [{**gpu, "mig_devices": MIG_LAYOUTS.get(gpu["name"], [])} for gpu in data["gpus"]]
    return NodeProfile.model_validate(data)


def mig_profiles(gpu: Gpu) -> list[dict[str, object]]:
    """The GPU instance profiles of the GPU, where each may be placed, and how many more fit beside
    its MIG devices (placements that overlap none of theirs)."""
    taken = {
        s for p, start in zip(gpu.mig_devices, mig_layout(gpu) or [], strict=True) for s in range(start, start + gpu.mig_memory_slices(p))
    }
    return [
        {
            "name": name,
            "slices": mig_slices(name),
            "memoryBytes": mig_memory_bytes(name),
            "memorySlices": gpu.mig_memory_slices(name),
            "instanceCount": count,
            "placements": gpu.mig_placements(name),
            "remaining": sum(not taken & set(range(p, p + gpu.mig_memory_slices(name))) for p in gpu.mig_placements(name)),
        }
        for name, count in gpu.mig_profiles.items()
    ]


def expectation(plan: NodePlan) -> dict[str, object]:
    """What the profile says, in the shape internal/gonvml reads (its type expectation)."""
    models = {g.name: g for g in plan.profile.gpus}
    gpus = []
    for fn in sorted((f for f in plan.at_boot() if f.gpu), key=lambda f: f.bdf):
        assert fn.gpu is not None
        model = models[fn.name]
        gpus.append(
            {
                "bdf": fn.bdf,
                "uuid": fn.gpu["uuid"],
                "name": model.model,
                "pciDeviceId": fn.device << 16 | fn.vendor,
                "numa": fn.numa,
                "cpus": sorted(next(n for n in plan.profile.numa_nodes if n.id == fn.numa).cpu_ids()),
                "memoryBytes": model.memory_bytes(),
                "minorNumber": fn.gpu["index"],
                "architecture": model.architecture,
                "computeCapability": [int(v) for v in model.compute_capability.split(".")] if model.compute_capability else None,
                "migCapable": bool(model.mig_profiles),
                "migProfiles": mig_profiles(model),
                "migDevices": [
                    {"name": f"{model.model} MIG {p}", "memoryBytes": mig_memory_bytes(p), "profile": p, "placementStart": start}
                    for p, start in zip(model.mig_devices, mig_layout(model) or [], strict=True)
                ],
            }
        )
    return {"profile": plan.profile.name, "driverVersion": nvml.DRIVER_VERSION, "cudaDriverVersion": nvml.CUDA_DRIVER_VERSION, "gpus": gpus}


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered node per shipped profile with GPUs, and one with MIG devices."""
    root = tmp_path_factory.mktemp("nvml-nodes")
    profiles = [p for p in map(load_node_profile, sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))) if p.gpus]
    for profile in [*profiles, mig_profile()]:
        out = root / profile.name
        plan = plan_node(profile, "node-1", SEED)
        nvml.write_node(plan, out)
        (out / "expect.json").write_text(json.dumps(expectation(plan), indent=2))
    return root


@pytest.mark.requirement("HW-10")
def test_go_nvml_sees_every_gpu_of_every_profile_and_its_faults(nodes: Path) -> None:
    env = dict(os.environ, DRALAB_NVML_NODES=str(nodes), CGO_ENABLED="1")
    env.pop("DRALAB_NVML_ROOT", None)
    run = subprocess.run(
        ["nice", "go", "test", "-count=1", "-v", "./internal/gonvml"], cwd=GO_MODULE, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SKIP" not in run.stdout, run.stdout
    print(run.stdout)  # the figures per profile (GPUs seen, init and enumeration time, event latency), shown with -s
