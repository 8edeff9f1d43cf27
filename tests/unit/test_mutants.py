"""`dralab mutants`: go-mutesting's mutants listed with stable ids, sampled by seed, each built from
a copy of the drivers module cached by its source, put into the drivers image in place of the
tree's programs, and judged killed / survived / equivalent / build-failed / incomplete, with
history across runs. Certification (SuiteRun) and the Go builds are played by the tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from basics.errors import BadInput, LabBroken
from clusters import provision
from clusters.provision import DRIVERS_BUILDS, drivers_built_in, ensure_go, gobuild, image_specs, other_drivers_builds
from dralab.cli import main
from reports import mutants as command
from reports.mutant_build import affected, applied, recipes
from reports.mutant_listing import DRIVERS_MODULE, GO_MUTESTING, MUTATED, Mutant, _mutants, listed, sampled
from reports.mutant_report import BUILD_FAILED, EQUIVALENT, INCOMPLETE, KILLED, SURVIVED, classified, equivalents, write
from reports.certify import NoResults
from reports.report import CERTIFIED, NOT_CERTIFIED

ORIGINAL = """package tiny

func Positive(xs []int) int {
	total := 0
	for _, x := range xs {
		if x > 0 {
			total += x
		}
	}
	return total
}
"""


def _report(outcome: str, **verdicts: str) -> dict:
    return {"summary": {"outcome": outcome}, "requirements": [{"id": i.replace("_", "-"), "verdict": v} for i, v in verdicts.items()]}


def _mutant(file: str = "dradriver/cdi.go", old: str = "x > 0", new: str = "x >= 0", original: str = ORIGINAL) -> Mutant:
    return _mutants(file, original, [original.replace(old, new)])[0]


def test_a_mutant_is_its_file_line_and_diff_with_an_id_that_stays_when_lines_elsewhere_move() -> None:
    mutant = _mutant()
    assert mutant.where == "dradriver/cdi.go:6" and mutant.id.startswith("dradriver/cdi.go@")
    assert "-\t\tif x > 0 {\n+\t\tif x >= 0 {\n" in mutant.diff
    moved = ORIGINAL.replace("package tiny\n", "package tiny\n\n// A comment far above.\n\n")
    again = _mutant(original=moved)
    assert again.id == mutant.id and again.line == mutant.line + 3


def test_the_same_change_amid_the_same_lines_twice_in_a_file_gets_two_ids() -> None:
    twice = ORIGINAL + ORIGINAL.replace("package tiny\n", "").replace("Positive", "Again")
    first, last = twice.replace("total += x", "total -= x", 1), "total -= x".join(twice.rsplit("total += x", 1))
    found = _mutants("f.go", twice, [first, last])
    assert found[1].id == found[0].id + "-2" and found[1].line > found[0].line


def test_a_budget_draws_that_many_mutants_the_same_for_the_same_seed() -> None:
    all_ = [Mutant(f"f.go@{i}", "f.go", i, "", "") for i in range(50)]
    first = sampled(all_, 7, seed=3)
    assert len(first) == 7 and first == sampled(all_, 7, seed=3) and first != sampled(all_, 7, seed=4)
    assert sampled(all_, None, seed=3) == all_ and sampled(all_, 99, seed=3) == all_


def test_go_mutesting_lists_the_mutants_of_a_tiny_module(tmp_path: Path) -> None:
    try:
        tool = ensure_go(GO_MUTESTING, offline=True) / "go-mutesting"
    except BadInput:
        pytest.skip("go-mutesting is not built: `make mutants-list` builds it (from the Go module proxy) and lists the mutants")
    (tmp_path / "go.mod").write_text("module example.com/tiny\n\ngo 1.26\n")
    (tmp_path / "tiny.go").write_text(ORIGINAL)
    found = listed(tool, tmp_path, ["tiny.go"])
    assert found and len({m.id for m in found}) == len(found)
    assert any("+\t\tif x >= 0 {" in m.diff for m in found)  # expression/comparison
    assert all(m.file == "tiny.go" and m.source != ORIGINAL for m in found)
    assert (tmp_path / "tiny.go").read_text() == ORIGINAL, "the module listed is never changed"


def test_every_mutated_file_is_in_the_drivers_module() -> None:
    assert all((DRIVERS_MODULE / f).is_file() for f in MUTATED)


KNOWN = {"dradriver/cdi.go@eq": "the variant's branch: the reference never takes it"}


def test_a_mutant_is_killed_by_the_ids_that_failed_on_any_of_its_profiles() -> None:
    m = _mutant()
    outcome = classified(m, {"gpu": _report(NOT_CERTIFIED, KP_01="PASS", MD_01="FAIL"), "net": _report(NOT_CERTIFIED, KP_05="FAIL")}, {})
    assert outcome.status == KILLED and outcome.killed_by == ["KP-05", "MD-01"]


def test_a_mutant_certified_survives_unless_declared_equivalent_with_its_reason() -> None:
    certified = {"gpu": _report(CERTIFIED, KP_01="PASS", ST_07="WARNING")}
    assert classified(_mutant(), certified, KNOWN).status == SURVIVED
    equivalent = Mutant("dradriver/cdi.go@eq", "dradriver/cdi.go", 1, "", "")
    outcome = classified(equivalent, certified, KNOWN)
    assert outcome.status == EQUIVALENT and outcome.reason == KNOWN[equivalent.id]
    killed = classified(equivalent, {"gpu": _report(NOT_CERTIFIED, KP_01="FAIL")}, KNOWN)
    assert killed.status == KILLED and "yet killed: remove its entry" in killed.reason


def test_a_mutant_that_does_not_build_or_whose_lab_broke_is_neither_killed_nor_survived() -> None:
    assert classified(_mutant(), {}, {}, build_error="declared and not used: x").status == BUILD_FAILED
    broken = classified(_mutant(), {"gpu": _report(INCOMPLETE, KP_01="ERROR")}, {})
    assert broken.status == INCOMPLETE and "KP-01 ERROR" in broken.reason
    assert classified(_mutant(), {"gpu": None}, {}).status == INCOMPLETE
    assert classified(_mutant(), {}, {}).reason == "nothing certified"


def test_equivalents_are_read_from_yaml_and_the_shipped_file_parses(tmp_path: Path) -> None:
    (tmp_path / "eq.yaml").write_text("'dradriver/cdi.go@eq': the variant's branch\n")
    assert equivalents(tmp_path / "eq.yaml") == {"dradriver/cdi.go@eq": "the variant's branch"}
    assert isinstance(equivalents(command.EQUIVALENTS), dict)


def test_history_grows_and_a_mutant_is_compared_with_the_last_run_that_drew_it(tmp_path: Path) -> None:
    m, other = _mutant(), _mutant(old="total += x", new="total -= x")
    survived = classified(m, {"gpu": _report(CERTIFIED, KP_01="PASS")}, {})
    write(tmp_path, [survived], 300, "run-1", 10.0, seed=1)
    write(tmp_path, [classified(other, {}, {}, build_error="no")], 300, "run-2", 1.0, seed=2)  # m not drawn
    data = write(tmp_path, [classified(m, {"gpu": _report(NOT_CERTIFIED, KP_01="FAIL")}, {})], 300, "run-3", 10.0, seed=3)
    history = json.loads((tmp_path / "history.json").read_text())
    assert [h["started"] for h in history] == ["run-1", "run-2", "run-3"]
    assert data["mutants"][0]["previous"] == SURVIVED and data["summary"]["score"] == 1.0
    assert history[0]["summary"]["score"] == 0.0 and history[1]["summary"]["score"] is None
    page = (tmp_path / "mutants.html").read_text()
    assert "(was survived)" in page and "KP-01" in page and "run-1" in page


def test_a_mutants_build_key_changes_with_its_source_and_the_tree_is_untouched(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "go_version", lambda: "go1.26.8")
    tree = (DRIVERS_MODULE / "dradriver/cdi.go").read_text()
    one = _mutant(old="return nil\n}\n", new="return os.ErrClosed\n}\n", original=tree)
    two = _mutant(old="!os.IsNotExist(err)", new="true", original=tree)

    def keys(m: Mutant, root: Path) -> list[str]:
        return [r.key() for r in recipes(applied(m, DRIVERS_MODULE, root), ["gpu-dra-driver", "vf-dra-driver"])]

    first = keys(one, tmp_path / "one")
    assert len(first) == 2, "the cgo program and the other are built as in the tree, by two recipes"
    assert keys(two, tmp_path / "two") != first and keys(one, tmp_path / "again") == first
    assert (tmp_path / "one/drivers_under_test/dradriver/cdi.go").read_text() == one.source
    assert (DRIVERS_MODULE / "dradriver/cdi.go").read_text() == tree
    assert [r.binaries for r in recipes(tmp_path / "one", ["fake-gpu-plugin"])] == [
        {"fake-gpu-plugin": "drivers_under_test/cmd/fake-gpu-plugin"}
    ]


def test_a_mutated_file_goes_into_the_programs_whose_packages_hold_it() -> None:
    programs = {"gpu-dra-driver": {"dradriver", "cmd/gpu-dra-driver"}, "fake-gpu-plugin": {"deviceplugin", "cmd/fake-gpu-plugin"}}
    assert affected(_mutant("dradriver/cdi.go"), programs) == ["gpu-dra-driver"]
    assert affected(_mutant("cmd/fake-gpu-plugin/plugin.go"), programs) == ["fake-gpu-plugin"]


def _files(tmp_path: Path, names: list[str]) -> Path:
    tmp_path.mkdir(parents=True)
    for name in names:
        (tmp_path / name).write_text(name)
    return tmp_path


def test_the_drivers_image_carries_another_builds_programs_in_place_of_the_trees_and_is_tagged_apart(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(provision, "static_tools", lambda tools: ({}, {}))
    monkeypatch.setattr(provision, "c_library_files", lambda binaries: {})
    built = _files(
        tmp_path / "drivers-under-test-local-aaa", ["vf-dra-driver", "fake-gpu-plugin", "dp-probe", "dra-probe", "incluster-whoami"]
    )
    cgo = _files(tmp_path / "drivers-under-test-cgo-local-bbb", ["gpu-dra-driver"])
    mutant = _files(tmp_path / "mutant-drivers-under-test-local-ccc", ["vf-dra-driver"])
    tree = image_specs(tmp_path / "pause", built, cgo)[-1]
    other = image_specs(tmp_path / "pause", built, cgo, [mutant])[-1]
    assert tree.ref.endswith(":aaa") and other.ref != tree.ref
    assert other.files["/usr/local/bin/vf-dra-driver"] == mutant / "vf-dra-driver"
    assert (
        other.files["/usr/local/bin/dp-probe"] == built / "dp-probe"
        and other.files["/usr/local/bin/gpu-dra-driver"] == cgo / "gpu-dra-driver"
    )


def test_the_other_builds_hold_while_within_and_the_environment_is_restored_after(monkeypatch) -> None:
    monkeypatch.delenv(DRIVERS_BUILDS, raising=False)
    with drivers_built_in([Path("/c/a"), Path("/c/b")]):
        assert other_drivers_builds() == (Path("/c/a"), Path("/c/b")) and os.environ[DRIVERS_BUILDS] == "/c/a:/c/b"
    assert other_drivers_builds() == () and DRIVERS_BUILDS not in os.environ


@pytest.fixture
def played(monkeypatch, tmp_path: Path) -> dict:
    """Builds, certification, the image's removal and the labs' played: a mutant of a file in
    `failing` FAILs KP-01, one whose file is `unbuildable` does not build, one in `no_results` has none."""
    state: dict = {"runs": [], "removed": [], "dropped": 0, "failing": set(), "unbuildable": set(), "no_results": set()}

    def built(mutant: Mutant, module: Path, programs: list[str], work: Path) -> list[Path]:
        if mutant.file in state["unbuildable"]:
            raise LabBroken("building vf-dra-driver failed: declared and not used: x")
        return [tmp_path / f"mutant-build-{mutant.id[-4:]}"]

    class Run:
        def __init__(self, out_dir: Path, paths: list[str], ids: list[str], **kw: object) -> None:
            self.out_dir, self.ids, self.kw = out_dir, ids, kw
            self.mutant = next(m for m in state["mutants"] if m.id.replace("/", "-") in str(out_dir))

        def pytest(self) -> int:
            state["runs"].append(
                (self.mutant.id, self.kw["drivers"][0].name, os.environ.get(DRIVERS_BUILDS), self.kw["reuse_labs"], self.ids)
            )  # type: ignore[index]  # a profile list
            return 0

        def report(self, *args: object) -> dict:
            if self.mutant.file in state["no_results"]:
                raise NoResults("the suites produced no results")
            return _report(NOT_CERTIFIED, KP_01="FAIL") if self.mutant.file in state["failing"] else _report(CERTIFIED, KP_01="PASS")

    monkeypatch.setattr(command, "built", built)
    monkeypatch.setattr(command, "SuiteRun", Run)
    monkeypatch.setattr(command, "remove_labs", state["removed"].append)
    monkeypatch.setattr(command, "drop_image", lambda: state.__setitem__("dropped", state["dropped"] + 1))
    monkeypatch.setattr(
        command, "programs_of", lambda module: {"gpu-dra-driver": {"dradriver"}, "vf-dra-driver": {"dradriver", "cmd/vf-dra-driver"}}
    )
    return state


def test_each_mutant_is_certified_on_each_profile_of_its_programs_with_its_build_in_the_image(played, tmp_path: Path) -> None:
    killed, survived, unbuilt = _mutant("dradriver/cdi.go"), _mutant("cmd/vf-dra-driver/driver.go"), _mutant("dradriver/status.go")
    nowhere = _mutant("internal/sysfs/sysfs.go")  # in no program of the played ones
    played.update(mutants=[killed, survived, unbuilt, nowhere], failing={"dradriver/cdi.go"}, unbuildable={"dradriver/status.go"})
    outcomes = command.run(played["mutants"], tmp_path, 1, {}, lab_prefix="t")
    assert [o.status for o in outcomes] == [KILLED, SURVIVED, BUILD_FAILED, INCOMPLETE]
    assert [(r[0], r[1]) for r in played["runs"]] == [(killed.id, "gpu"), (killed.id, "net"), (survived.id, "net")]
    assert all(r[2] == str(tmp_path / f"mutant-build-{r[0][-4:]}") and r[3] for r in played["runs"])
    assert "ST-09" not in played["runs"][0][4] and played["runs"][0][4][:2] == ["DEP", "KP-01"], (
        "the driver's requirements, not the cluster's"
    )
    assert DRIVERS_BUILDS not in os.environ and played["dropped"] == 2 and played["removed"] == ["t"]
    assert outcomes[0].reports == {
        "gpu": f"runs/{killed.id.replace('/', '-')}/gpu/report.html",
        "net": f"runs/{killed.id.replace('/', '-')}/net/report.html",
    }


def test_the_command_lists_the_drawn_mutants_and_runs_and_reports_the_others(played, monkeypatch, tmp_path: Path) -> None:
    found = [_mutant("dradriver/cdi.go"), _mutant("cmd/vf-dra-driver/driver.go", old="total := 0", new="total := 1")]
    played.update(mutants=found, failing={"dradriver/cdi.go"})
    monkeypatch.setattr(command, "mutants_of_the_drivers", lambda: found)
    listing = CliRunner().invoke(main, ["mutants", "--list", "--budget", "1", "--seed", "2"])
    assert listing.exit_code == 0 and "1 of 2 mutants" in listing.output and "+++ b/" in listing.output and not played["runs"]
    result = CliRunner().invoke(main, ["mutants", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output  # one survived
    data = json.loads((tmp_path / "out/mutants.json").read_text())
    assert data["summary"] | {"generated": 2, "run": 2, KILLED: 1, SURVIVED: 1} == data["summary"]


def test_a_mutant_with_no_results_is_incomplete_and_its_labs_go_before_the_next(played, tmp_path: Path) -> None:
    broke, next_one = _mutant("cmd/vf-dra-driver/driver.go"), _mutant("dradriver/cdi.go")
    played.update(mutants=[broke, next_one], no_results={"cmd/vf-dra-driver/driver.go"})
    outcomes = command.run(played["mutants"], tmp_path, 1, {}, lab_prefix="t")
    assert [o.status for o in outcomes] == [INCOMPLETE, SURVIVED] and "no results for net" in outcomes[0].reason
    assert outcomes[0].reports == {} and played["removed"] == ["t", "t"], "after the run without results, then at the end"
