"""The certification report from recorded JUnit XML (RP-01, RP-02)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from reports.report import build, last_line, read_junit, render_html, write

DRIFT = json.dumps(
    {"kep": "KEP-6080", "topic": "runtime CEL error", "promised": "device pruned", "observed": "scheduling failed <no such key>"}
)
JUNIT = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="suites.da.test_x" name="test_pair" time="1.5">
  <properties><property name="requirement" value="DA-01"/><property name="observed" value="allocated: gpu-1 + nic-0"/></properties>
</testcase>
<testcase classname="suites.da.test_x" name="test_error" time="0.5">
  <properties><property name="requirement" value="DA-06"/><property name="spec_drift" value={quoteattr(DRIFT)}/></properties>
</testcase>
<testcase classname="suites.md.test_y" name="test_path[gpu]" time="2.0">
  <properties><property name="requirement" value="MD-01"/>
  <property name="evidence" value="evidence: file listing&#10;&lt;script&gt;x&lt;/script&gt;"/></properties>
  <failure message="AssertionError: no file at the shipped path">trace</failure>
</testcase>
<testcase classname="suites.md.test_y" name="test_path[net]" time="1.0">
  <properties><property name="requirement" value="MD-01"/></properties>
  <skipped message="driver profile net does not claim metadata"/>
</testcase>
<testcase classname="suites.md.test_y" name="test_deferred" time="0.1">
  <properties><property name="requirement" value="MD-16"/></properties>
  <skipped message="driver profile gpu does not claim metadata-deferred"/>
</testcase>
</testsuite></testsuites>"""


def _recorded(tmp_path: Path) -> Path:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    return path


def test_verdict_per_requirement_takes_the_worst_of_its_tests(tmp_path: Path) -> None:
    report = build(read_junit(_recorded(tmp_path)), {"kubernetes": "v1.37.1"}, 12.3)
    verdicts = {r["id"]: (r["verdict"], r["seconds"]) for r in report["requirements"]}
    assert verdicts == {"DA-01": ("PASS", 1.5), "DA-06": ("PASS", 0.5), "MD-01": ("FAIL", 3.0), "MD-16": ("SKIP", 0.1)}
    summary = report["summary"]
    assert (summary["outcome"], summary["exit_code"], summary["behind"]) == ("NOT CERTIFIED", 1, ["MD-01"])
    # The scheduler's DA checks are the cluster's: reported apart, never the driver's PASS.
    assert summary["requirements"]["driver"] == {"FAIL": 1, "ERROR": 0, "BLOCKED": 0, "WARNING": 0, "PASS": 0, "SKIP": 1}
    assert summary["requirements"]["cluster"]["PASS"] == 2
    assert summary["tests"] == {"FAIL": 1, "ERROR": 0, "BLOCKED": 0, "WARNING": 0, "PASS": 2, "SKIP": 2}
    md01 = next(r for r in report["requirements"] if r["id"] == "MD-01")
    assert md01["level"] == "MUST" and md01["text"].startswith("A container that references a claim request")
    (failing,) = [t for r in report["requirements"] if r["id"] == "MD-01" for t in r["tests"] if t["verdict"] == "FAIL"]
    assert (failing["message"], failing["traceback"]) == ("AssertionError: no file at the shipped path", "trace")
    assert failing["evidence"] == ["evidence: file listing\n<script>x</script>"]
    assert report["spec_drift"][0]["topic"] == "runtime CEL error" and report["spec_drift"][0]["test"].endswith("test_error")


def test_html_is_self_contained_escaped_and_names_the_failure(tmp_path: Path) -> None:
    report = build(read_junit(_recorded(tmp_path)), {"kubernetes": "v1.37.1", "feature gates": {"DRADerivedAttributes": True}}, 1)
    page = render_html(report)
    assert "NOT CERTIFIED" in page and "<tr class='FAIL' id='MD-01'>" in page
    assert "no file at the shipped path" in page and "&lt;script&gt;x&lt;/script&gt;" in page and "<script>" not in page
    assert "<details open><summary>evidence: file listing</summary>" in page  # what the check saw is shown
    assert "<details><summary>traceback</summary><pre>trace</pre></details>" in page
    assert "scheduling failed &lt;no such key&gt;" in page and "allocated: gpu-1 + nic-0" in page
    assert "http" not in page.split("<body>")[0]  # no stylesheet or script fetched from anywhere
    as_json, as_html = write(report, tmp_path / "out")
    assert json.loads(as_json.read_text()) == report and as_html.read_text() == render_html(report, tmp_path / "out")


def test_all_pass_is_certified(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        '<testsuites><testsuite><testcase classname="a" name="t" time="1">'
        '<properties><property name="requirement" value="DP-01"/></properties></testcase></testsuite></testsuites>'
    )
    report = build(read_junit(path), {}, 1)
    assert report["summary"]["outcome"] == "CERTIFIED" and "CERTIFIED: no MUST of the driver FAILed" in render_html(report)
    assert "none recorded by the checks that ran" in render_html(report)  # an empty spec-drift section says so


def _case(rid: str, verdict: str = "", props: str = "") -> str:
    body = {"FAIL": '<failure message="m">t</failure>', "ERROR": '<error message="m">t</error>', "SKIP": '<skipped message="m"/>', "": ""}[
        verdict
    ]
    return (
        f'<testcase classname="s" name="t_{rid}" time="1"><properties><property name="requirement" value="{rid}"/>'
        f"{props}</properties>{body}</testcase>"
    )


@pytest.mark.parametrize(
    "cases,outcome,code,behind",
    [
        ([_case("DEP-01"), _case("MD-01"), _case("ST-07", props='<property name="verdict" value="WARNING"/>')], "CERTIFIED", 0, ["MD-01"]),
        # SHOULDs alone certify nothing: no MUST was exercised.
        ([_case("DEP-01"), _case("MD-01", "SKIP"), _case("ST-07")], "NOTHING TO CERTIFY", 4, []),
        (
            [
                _case("DEP-01", "FAIL"),
                _case("MD-01", "SKIP", '<property name="verdict" value="BLOCKED"/><property name="blocked_by" value="DEP-01"/>'),
            ],
            "NOT CERTIFIED",
            1,
            ["DEP-01"],
        ),
        ([_case("DEP-01"), _case("MD-01"), _case("MD-18", "FAIL", '<property name="verdict" value="ERROR"/>')], "INCOMPLETE", 3, ["MD-18"]),
        ([_case("DEP-01"), _case("MD-01", "SKIP"), _case("DA-01"), _case("MUT-01")], "NOTHING TO CERTIFY", 4, []),
        # A driver failing inside a fixture (a JUnit error) is its FAIL.
        ([_case("DEP-01"), _case("MD-01", "ERROR", '<property name="verdict" value="FAIL"/>')], "NOT CERTIFIED", 1, ["MD-01"]),
    ],
)
def test_outcome_and_exit_code(tmp_path: Path, cases: list[str], outcome: str, code: int, behind: list[str]) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>")
    report = build(read_junit(path), {}, 1)
    assert (report["summary"]["outcome"], report["summary"]["exit_code"], report["summary"]["behind"]) == (outcome, code, behind)
    assert last_line(report).startswith(outcome + ":") and all(i in last_line(report) for i in behind)


def test_log_paths_of_a_torn_down_lab_point_at_their_copy(tmp_path: Path) -> None:
    """LAB-07: a path into a lab directory names the copy under the output directory instead."""
    from clusters.config import labs_root

    path = tmp_path / "junit.xml"
    path.write_text(
        _case("MD-01", "ERROR", f'<property name="diagnosis" value="down; see {labs_root()}/labs/cert/logs/etcd.log"/>').join(
            ["<testsuites><testsuite>", "</testsuite></testsuites>"]
        )
    )
    (result,) = read_junit(path, tmp_path / "out")
    assert result.diagnosis == f"down; see {tmp_path}/out/logs/cert/etcd.log"


def test_only_paths_under_the_output_directory_are_shown_relative_to_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = build([], {"results": str(out), "logs": f"{out}/logs/cert", "beside": f"{out}-old/logs"}, 1)
    page = render_html(report, out)
    assert "<td>.</td>" in page and "<td>logs/cert</td>" in page and f"<td>{out}-old/logs</td>" in page
    assert f"<td>{out}</td>" in render_html(report)  # no output directory given: as recorded


@pytest.mark.parametrize(
    "body,shown",
    [
        ('{"a":{"b":"[1,2]"}}', '{\n  "a": {\n    "b": [\n      1,\n      2\n    ]\n  }\n}'),
        ('{"a":1}\n{"a":2}', '{\n  "a": 1\n}\n{\n  "a": 2\n}'),  # a stream: each document
        ('{"file":"{\\"a\\":1}\\n{\\"a\\":2}\\n"}', '{\n  "file": [\n    {\n      "a": 1\n    },\n    {\n      "a": 2\n    }\n  ]\n}'),
        ('[...]\n{"a":1}', '[...]\n{"a":1}'),  # clipped: not JSON
        ('{"a":1} and more', '{"a":1} and more'),
        ("- name: x\n  node: y", "- name: x\n  node: y"),
        ('{"text":"not {json"}', '{\n  "text": "not {json"\n}'),
    ],
)
def test_json_evidence_is_indented_once_and_the_rest_shown_as_recorded(tmp_path: Path, body: str, shown: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        _case("MD-01", "FAIL", f'<property name="evidence" value={quoteattr("evidence: seen" + chr(10) + body)}/>').join(
            ["<testsuites><testsuite>", "</testsuite></testsuites>"]
        )
    )
    page = render_html(build(read_junit(path), {}, 1))
    assert f"<summary>evidence: seen</summary><pre>{html.escape(shown)}</pre>" in page


def test_the_certified_line_says_what_was_exercised_and_what_each_id_is(tmp_path: Path) -> None:
    """The MUSTs that PASSed, the applicable MUSTs that SKIPped (not exercised), the SHOULDs met and
    not met, each under its own words: no SHOULD listed as a MUST, no SKIPped MUST as PASSed, and
    nothing of what the profile does not claim (MD-16)."""
    path = tmp_path / "junit.xml"
    unclaimed = '<skipped message="driver profile acme does not claim metadata-deferred"/>'
    cases = [
        _case("DEP-01"),
        _case("MD-01"),
        _case("MD-03", "SKIP"),
        _case("ST-01"),
        _case("ST-07"),
        _case("ST-06", props='<property name="verdict" value="WARNING"/>'),
        _case("MD-16").replace("</testcase>", unclaimed + "</testcase>"),
    ]
    path.write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>")
    line = last_line(build(read_junit(path), {}, 1))
    assert line == (
        "CERTIFIED: no MUST of the driver FAILed, and these were exercised and PASSed: MD-01, ST-01; "
        "not exercised (SKIP, reasons in the report): MD-03; SHOULD met: ST-07; "
        "WARNING (SHOULD not met) ST-06"
    ), line
