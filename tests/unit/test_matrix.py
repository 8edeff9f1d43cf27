"""The public-driver matrix from certification reports: cells, findings of public drivers only,
changes against the previous run flagged with both reports, history kept."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from drivers_under_test.profile import load_profile
from reports import matrix
from reports.report import CERTIFIED

KP07 = ("after the node reboot the claim of pod t/restart was prepared again, but its CDI devices resolve to no "
        "spec, so container main cannot start: failed to create containerd container: CDI device injection failed: "
        "unresolvable CDI devices gpu.example.com/gpu=gpu-0\nsecond line")


def report(outcome: str, **verdicts: str) -> dict:
    return {"summary": {"outcome": outcome}, "requirements": [
        {"id": i.replace("_", "-"), "verdict": v, "tests": [{"verdict": v, "message": KP07 if v == "FAIL" else ""}]}
        for i, v in verdicts.items()]}


def cell(name: str, public: bool, rep: dict, path: str) -> matrix.Cell:
    profile = SimpleNamespace(name=name, module=object() if public else None)
    return matrix.cell_of(profile, "v1.37.1", rep, path, 12.0)  # type: ignore[arg-type]


def test_only_a_public_drivers_fails_are_findings_with_the_first_lines() -> None:
    failing = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    public = cell("dra-example-driver", True, failing, "runs/a/report.html")
    assert [f.id for f in matrix.findings(public, failing)] == ["KP-07"]
    assert matrix.findings(public, failing)[0].message == KP07
    assert matrix.findings(cell("gpu", False, failing, "runs/a/g.html"), failing) == []


def test_a_finding_carries_the_cause_its_profile_read_in_the_drivers_code(tmp_path) -> None:
    failing = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    public = cell("dra-example-driver", True, failing, "runs/a/report.html")
    (found,) = matrix.findings(public, failing, {"KP-07": "pkg/driver/state.go:42 restores without the CDI spec"})
    assert found.cause == "pkg/driver/state.go:42 restores without the CDI spec"
    matrix.write(tmp_path, [public], [found], "1", 1.0)
    assert "cause: pkg/driver/state.go:42" in (tmp_path / "matrix.html").read_text()


def test_a_changed_cell_is_flagged_with_both_reports_and_the_history_grows(tmp_path: Path) -> None:
    first = [cell("dra-example-driver", True, report("CERTIFIED", DEP_01="PASS", KP_07="PASS"), "runs/1/report.html"),
             cell("gpu", False, report("CERTIFIED", DEP_01="PASS"), "runs/1/gpu.html")]
    data = matrix.write(tmp_path, first, [], "1", 10.0)
    assert not any(c["changed"] for c in data["cells"])

    again = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    second = [cell("dra-example-driver", True, again, "runs/2/report.html"),
              cell("gpu", False, report("CERTIFIED", DEP_01="PASS"), "runs/2/gpu.html")]
    data = matrix.write(tmp_path, second, matrix.findings(second[0], again), "2", 10.0)
    example, gpu = data["cells"]
    assert example["changed"] == {"KP-07": ["PASS", "FAIL"], "outcome": ["CERTIFIED", "NOT CERTIFIED"]}
    assert example["previous_report"] == "runs/1/report.html" and gpu["changed"] == {}
    assert len(json.loads((tmp_path / "history.json").read_text())) == 2
    page = (tmp_path / "matrix.html").read_text()
    assert "href='runs/1/report.html'>before" in page and "href='runs/2/report.html'>NOT CERTIFIED" in page
    assert "FAIL KP-07" in page and "unresolvable CDI devices gpu.example.com/gpu=gpu-0" in page


def test_with_qualify_each_version_is_qualified_once_before_its_cells_and_the_page_names_it(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    qualified: list[str] = []
    monkeypatch.setattr(matrix, "qualify", lambda version, out: qualified.append(version) or f"QUALIFIED {version}")

    class Run:
        def __init__(self, out_dir: Path, *args: object, **kw: object) -> None:
            self.out_dir = out_dir

        def pytest(self) -> int:
            assert qualified, "a cell certified before its version was qualified"
            return 0

        def report(self, *args: object) -> dict:
            return report(CERTIFIED, **{"KP-01": "PASS"})

    monkeypatch.setattr(matrix, "SuiteRun", Run)
    profiles = [load_profile("gpu"), load_profile("net")]
    qualifications: dict[str, str] = {}
    cells, _ = matrix.run(profiles, ["v1.36.3", "v1.37.1"], tmp_path, "s", None, qualifications)
    assert qualified == ["v1.36.3", "v1.37.1"] and len(cells) == 4
    page = matrix.write(tmp_path, cells, [], "s", 1.0, qualifications) and (tmp_path / "matrix.html").read_text()
    assert "<b>v1.36.3</b>: QUALIFIED v1.36.3" in page
