"""The certification report from recorded JUnit XML (RP-01, RP-02)."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

from reports.report import build, read_junit, render_html, write

DRIFT = json.dumps({"kep": "KEP-6080", "topic": "runtime CEL error", "promised": "device pruned",
                    "observed": "scheduling failed <no such key>"})
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
    assert report["summary"] == {"certified": False, "requirements": {"FAIL": 1, "ERROR": 0, "PASS": 2, "SKIP": 1},
                                 "tests": {"FAIL": 1, "ERROR": 0, "PASS": 2, "SKIP": 2}, "wall_seconds": 12.3}
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
    assert json.loads(as_json.read_text()) == report and as_html.read_text() == page


def test_all_pass_is_certified(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text('<testsuites><testsuite><testcase classname="a" name="t" time="1">'
                    '<properties><property name="requirement" value="DP-01"/></properties></testcase></testsuite></testsuites>')
    report = build(read_junit(path), {}, 1)
    assert report["summary"]["certified"] and "CERTIFIED:" in render_html(report)
    assert "none recorded by the checks that ran" in render_html(report)  # an empty spec-drift section says so
