"""The public-driver matrix from certification reports: cells, findings of public drivers only,
changes against the previous run flagged with both reports, history kept; split over CI jobs
(--plan, --cell, merge) it writes the same matrix; a cell outside the versions its driver's
project supports is SKIP. Certification itself (SuiteRun) is played by the tests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from dralab.cli import main
from drivers_under_test import candidates
from drivers_under_test.profile import DriverProfile, KubernetesVersions, load_profile
from reports import matrix
from reports.report import CERTIFIED, INCOMPLETE

KP07 = (
    "after the node reboot the claim of pod t/restart was prepared again, but its CDI devices resolve to no "
    "spec, so container main cannot start: failed to create containerd container: CDI device injection failed: "
    "unresolvable CDI devices gpu.example.com/gpu=gpu-0\nsecond line"
)


UNSHIPPED = {"example.com/refused-driver": {"what": "a refused one", "asked": "latest", "answer": "refused: 403 Forbidden"}}


@pytest.fixture(autouse=True)
def proxy_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Go module proxy's answers for the drivers not shipped (a matrix asks at every run)."""
    monkeypatch.setattr(candidates, "probed", lambda: UNSHIPPED)


def test_the_matrix_lists_what_the_proxy_answered_for_each_driver_not_shipped(monkeypatch, tmp_path: Path) -> None:
    from basics.errors import LabBroken
    from clusters.provision import gobuild

    def download(module: str, version: str) -> dict:
        if module == "github.com/google/dra-driver-tpu":
            return {"Version": "v0.1.0", "Dir": "/x"}
        raise LabBroken(f"cannot download {module}@{version}: reading https://proxy.golang.org/...: 403 Forbidden")

    monkeypatch.setattr(gobuild, "download", download)
    answers = {c.module: candidates.probe(c) for c in candidates.candidates()}
    assert answers["github.com/google/dra-driver-tpu"] == "served: v0.1.0; a profile can build it now"
    assert answers["github.com/k8snetworkplumbingwg/dra-driver-sriov"].startswith("refused: reading https://proxy")
    page = matrix.write(tmp_path, [], [], "s", 1.0, unshipped=UNSHIPPED) and (tmp_path / "matrix.html").read_text()
    assert "example.com/refused-driver</b> (a refused one), latest: refused: 403 Forbidden" in page
    assert json.loads((tmp_path / "matrix.json").read_text())["unshipped"] == UNSHIPPED


def report(outcome: str, **verdicts: str) -> dict:
    return {
        "summary": {"outcome": outcome},
        "requirements": [
            {"id": i.replace("_", "-"), "verdict": v, "tests": [{"verdict": v, "message": KP07 if v == "FAIL" else ""}]}
            for i, v in verdicts.items()
        ],
    }


def cell(name: str, public: bool, rep: dict, path: str) -> matrix.Cell:
    profile = SimpleNamespace(name=name, module=object() if public else None)
    return matrix.cell_of(profile, "v1.37.1", rep, path, 12.0)  # type: ignore[arg-type]  # a SimpleNamespace stands in for the DriverProfile


def test_only_a_public_drivers_fails_are_findings_with_the_first_lines() -> None:
    failing = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    public = cell("dra-example-driver", True, failing, "runs/a/report.html")
    assert [f.id for f in matrix.findings(public, failing)] == ["KP-07"]
    assert matrix.findings(public, failing)[0].message == KP07
    assert matrix.findings(cell("gpu", False, failing, "runs/a/g.html"), failing) == []


def test_the_clusters_fails_are_no_public_drivers_findings() -> None:
    failing = report("CERTIFIED", DEP_01="PASS", ST_09="FAIL")
    failing["requirements"][1]["section"] = "cluster"  # the API server's own refusal, on every driver's cell
    assert matrix.findings(cell("dranet", True, failing, "runs/a/report.html"), failing) == []


def test_a_finding_carries_the_cause_its_profile_read_in_the_drivers_code(tmp_path) -> None:
    failing = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    public = cell("dra-example-driver", True, failing, "runs/a/report.html")
    (found,) = matrix.findings(public, failing, {"KP-07": "pkg/driver/state.go:42 restores without the CDI spec"})
    assert found.cause == "pkg/driver/state.go:42 restores without the CDI spec"
    matrix.write(tmp_path, [public], [found], "1", 1.0)
    assert "cause: pkg/driver/state.go:42" in (tmp_path / "matrix.html").read_text()


def test_a_changed_cell_is_flagged_with_both_reports_and_the_history_grows(tmp_path: Path) -> None:
    first = [
        cell("dra-example-driver", True, report("CERTIFIED", DEP_01="PASS", KP_07="PASS"), "runs/1/report.html"),
        cell("gpu", False, report("CERTIFIED", DEP_01="PASS"), "runs/1/gpu.html"),
    ]
    data = matrix.write(tmp_path, first, [], "1", 10.0)
    assert not any(c["changed"] for c in data["cells"])

    again = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    second = [
        cell("dra-example-driver", True, again, "runs/2/report.html"),
        cell("gpu", False, report("CERTIFIED", DEP_01="PASS"), "runs/2/gpu.html"),
    ]
    data = matrix.write(tmp_path, second, matrix.findings(second[0], again), "2", 10.0)
    example, gpu = data["cells"]
    assert example["changed"] == {"KP-07": ["PASS", "FAIL"], "outcome": ["CERTIFIED", "NOT CERTIFIED"]}
    assert example["previous_report"] == "runs/1/report.html" and gpu["changed"] == {}
    assert len(json.loads((tmp_path / "history.json").read_text())) == 2
    page = (tmp_path / "matrix.html").read_text()
    assert "href='runs/1/report.html'>before" in page and "href='runs/2/report.html'>NOT CERTIFIED" in page
    assert "FAIL KP-07" in page and "unresolvable CDI devices gpu.example.com/gpu=gpu-0" in page


def test_with_qualify_each_version_is_qualified_once_before_its_cells_and_the_page_names_it(tmp_path: Path, monkeypatch) -> None:
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
    cells, _ = matrix.run(matrix.planned(profiles, ["v1.36.3", "v1.37.1"]), tmp_path, "s", None, qualifications)
    assert qualified == ["v1.36.3", "v1.37.1"] and len(cells) == 4
    page = matrix.write(tmp_path, cells, [], "s", 1.0, qualifications) and (tmp_path / "matrix.html").read_text()
    assert "<b>v1.36.3</b>: QUALIFIED v1.36.3" in page


NET_FROM_V1_36 = KubernetesVersions(min="v1.36", source="its README (Kubernetes 1.36+)")


class Played(SimpleNamespace):
    reports: dict[str, dict]  # cell key -> its report (default: CERTIFIED)
    ran: list[str]  # the cells certified


@pytest.fixture
def certify(monkeypatch) -> Played:
    """SuiteRun played: a cell's report is certify.reports[cell key], its report.html written where
    the run's goes (holding the cell's key)."""
    played = Played(reports={}, ran=[])

    class Run:
        def __init__(self, out_dir: Path, *args: object, drivers: list[DriverProfile], kubernetes_version: str, **kw: object) -> None:
            self.out_dir, self.key = out_dir, matrix.key(drivers[0].name, kubernetes_version)
            played.ran.append(self.key)

        def pytest(self) -> int:
            return 0

        def report(self, *args: object) -> dict:
            self.out_dir.mkdir(parents=True)
            (self.out_dir / "report.html").write_text(self.key)
            return played.reports.get(self.key) or report(CERTIFIED, DEP_01="PASS")

    monkeypatch.setattr(matrix, "SuiteRun", Run)
    return played


@pytest.fixture
def net_from_v1_36(monkeypatch) -> None:
    """The net profile as if its project supported Kubernetes 1.36 and later only."""
    shipped = matrix.load_profile
    monkeypatch.setattr(
        matrix,
        "load_profile",
        lambda name: shipped(name).model_copy(update={"kubernetes_versions": NET_FROM_V1_36} if name == "net" else {}),
    )


def dralab(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def plan(*args: str) -> object:
    result = CliRunner().invoke(main, ["matrix", "--plan", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_plan_is_every_cell_a_matrix_run_would_certify_as_github_and_gitlab_take_it() -> None:
    selected = ("--driver", "gpu", "--driver", "net", "--kubernetes-version", "v1.36.3", "--kubernetes-version", "v1.37.1", "--only", "DEP")
    assert plan(*selected) == {
        "include": [{"cell": f"{d}@{v}", "driver": d, "kubernetes_version": v} for v in ("v1.36.3", "v1.37.1") for d in ("gpu", "net")]
    }
    assert plan(*selected, "--plan-format", "gitlab") == [
        {"KUBERNETES_VERSION": [v], "CELL": [f"gpu@{v}", f"net@{v}"]} for v in ("v1.36.3", "v1.37.1")
    ]
    every = plan()
    assert isinstance(every, dict)
    assert len(every["include"]) == len(matrix.shipped_profiles()) * len(matrix.versions.KUBERNETES_VERSIONS)


def test_the_plan_leaves_out_cells_that_would_skip_and_refuses_an_empty_or_oversized_one(net_from_v1_36, monkeypatch) -> None:
    cells = plan(
        "--driver",
        "gpu",
        "--driver",
        "net",
        "--kubernetes-version",
        "v1.35.4",
        "--kubernetes-version",
        "v1.36.3",
        "--plan-format",
        "gitlab",
    )
    assert cells == [
        {"KUBERNETES_VERSION": ["v1.35.4"], "CELL": ["gpu@v1.35.4"]},
        {"KUBERNETES_VERSION": ["v1.36.3"], "CELL": ["gpu@v1.36.3", "net@v1.36.3"]},
    ]
    code, said = dralab("matrix", "--plan", "--driver", "net", "--kubernetes-version", "v1.35.4")
    assert code == 2 and "no cell to run" in said and "net supports Kubernetes >= v1.36 per its README" in said
    monkeypatch.setitem(matrix.PLAN_LIMITS, "gitlab", 1)
    code, said = dralab("matrix", "--plan", "--plan-format", "gitlab", "--driver", "gpu")
    assert code == 2 and "3 cells, and one gitlab matrix makes at most 1 jobs" in said


def test_a_version_outside_the_drivers_own_range_is_a_skip_cell_with_the_reason_and_no_run(certify, net_from_v1_36, tmp_path: Path) -> None:
    code, said = dralab("matrix", "--driver", "gpu", "--driver", "net", "--kubernetes-version", "v1.35.4", "--out", tmp_path)
    assert code == 0, said
    data = json.loads((tmp_path / "matrix.json").read_text())
    skipped = next(c for c in data["cells"] if c["driver"] == "net")
    assert skipped["outcome"] == "SKIP" and skipped["report"] == "" and skipped["verdicts"] == {}
    assert skipped["reason"] == "net supports Kubernetes >= v1.36 per its README (Kubernetes 1.36+)"
    assert "SKIP<br><small>net supports Kubernetes &gt;= v1.36" in (tmp_path / "matrix.html").read_text()
    assert "1 SKIP" in said and certify.ran == ["gpu@v1.35.4"]


def test_the_supported_range_takes_minor_or_patch_bounds_and_refuses_none_or_reversed() -> None:
    both = KubernetesVersions(min="v1.35.5", max="v1.36", source="s")
    assert [both.supports(v) for v in ("v1.35.4", "v1.35.5", "v1.36.3", "v1.37.1")] == [False, True, True, False]
    assert str(both) == "v1.35.5 to v1.36" and str(KubernetesVersions(max="v1.36", source="s")) == "<= v1.36"
    for wrong in ({"source": "s"}, {"min": "v1.37", "max": "v1.36", "source": "s"}, {"min": "1.36", "source": "s"}, {"min": "v1.36"}):
        with pytest.raises(ValueError):
            KubernetesVersions.model_validate(wrong)
    gpu = load_profile("gpu")
    assert gpu.unsupported_kubernetes("v1.35.4") is None


def test_a_cell_record_round_trips(certify, tmp_path: Path) -> None:
    certify.reports["dra-example-driver@v1.37.1"] = report("NOT CERTIFIED", DEP_01="PASS", KP_07="FAIL")
    code, said = dralab("matrix", "--cell", "dra-example-driver@v1.37.1", "--out", tmp_path, "--only", "DEP,KP")
    assert code == 0, said
    record = matrix.read_record(tmp_path)
    (cell,) = record.cells
    assert (cell.key, cell.outcome, cell.public) == ("dra-example-driver@v1.37.1", "NOT CERTIFIED", True)
    assert (tmp_path / cell.report).read_text() == cell.key and [f.id for f in record.findings] == ["KP-07"]
    assert not (tmp_path / "matrix.json").exists()
    again = tmp_path / "again"
    again.mkdir()
    matrix.write_record(again, record)
    assert matrix.read_record(again) == record


def cell_dirs(root: Path, *cells: str) -> list[Path]:
    """Each cell run by `dralab matrix --cell` into a directory of its own, as CI jobs' artifacts are."""
    for cell in cells:
        code, said = dralab("matrix", "--cell", cell, "--out", root / cell)
        assert code == 0, said
    return [root / cell for cell in cells]


def nightly(monkeypatch, day: int, root: Path, *cells: str) -> list[Path]:
    """cell_dirs of a nightly run on `day` (its runs named after it, as another night's are)."""
    gmtime = time.gmtime
    with monkeypatch.context() as m:
        m.setattr(time, "gmtime", lambda *_: gmtime(day * 86400))
        return cell_dirs(root, *cells)


def test_merge_joins_the_cells_as_one_run_with_reports_copied_history_and_change_flags(certify, monkeypatch, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    code, said = dralab(
        "matrix",
        "merge",
        *nightly(monkeypatch, 1, tmp_path / "1", "gpu@v1.37.1", "net@v1.37.1"),
        "--out",
        out,
        "--kubernetes-version",
        "v1.37.1",
        "--driver",
        "gpu",
        "--driver",
        "net",
    )
    assert code == 0, said
    data = json.loads((out / "matrix.json").read_text())
    assert [(c["driver"], c["outcome"]) for c in data["cells"]] == [("gpu", CERTIFIED), ("net", CERTIFIED)]
    assert all((out / c["report"]).read_text() == matrix.key(c["driver"], c["version"]) for c in data["cells"])
    assert not any(c["changed"] for c in data["cells"]) and "changed since the last run: none" in said

    certify.reports["net@v1.37.1"] = report("NOT CERTIFIED", DEP_01="FAIL")
    code, said = dralab(
        "matrix",
        "merge",
        *nightly(monkeypatch, 2, tmp_path / "2", "gpu@v1.37.1", "net@v1.37.1"),
        "--out",
        out,
        "--kubernetes-version",
        "v1.37.1",
        "--driver",
        "gpu",
        "--driver",
        "net",
    )
    assert code == 0, said
    gpu, net = json.loads((out / "matrix.json").read_text())["cells"]
    assert gpu["changed"] == {} and net["changed"] == {"DEP-01": ["PASS", "FAIL"], "outcome": [CERTIFIED, "NOT CERTIFIED"]}
    assert (out / net["previous_report"]).is_file() and net["previous_report"] != net["report"]
    assert len(json.loads((out / "history.json").read_text())) == 2
    assert "changed since the last run: net@v1.37.1" in said


def test_merge_shows_an_unsupported_cell_as_skip_and_one_no_job_recorded_as_incomplete(certify, net_from_v1_36, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    dirs = cell_dirs(tmp_path, "gpu@v1.35.4")
    code, said = dralab(
        "matrix",
        "merge",
        *dirs,
        "--out",
        out,
        "--driver",
        "gpu",
        "--driver",
        "net",
        "--kubernetes-version",
        "v1.35.4",
        "--kubernetes-version",
        "v1.36.3",
    )
    assert code == 3, said
    cells = {(c["driver"], c["version"]): c for c in json.loads((out / "matrix.json").read_text())["cells"]}
    assert cells["gpu", "v1.35.4"]["outcome"] == CERTIFIED
    assert (cells["net", "v1.35.4"]["outcome"], cells["net", "v1.35.4"]["reason"]) == (
        "SKIP",
        "net supports Kubernetes >= v1.36 per its README (Kubernetes 1.36+)",
    )
    assert all(cells[d, "v1.36.3"]["outcome"] == INCOMPLETE and cells[d, "v1.36.3"]["reason"] == matrix.UNRECORDED for d in ("gpu", "net"))


def test_bad_cells_and_merge_inputs_exit_2_naming_the_input_before_any_lab(certify, tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cell.json").write_text("{}")
    twice = cell_dirs(tmp_path, "gpu@v1.37.1")[0]
    cases = {
        ("matrix", "--cell", "gpu"): "--cell 'gpu': expected DRIVER@VERSION",
        ("matrix", "--cell", "gpu@"): "--cell 'gpu@': expected DRIVER@VERSION",
        ("matrix", "--cell", "tpu@v1.37.1"): "--cell tpu@v1.37.1: tpu is not a shipped profile (these are: ",
        ("matrix", "--cell", "gpu@v1.30.0"): "--cell gpu@v1.30.0: Kubernetes v1.30.0 is not one dralab builds",
        ("matrix", "--cell", "gpu@v1.37.1", "--driver", "gpu"): "--cell names its driver and version",
        ("matrix", "--plan-format", "gitlab"): "--plan-format is for --plan",
        ("matrix", "--driver", "gpu", "merge", twice): "--driver before merge: give its options after it",
        ("matrix", "merge", tmp_path / "empty"): f"merge {tmp_path / 'empty'}: no cell.json there",
        ("matrix", "merge", tmp_path / "broken"): "is not the cell.json of `dralab matrix --cell`",
        ("matrix", "merge", twice, twice): "cell gpu@v1.37.1 is recorded twice",
    }
    for args, said in cases.items():
        code, output = dralab(*args, "--out", tmp_path / "out")
        assert code == 2 and said in output, (args, output)
    assert not (tmp_path / "out").exists() and certify.ran == ["gpu@v1.37.1"]  # cell_dirs' run only


def test_matrix_with_options_and_no_subcommand_still_runs_the_whole_matrix(certify, tmp_path: Path) -> None:
    code, said = dralab("matrix", "--driver", "gpu", "--kubernetes-version", "v1.37.1", "--out", tmp_path)
    assert code == 0, said
    (cell,) = json.loads((tmp_path / "matrix.json").read_text())["cells"]
    assert (cell["driver"], cell["outcome"]) == ("gpu", CERTIFIED) and (tmp_path / matrix.HISTORY).is_file()
