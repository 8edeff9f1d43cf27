"""`dralab selfcheck` judges dralab's verdicts on variants: a broken variant must FAIL exactly what
it breaks, naming the violation; a valid one must be CERTIFIED (MUT-01, MUT-02)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dralab.cli import main
from basics.errors import BadInput
from reports.selfcheck import (
    BROKEN,
    VALID,
    Case,
    Observed,
    _lab_prefix,
    _suites_of,
    cases,
    chosen,
    judge,
    merged,
    render_html,
    shard_of,
    write,
)
from suites import catalogue
from suites.catalogue import Checks, Level


def _report(outcome: str, **verdicts: tuple[str, str]) -> dict:
    """A certification report with one test per requirement: ID -> (verdict, message)."""
    return {
        "summary": {"outcome": outcome},
        "requirements": [
            {"id": rid.replace("_", "-"), "verdict": v, "tests": [{"verdict": v, "message": message}]}
            for rid, (v, message) in verdicts.items()
        ],
    }


LEAVE = Case("leave-files", "gpu", BROKEN, ["MD-14"], [], {"MD-14": r"still there after unprepare"})


def test_a_broken_variant_matches_when_it_fails_what_it_breaks_naming_the_violation() -> None:
    report = _report("NOT CERTIFIED", DEP_01=("PASS", ""), MD_14=("FAIL", "metadata dir still there after unprepare: /x"))
    result = judge(LEAVE, report, 12.0, Path("r.html"))
    assert result.match and result.why == ""
    assert result.expected == {"MD-14": "FAIL"} and result.observed["MD-14"] == "FAIL"


@pytest.mark.parametrize(
    "verdicts,why",
    [
        ({"MD_14": ("PASS", "")}, "MD-14: PASS, expected FAIL"),
        ({"MD_14": ("FAIL", "the file had mode 0666")}, "without naming the violation"),
        ({"MD_14": ("ERROR", "lab broken: containerd died")}, "MD-14: ERROR, expected FAIL"),
        ({}, "MD-14: not run, expected FAIL"),
        ({"MD_14": ("FAIL", "still there after unprepare"), "DEP_01": ("FAIL", "crash")}, "DEP-01: FAIL"),
    ],
)
def test_a_broken_variant_mismatches_on_a_pass_another_message_an_error_or_an_extra_failure(verdicts, why: str) -> None:
    result = judge(LEAVE, _report("NOT CERTIFIED", **verdicts), 1.0, Path("r.html"))
    assert not result.match and why in result.why


def test_a_valid_variant_must_be_certified_and_may_only_warn() -> None:
    case = Case("slow-prepare", "gpu", VALID, [], ["ST-07"])
    ok = _report("CERTIFIED", MD_01=("PASS", ""), ST_07=("WARNING", "SHOULD not met: no Ready condition"))
    assert judge(case, ok, 1.0, Path("r.html")).match
    failed = judge(case, _report("NOT CERTIFIED", MD_01=("FAIL", "no file"), ST_07=("WARNING", "")), 1.0, Path("r"))
    assert not failed.match and "outcome: NOT CERTIFIED, expected CERTIFIED" in failed.why and "MD-01: FAIL" in failed.why


def test_every_shipped_variant_is_a_case_and_configurations_are_not() -> None:
    names = {c.name: c for c in cases()}
    assert "gpu:metadata-disabled" not in names  # a configuration MD-15 asks for, not a variant to judge
    assert names["gpu:leave-files"].kind == BROKEN and names["gpu:no-ready-condition"].kind == VALID
    assert all(c.breaks for c in names.values() if c.kind == BROKEN)


def test_only_picks_the_broken_variants_of_those_ids_and_the_valid_ones_they_apply_to() -> None:
    all_cases = [
        LEAVE,
        Case("wrong-path", "gpu", BROKEN, ["MD-01"]),
        Case("never-unhealthy", "fake-gpu-plugin", BROKEN, ["DP-03"]),
        Case("no-ready-condition", "gpu", VALID, [], ["ST-07"]),
    ]
    assert [c.variant for c in chosen(all_cases, "MD-14", ())] == ["leave-files", "no-ready-condition"]
    assert [c.variant for c in chosen(all_cases, "DP", ())] == ["never-unhealthy"]
    assert [c.variant for c in chosen(all_cases, None, ("gpu:wrong-path", "never-unhealthy"))] == ["wrong-path", "never-unhealthy"]


def test_a_valid_variant_runs_its_driver_requirements_and_a_broken_one_what_it_breaks() -> None:
    valid = Case("slow-prepare", "gpu", VALID)
    ids = _suites_of(valid, None).split(",")
    assert "MD-01" in ids and "ST-01" in ids and ids[0] == "DEP"
    assert not [i for i in ids if i.split("-")[0] in ("DA", "LAB", "HW") or i in ("ST-03", "ST-05")]  # not the driver's
    assert _suites_of(valid, "ST").split(",") == ["DEP"] + [i for i in ids if i.startswith("ST-")]
    assert _suites_of(LEAVE, None) == "MD-14"


def test_a_valid_variant_with_concerns_runs_those_of_its_driver_requirements_only() -> None:
    case = Case("status-first-device", "gpu", VALID, concerns=["ST", "MD-02", "DP-01"])
    ids = _suites_of(case, None).split(",")
    assert ids[0] == "DEP" and "MD-02" in ids and "ST-01" in ids
    assert "MD-01" not in ids and "DP-01" not in ids  # DP-01 is not the GPU DRA driver's
    assert "ST-03" not in ids  # the API server's own check, whatever the variant concerns
    assert _suites_of(case, "MD").split(",") == ["DEP", "MD-02"]
    assert chosen([case], "MD-02", ()) == [case] and chosen([case], "MD-01", ()) == []


def test_every_shipped_valid_variant_is_checked_on_some_requirement_of_its_driver() -> None:
    unchecked = [c.name for c in cases() if c.kind == VALID and _suites_of(c, None) == "DEP"]
    assert not unchecked, f"valid variants whose concerns name none of their driver's requirements: {unchecked}"


def test_a_seed_sweep_checks_every_valid_variant_of_a_dra_driver_on_the_generated_workloads_checks() -> None:
    attribute_domain = next(c for c in cases() if c.name == "gpu:attribute-domain")  # concerns MD only
    assert _suites_of(attribute_domain, None, sweep=True).split(",") == [
        "DEP",
        "KP-03",
        "KP-04",
        "KP-05",
        "KP-06",
        "KP-07",
        "MD-01",
        "MD-02",
        "MD-03",
        "MD-04",
        "MD-08",
        "MD-10",
        "MD-19",
        "ST-01",
        "ST-07",
        "ST-08",
    ]
    several_pools = next(c for c in cases() if c.name == "net:several-pools")  # a network driver's: MD-16, ST-02 too
    assert {"MD-16", "ST-02"} <= set(_suites_of(several_pools, None, sweep=True).split(","))
    assert _suites_of(several_pools, "ST-02,MD-16", sweep=True) == "DEP,MD-16,ST-02", "--only narrows a sweep"
    result = CliRunner().invoke(main, ["selfcheck", "--list", "--json", "--seeds", "10"])
    listing = json.loads(result.output)
    assert listing and {e["kind"] for e in listing} == {"valid"}
    assert {e["driver"] for e in listing} <= {"gpu", "net"}  # the DRA drivers: the generated workloads are theirs
    assert all(e["checked_on"][:2] == ["DEP", "KP-03"] for e in listing)
    assert [e["variant"] for e in listing[:2]] == ["reference", "reference"], "the reference drivers themselves first"


def test_a_warning_of_an_id_the_run_did_not_check_is_not_expected() -> None:
    case = Case("leave-socket", "gpu", VALID, [], ["KP-11"])
    report = _report("CERTIFIED", KP_03=("PASS", ""))
    assert judge(case, report, 1.0, Path("r"), checked=["DEP", "KP-03"]).match
    assert "KP-11: not run, expected WARNING" in judge(case, report, 1.0, Path("r"), checked=["DEP", "KP"]).why


def test_list_json_names_variant_driver_kind_and_breaks_without_starting_anything(tmp_path) -> None:
    result = CliRunner().invoke(main, ["selfcheck", "--list", "--json", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    assert {
        "variant": "leave-files",
        "driver": "gpu",
        "kind": "broken",
        "breaks": ["MD-14", "KP-06"],
        "checked_on": ["MD-14", "KP-06"],
    } in listing
    valid = next(e for e in listing if e["variant"] == "no-ready-condition" and e["driver"] == "gpu")
    assert valid["breaks"] == [] and valid["checked_on"][0] == "DEP" and "ST-07" in valid["checked_on"]
    assert {entry["kind"] for entry in listing} == {"valid", "broken"}
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,named", [(["--variant", "no-such"], "no-such"), (["--only", "QQ"], "QQ"), (["--json"], "--list")])
def test_bad_input_exits_2_naming_it(tmp_path, args: list[str], named: str) -> None:
    result = CliRunner().invoke(main, ["selfcheck", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and named in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_the_page_shows_each_variant_with_its_verdicts_and_a_link_to_its_report(tmp_path) -> None:
    result = judge(LEAVE, _report("NOT CERTIFIED", MD_14=("PASS", "")), 3.0, tmp_path / "variants/gpu-leave-files/report.html")
    from dataclasses import asdict

    page = render_html(
        {"summary": {"variants": 1, "matched": 0, "wall_seconds": 3.0, "valid": 0, "broken": 1}, "variants": [asdict(result)]}, tmp_path
    )
    assert "0 of 1 variants as expected" in page and "MISMATCH: MD-14: PASS, expected FAIL" in page
    assert "href='variants/gpu-leave-files/report.html'" in page


def test_every_broken_variant_names_the_violation_of_each_id_it_breaks() -> None:
    unnamed = [f"{c.name} {rid}" for c in cases() if c.kind == BROKEN for rid in c.breaks if rid not in c.violations]
    assert not unnamed, f"broken variants whose FAIL message is not matched (MUT-01): add `violations` for {unnamed}"


def test_every_driver_must_is_broken_by_a_variant_or_says_why_none_can() -> None:
    broken = {rid for c in cases() if c.kind == BROKEN for rid in c.breaks}
    musts = {rid: r for rid, r in catalogue.load().items() if r.checks is Checks.DRIVER and r.level is Level.MUST}
    missing = sorted(rid for rid, r in musts.items() if rid not in broken and not r.no_broken_variant)
    assert not missing, f"driver MUSTs no broken variant breaks (MUT-01): add one, or no_broken_variant: why: {missing}"
    stale = sorted(rid for rid, r in musts.items() if rid in broken and r.no_broken_variant)
    assert not stale, f"no_broken_variant on {stale}, which a variant breaks"


def test_a_lab_prefix_names_labs_or_is_refused_with_the_fix() -> None:
    assert _lab_prefix("sweep-a") == "sweep-a"
    for bad in ("Bad", "-x", "x_y", "a" * 17):
        with pytest.raises(BadInput, match="--lab-prefix .*say --lab-prefix self2"):
            _lab_prefix(bad)


def test_a_variant_only_the_generated_workloads_show_draws_the_seeds_its_profile_names() -> None:
    by_name = {c.name: c for c in cases()}
    assert by_name["gpu:third-claim-unanswered"].seeds == 2 and by_name["gpu:restore-first-device-only"].seeds == 2
    assert by_name["gpu:any-request"].seeds == 1, "a fixed scenario shows it: one seed"


def test_a_lab_that_broke_under_a_variant_is_removed_before_the_next(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reports import selfcheck

    reports = iter(
        [
            _report("INCOMPLETE", MD_14=("ERROR", "lab component node-1-kubelet is down")),
            _report("NOT CERTIFIED", MD_14=("FAIL", "still there after unprepare")),
            _report("NOT CERTIFIED", MD_14=("FAIL", "still there after unprepare")),
        ]
    )

    class FakeRun:
        def __init__(self, out_dir: Path, *args: object, **kwargs: object) -> None:
            self.out_dir = out_dir

        def pytest(self) -> int:
            return 1

        def report(self, *args: object) -> dict:
            return next(reports)

    removed: list[str] = []
    monkeypatch.setattr(selfcheck, "SuiteRun", FakeRun)
    monkeypatch.setattr(selfcheck, "remove_labs", removed.append)
    results = selfcheck.run([LEAVE, LEAVE, LEAVE], tmp_path, None, lab_prefix="t")
    assert [r.match for r in results] == [False, True, True]
    assert removed == ["t", "t"], "after the variant the lab broke under, then at the end; not after the others"


def _cases(n: int) -> list[Case]:
    return [Case(f"v{i:02}", "gpu", BROKEN, ["MD-14"], [], {"MD-14": "still there"}) for i in range(n)]


@pytest.mark.parametrize("n,parts", [(7, 3), (86, 3), (2, 4)])
def test_the_shards_of_a_selfcheck_take_every_variant_once_and_in_even_parts(n: int, parts: int) -> None:
    selected = _cases(n)
    taken = [shard_of(selected, (k, parts)) for k in range(1, parts + 1)]
    names = [c.name for part in taken for c in part]
    assert sorted(names) == sorted(c.name for c in selected) and len(names) == len(set(names))
    assert max(map(len, taken)) - min(map(len, taken)) <= 1
    # Every process of a split computes the same split, whatever order it listed the variants in.
    assert [c.name for c in shard_of(list(reversed(selected)), (1, parts))] == [c.name for c in reversed(taken[0])]


def _part(tmp_path: Path, name: str, results: list[Observed], wall: float) -> Path:
    out = tmp_path / name
    out.mkdir()
    write(results, out, wall)
    return out


def _observed(case: Case, tmp_path: Path, part: str, verdict: str = "FAIL") -> Observed:
    report = _report("NOT CERTIFIED", MD_14=(verdict, "metadata dir still there after unprepare: /x"))
    return judge(case, report, 5.0, tmp_path / part / "variants" / f"gpu-{case.variant}" / "report.html")


def test_merged_parts_give_every_wanted_variant_a_later_part_overriding_and_the_longest_wall(tmp_path: Path) -> None:
    a, b, c = _cases(3)
    one = _part(tmp_path, "one", [_observed(a, tmp_path, "one"), _observed(b, tmp_path, "one", "PASS")], 100.0)
    two = _part(tmp_path, "two", [_observed(b, tmp_path, "two"), _observed(c, tmp_path, "two")], 250.0)
    results, not_run, wall = merged((one, two), [a, b, c])
    assert [r.variant for r in results] == ["v00", "v01", "v02"] and not not_run and wall == 250.0
    assert all(r.match for r in results), "the re-run of v01 in the later part counts, not its earlier PASS"


def test_a_merge_of_a_directory_without_a_selfcheck_report_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--merge .*empty.*selfcheck's --out directory"):
        merged(((tmp_path / "empty"),), _cases(1))


def test_a_merged_report_that_left_variants_unrun_exits_1_naming_them_and_links_each_part(tmp_path: Path) -> None:
    leave = next(c for c in cases() if c.name == "gpu:leave-files")
    part = _part(tmp_path, "part1", [_observed(leave, tmp_path, "part1")], 42.0)
    out = tmp_path / "all"
    result = CliRunner().invoke(
        main, ["selfcheck", "--variant", "gpu:leave-files", "--variant", "gpu:wrong-path", "--merge", str(part), "--out", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert "not run: gpu:wrong-path" in " ".join(result.output.split())
    data = json.loads((out / "selfcheck.json").read_text())
    assert data["summary"]["not_run"] == ["gpu:wrong-path"] and data["summary"]["wall_seconds"] == 42.0
    page = (out / "selfcheck.html").read_text()
    assert "Not run: gpu:wrong-path" in page and "href='../part1/variants/gpu-leave-files/report.html'" in page


def test_shard_and_merge_together_are_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["selfcheck", "--shard", "1/2", "--merge", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--shard and --merge" in result.output, result.output


def test_the_violation_may_be_named_under_a_header_in_any_failed_test_but_not_in_quoted_source() -> None:
    case = Case("stale", "gpu", BROKEN, ["ST-01"], [], {"ST-01": r"sent an entry of gpu\.dralab\.dev for \S+"})
    header = "AssertionError: gpu.dralab.dev wrote entries its claims do not give it:\n[+1 more lines]"
    said = (
        "E       AssertionError: gpu.dralab.dev wrote entries its claims do not give it:\n"
        "E         claim a/b: sent an entry of gpu.dralab.dev for node-1/gpu-3"
    )
    quoted = '    f"sent an entry of gpu.dralab.dev for {entry}"\nE       AssertionError: gpu.dralab.dev wrote entries'

    def report(traceback: str) -> dict:
        tests = [{"verdict": "PASS", "message": ""}, {"verdict": "FAIL", "message": header, "traceback": traceback}]
        return {"summary": {"outcome": "NOT CERTIFIED"}, "requirements": [{"id": "ST-01", "verdict": "FAIL", "tests": tests}]}

    assert judge(case, report(said), 1.0, Path("r")).match
    assert "without naming the violation" in judge(case, report(quoted), 1.0, Path("r")).why
