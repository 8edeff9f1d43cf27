"""What a failing check over the run's containers quotes of containerd: its lines against NRI
plugins since the run took the lab, node by node, and the closing of a plugin named in the message."""

from datetime import datetime, timezone
from pathlib import Path

from clusters.provider_registry import provider
from clusters.providers import Lab
from suites.framework import nri
from suites.framework.evidence import Evidence

TAKEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
BEFORE = 'time="2026-11-29T11:59:59.999999999Z" level=error msg="closing plugin 10-vf.dralab.dev, failed to handle RunPodSandbox request: context deadline exceeded"'
CLOSED = 'time="2026-11-29T12:24:28.837122052Z" level=error msg="closing plugin 10-vf.dralab.dev, failed to handle RunPodSandbox request: context deadline exceeded"'
STOP = 'time="2026-11-29T12:25:00Z" level=error msg="NRI sandbox stop notification failed" error="rpc error: move ens1f0-vf0 back"'
CNI = 'time="2026-11-29T12:26:00Z" level=error msg="RemovePodSandbox failed" error="plugin type=\\"bridge\\" failed (delete)"'
INFO = 'time="2026-11-29T12:27:00Z" level=info msg="synchronizing plugin 10-vf.dralab.dev"'


def _lab(tmp_path: Path, *lines: str) -> Lab:
    (tmp_path / "node-2").mkdir()
    (tmp_path / "node-2" / "node-2-containerd.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "node-2" / "node-2-kubelet.log").write_text(CLOSED + "\n")  # not containerd's
    return Lab(
        provider=provider("kubeconfig"), kubeconfig=Path("/dev/null"), kubectl=Path("/bin/true"), log_dir=tmp_path, nodes=[], taken=TAKEN
    )


def test_the_run_s_lines_against_nri_plugins_are_quoted_with_their_node(tmp_path: Path) -> None:
    lab = _lab(tmp_path, BEFORE, CLOSED, STOP, CNI, INFO)
    assert lab.nri_errors() == [f"node-2: {CLOSED}", f"node-2: {STOP}"]


def test_a_closed_plugin_is_named_in_the_message_and_its_line_in_the_evidence(tmp_path: Path) -> None:
    evidence = Evidence()
    words = nri.explain(_lab(tmp_path, CLOSED, STOP), evidence)
    assert "containerd closed an NRI plugin during the run" in words and "plugin_request_timeout" in words
    assert [label for label, _ in evidence.items] == ["containerd's errors about NRI plugins during the run"]
    assert "10-vf.dralab.dev" in evidence.items[0][1]


def test_a_failed_notification_alone_is_evidence_but_not_the_message(tmp_path: Path) -> None:
    evidence = Evidence()
    assert nri.explain(_lab(tmp_path, STOP), evidence) == ""
    assert "NRI sandbox stop notification failed" in evidence.items[0][1]


def test_nothing_is_added_when_containerd_said_nothing(tmp_path: Path) -> None:
    evidence = Evidence()
    assert nri.explain(_lab(tmp_path, BEFORE, CNI, INFO), evidence) == "" and evidence.items == []


def test_times_with_an_offset_count_and_an_unreadable_time_is_kept(tmp_path: Path) -> None:
    offset = STOP.replace("2026-11-29T12:25:00Z", "2026-11-29T12:30:00.5+01:00")  # 11:30 UTC: before the run
    odd = STOP.replace("2026-11-29T12:25:00Z", "yesterday")
    assert _lab(tmp_path, offset, odd).nri_errors() == [f"node-2: {odd}"]
