"""`dralab status` of a kind lab: its engine, its node containers (a dead one with Docker's status
and its log's tail), its nodes; exit 3 when any part is down."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import clusters.provision
from clusters.config import ClusterConfig
from clusters.kind import engine
from clusters.kind.cluster import KindCluster
from dralab.cli import main

CONTAINERS = {"dralab-k-control-plane": ("running", "Up 3 minutes"), "dralab-k-worker": ("exited", "Exited (137) 12 seconds ago")}


@pytest.fixture
def kind_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    state = tmp_path / "kind" / "k" / "cluster.json"
    state.parent.mkdir(parents=True)
    state.write_text(ClusterConfig(name="k", nodes=1).model_dump_json())
    monkeypatch.setattr(clusters.provision, "provision", lambda offline: None)
    monkeypatch.setattr(engine, "engine_running", lambda: True)
    monkeypatch.setattr(engine, "started_by_dralab", lambda: None)
    monkeypatch.setattr(engine, "docker", lambda: "echo")  # `docker logs` answers with its arguments
    monkeypatch.setattr(KindCluster, "containers", lambda self: CONTAINERS)


def test_a_dead_node_container_is_shown_with_its_status_and_logs_and_exits_3(kind_lab) -> None:
    result = CliRunner().invoke(main, ["status"])
    assert result.exit_code == 3, result.output
    assert "kind lab k" in result.output and "Docker engine (not dralab" in result.output
    assert "running container dralab-k-control-plane" in result.output
    assert "dead    container dralab-k-worker (Exited (137) 12 seconds ago)" in result.output
    assert "logs --tail 8 dralab-k-worker" in result.output
    assert "API server unreachable" in result.output  # no kubeconfig: the nodes cannot be listed


def test_with_no_engine_the_kind_lab_is_down(kind_lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "engine_running", lambda: False)
    result = CliRunner().invoke(main, ["status", "--name", "k"])
    assert result.exit_code == 3 and "dead    Docker engine" in result.output


def test_the_lab_diagnosis_names_a_dead_node_container_with_its_logs(kind_lab, tmp_path: Path) -> None:
    from clusters.kind.cluster import load

    cluster = load("k")
    assert cluster is not None
    (problem,) = cluster.dead_parts()
    assert problem.startswith("kind node container dralab-k-worker is Exited (137) 12 seconds ago")
    assert "logs --tail 8 dralab-k-worker" in problem
