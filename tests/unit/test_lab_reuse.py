"""--reuse-labs uses a live lab only when it was started with the very configuration asked for:
a lab of that name started otherwise (other gates, hardware) is not it."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.config import ClusterConfig, state_file
from clusters.local import cluster as local_cluster
from clusters.local.cluster import LocalCluster
from basics.errors import LabBroken

WANTED = ClusterConfig(name="self", nodes=2, feature_gates={"DRADeviceMetadata": True}, hardware={"node-1": "dgx-like"})


@pytest.fixture
def saved(tmp_path: Path, monkeypatch) -> callable:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    monkeypatch.setattr(local_cluster, "provision", lambda offline, kubernetes_version: None)

    def save(cfg: ClusterConfig) -> None:
        state_file(cfg.name).parent.mkdir(parents=True, exist_ok=True)
        state_file(cfg.name).write_text(cfg.model_dump_json())

    return save


def test_no_lab_of_that_name_is_not_reused(saved) -> None:
    assert LocalCluster.running(WANTED) is None


def test_a_lab_started_with_other_gates_is_not_reused(saved) -> None:
    saved(WANTED.model_copy(update={"feature_gates": {"DRADeviceMetadata": False}, "slot": 3}))
    assert LocalCluster.running(WANTED) is None


def test_the_same_configuration_in_the_slot_it_got_is_reused_when_healthy(saved, monkeypatch) -> None:
    saved(WANTED.model_copy(update={"slot": 3}))
    monkeypatch.setattr(LocalCluster, "wait_ready", lambda self, timeout: None)
    found = LocalCluster.running(WANTED)
    assert found is not None and found.cfg.slot == 3


def test_the_same_configuration_with_a_dead_component_is_not_reused(saved, monkeypatch) -> None:
    saved(WANTED.model_copy(update={"slot": 3}))

    def dead(self, timeout: float) -> None:
        raise LabBroken("lab component kubelet-node-1 has died")

    monkeypatch.setattr(LocalCluster, "wait_ready", dead)
    assert LocalCluster.running(WANTED) is None
