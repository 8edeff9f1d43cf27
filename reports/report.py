"""The certification report (RP-01, RP-02, RP-04) from the suites' JUnit XML: a verdict per
requirement ID with its text and level from the shipped catalogue, duration, and for FAIL/ERROR
the failure, the evidence, the lab's diagnosis and the component logs; what the checks observed;
the spec-drift records; the environment; and the run's outcome. The driver's requirements are
counted apart from cluster/lab checks and dralab's self-checks, which never count as the
driver's PASS. Written as report.json and a self-contained report.html."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clusters.config import labs_root
from clusters.junit_properties import BLOCKED_BY, DIAGNOSIS, EVIDENCE, OBSERVED, REQUIREMENT, WARNING, final_verdict
from suites import catalogue
from suites.catalogue import Checks
from suites.framework.spec_drift import PROPERTY as SPEC_DRIFT

# Worst first: a requirement takes its tests' worst verdict.
VERDICTS = ("FAIL", "ERROR", "BLOCKED", "WARNING", "PASS", "SKIP")
# Sections of the report: what the outcome is about, and what is reported apart.
DRIVER, CLUSTER, SELF_CHECK = "driver", "cluster", "self-check"
SECTION_TITLES = {DRIVER: "Requirements of the driver under test",
                  CLUSTER: "Cluster and lab checks (reported apart: not the driver's PASS)",
                  SELF_CHECK: "dralab's self-checks and harness (reported apart)"}
# RP-04: each outcome's exit code.
CERTIFIED, NOT_CERTIFIED, INCOMPLETE, NOTHING = "CERTIFIED", "NOT CERTIFIED", "INCOMPLETE", "NOTHING TO CERTIFY"
EXIT_CODES = {CERTIFIED: 0, NOT_CERTIFIED: 1, INCOMPLETE: 3, NOTHING: 4}


@dataclass
class TestResult:
    name: str
    verdict: str
    seconds: float
    requirements: list[str]
    message: str = ""  # the failure, error, skip reason or unmet SHOULDs
    traceback: str = ""
    evidence: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)
    spec_drift: list[dict[str, str]] = field(default_factory=list)
    diagnosis: str = ""  # ERROR: what is wrong with the lab
    blocked_by: str = ""  # BLOCKED: the requirement whose FAIL kept it from running


@dataclass
class RequirementResult:
    id: str
    verdict: str
    seconds: float
    tests: list[TestResult]
    text: str = ""
    level: str = ""
    section: str = SELF_CHECK


def _outcome(case: ET.Element) -> tuple[str, str, str]:
    """The JUnit outcome, its message (an assertion's text, a skip's reason) and the traceback."""
    for tag, verdict in (("failure", "FAIL"), ("error", "ERROR"), ("skipped", "SKIP")):
        found = case.find(tag)
        if found is not None:
            return verdict, (found.get("message") or "").strip(), (found.text or "").strip()
    return "PASS", "", ""


def _relocated(text: str, out_dir: Path | None) -> str:
    """Lab log paths as copied under the output directory: the lab's own are gone after teardown (LAB-07)."""
    if out_dir is None:
        return text
    return re.sub(rf"{re.escape(str(labs_root()))}/labs/([^/\s]+)/logs/", lambda m: f"{out_dir}/logs/{m.group(1)}/", text)


def read_junit(path: Path, out_dir: Path | None = None) -> list[TestResult]:
    results = []
    for case in ET.parse(path).getroot().iter("testcase"):
        props = [(p.get("name", ""), _relocated(p.get("value", ""), out_dir)) for p in case.iter("property")]
        outcome, message, traceback = _outcome(case)
        verdict = final_verdict(outcome, props)
        warnings = [v for k, v in props if k == WARNING]
        if verdict == "WARNING":
            message = "\n".join(f"SHOULD not met: {w}" for w in warnings)
        results.append(TestResult(
            name=f"{case.get('classname', '')}::{case.get('name', '')}", verdict=verdict,
            seconds=float(case.get("time") or 0), requirements=[v for k, v in props if k == REQUIREMENT] or ["(none)"],
            message=_relocated(message, out_dir), traceback=_relocated(traceback, out_dir),
            evidence=[v for k, v in props if k == EVIDENCE], observed=[v for k, v in props if k == OBSERVED],
            spec_drift=[json.loads(v) for k, v in props if k == SPEC_DRIFT],
            diagnosis=next((v for k, v in props if k == DIAGNOSIS), ""),
            blocked_by=next((v for k, v in props if k == BLOCKED_BY), "")))
    return results


def _section(rid: str) -> str:
    known = catalogue.get(rid)
    if known is None or known.checks is Checks.HARNESS:
        return SELF_CHECK
    return DRIVER if known.checks is Checks.DRIVER else CLUSTER


def by_requirement(results: list[TestResult]) -> list[RequirementResult]:
    order = {rid: i for i, rid in enumerate(catalogue.load())}
    ids = sorted({r for t in results for r in t.requirements}, key=lambda rid: (order.get(rid, len(order)), rid))
    out = []
    for rid in ids:
        tests = [t for t in results if rid in t.requirements]
        verdicts = {t.verdict for t in tests}
        known = catalogue.get(rid)
        out.append(RequirementResult(rid, next(v for v in VERDICTS if v in verdicts), round(sum(t.seconds for t in tests), 2),
                                     tests, known.text if known else "", known.level.value if known else "", _section(rid)))
    return out


def outcome(requirements: list[RequirementResult]) -> tuple[str, list[str]]:
    """The run's outcome (RP-04) and the requirement IDs behind it, from the driver's requirements only."""
    driver = [r for r in requirements if r.section == DRIVER]
    failed = [r.id for r in driver if r.verdict == "FAIL"]
    if failed:
        return NOT_CERTIFIED, failed
    no_verdict = [r.id for r in driver if r.verdict in ("ERROR", "BLOCKED")]
    if no_verdict:
        return INCOMPLETE, no_verdict
    # Coming up (DEP) is needed, not sufficient: something the driver claims must have been checked.
    exercised = [r.id for r in driver if r.verdict in ("PASS", "WARNING") and not r.id.startswith("DEP-")]
    if not exercised:
        return NOTHING, []
    return CERTIFIED, exercised


def _counts(requirements: list[RequirementResult], section: str) -> dict[str, int]:
    counts = Counter(r.verdict for r in requirements if r.section == section)
    return {v: counts[v] for v in VERDICTS}


def build(results: list[TestResult], environment: dict[str, Any], wall_seconds: float) -> dict[str, Any]:
    requirements = by_requirement(results)
    result, behind = outcome(requirements)
    drift = [{**d, "test": t.name} for t in results for d in t.spec_drift]
    return {
        "summary": {"outcome": result, "exit_code": EXIT_CODES[result], "behind": behind,
                    "warnings": [r.id for r in requirements if r.section == DRIVER and r.verdict == "WARNING"],
                    "requirements": {section: _counts(requirements, section) for section in SECTION_TITLES},
                    "tests": {v: sum(t.verdict == v for t in results) for v in VERDICTS},
                    "wall_seconds": round(wall_seconds, 1)},
        "requirements": [asdict(r) for r in requirements],
        "spec_drift": drift,
        "environment": environment,
    }


def first_message(requirement: dict[str, Any]) -> str:
    """The first line of the message of the first test that gave a requirement its verdict."""
    return next((t["message"] or "(no message)").splitlines()[0] for t in requirement["tests"]
                if t["verdict"] == requirement["verdict"])


def last_line(report: dict[str, Any]) -> str:
    """The line a run ends with: the outcome and the IDs behind it (RP-04)."""
    summary = report["summary"]
    ids = ", ".join(summary["behind"])
    what = {CERTIFIED: f"every applicable MUST of the driver PASSed: {ids}",
            NOT_CERTIFIED: f"FAIL {ids}",
            INCOMPLETE: f"no verdict (ERROR or BLOCKED) for {ids}",
            NOTHING: "the driver profile claims nothing dralab checks (no driver requirement applied)"}[summary["outcome"]]
    warned = f"; WARNING (SHOULD not met) {', '.join(summary['warnings'])}" if summary["warnings"] else ""
    return f"{summary['outcome']}: {what}{warned}"


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    as_json, as_html = out_dir / "report.json", out_dir / "report.html"
    as_json.write_text(json.dumps(report, indent=2))
    as_html.write_text(render_html(report))
    return as_json, as_html


STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.PASS{background:#dfd}.FAIL{background:#fdd}.ERROR{background:#fcb}.SKIP{background:#eee}
.WARNING{background:#ffc}.BLOCKED{background:#edc}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;max-height:30em;overflow:auto}
.verdict{font-size:1.4em;font-weight:bold}.text{color:#444;font-size:.9em}
td:nth-child(-n+5),th:nth-child(-n+5){white-space:nowrap;width:1%}"""
# What a test shows on the page beyond what it observed.
SHOWN = ("FAIL", "ERROR", "WARNING", "BLOCKED")


def _e(value: object) -> str:
    return html.escape(str(value))


def _details(test: dict[str, Any]) -> str:
    parts = [f"<p><b>{_e(test['name'])}</b>: {_e(test['verdict'])} in {test['seconds']:.1f}s</p>"]
    if test["message"]:
        parts.append(f"<pre>{_e(test['message'])}</pre>")
    if test.get("diagnosis"):
        parts.append(f"<details open><summary>lab diagnosis</summary><pre>{_e(test['diagnosis'])}</pre></details>")
    if test.get("traceback"):
        parts.append(f"<details><summary>traceback</summary><pre>{_e(test['traceback'])}</pre></details>")
    # What the check saw is open on the page; component logs, the longer part, are one click away.
    parts += [f"<details{' open' if item.startswith('evidence: ') else ''}><summary>{_e(item.splitlines()[0])}"
              f"</summary><pre>{_e(item)}</pre></details>" for item in test["evidence"]]
    return "".join(parts)


def _case(test: dict[str, Any]) -> str:
    """A parametrised test's case, "[a bare name] ", to tell its observations apart."""
    name = test["name"]
    return name[name.index("["):] + " " if "[" in name else ""


def _rows(requirements: list[dict[str, Any]]) -> str:
    rows = []
    for r in requirements:
        observed = "<br>".join(_e(_case(t) + o[:300]) for t in r["tests"] for o in t["observed"])
        shown = "".join(_details(t) for t in r["tests"] if t["verdict"] in SHOWN)
        text = f"<div class='text'>{_e(r['text'])}</div>" if r.get("text") else ""
        rows.append(f"<tr class='{r['verdict']}' id='{_e(r['id'])}'><td>{_e(r['id'])}</td><td>{r['verdict']}</td>"
                    f"<td>{_e(r.get('level') or '')}</td><td>{r['seconds']:.1f}s</td><td>{len(r['tests'])}</td>"
                    f"<td>{text}{observed}{shown}</td></tr>")
    return "".join(rows)


def render_html(report: dict[str, Any]) -> str:
    summary = report["summary"]
    title = summary["outcome"]
    sections = []
    for section, heading in SECTION_TITLES.items():
        members = [r for r in report["requirements"] if r.get("section") == section]
        if not members:
            continue
        counts = ", ".join(f"{n} {v}" for v, n in summary["requirements"][section].items() if n)
        sections.append(f"<h2>{_e(heading)}</h2><p>{_e(counts)}</p>"
                        "<table><tr><th>ID</th><th>verdict</th><th>level</th><th>duration</th><th>tests</th>"
                        f"<th>requirement, what was observed, and for failures the evidence</th></tr>{_rows(members)}</table>")
    drift = "".join(f"<tr><td>{_e(d['kep'])}</td><td>{_e(d['topic'])}</td><td>{_e(d['promised'])}</td>"
                    f"<td>{_e(d['observed'])}</td></tr>" for d in report["spec_drift"]) \
        or "<tr><td colspan='4'>none recorded by the checks that ran</td></tr>"
    environment = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
                          for k, v in report["environment"].items())
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>dralab: {_e(title)}</title>
<style>{STYLE}</style></head><body>
<h1>dralab certification</h1>
<p class="verdict {'PASS' if title == CERTIFIED else 'FAIL'}">{_e(last_line(report))}</p>
<p>tests: {_e(', '.join(f'{n} {v}' for v, n in summary['tests'].items() if n))}; {summary['wall_seconds']}s</p>
{''.join(sections)}
<h2>Spec drift (shipped Kubernetes against the KEP text)</h2>
<table><tr><th>KEP</th><th>topic</th><th>the KEP promised</th><th>this cluster did</th></tr>{drift}</table>
<h2>Environment</h2><table>{environment}</table>
</body></html>
"""
