"""The certification report (RP-01, RP-02) from the suites' JUnit XML: a verdict per requirement
ID with duration, and for FAIL/ERROR the failure, the evidence and the component logs; what the
checks observed; the spec-drift records; the environment. Written as report.json and as a
self-contained report.html that a browser opens without a server."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clusters.junit_properties import EVIDENCE, LAB_BROKEN, OBSERVED, REQUIREMENT
from suites.framework.spec_drift import PROPERTY as SPEC_DRIFT

VERDICTS = ("FAIL", "ERROR", "PASS", "SKIP")  # worst first: a requirement takes its tests' worst


@dataclass
class TestResult:
    name: str
    verdict: str
    seconds: float
    requirements: list[str]
    message: str = ""  # the failure, error or skip reason
    traceback: str = ""
    evidence: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)
    spec_drift: list[dict[str, str]] = field(default_factory=list)


@dataclass
class RequirementResult:
    id: str
    verdict: str
    seconds: float
    tests: list[TestResult]


def _verdict(case: ET.Element) -> tuple[str, str, str]:
    """The verdict, its message (an assertion's text, a skip's reason) and the traceback."""
    for tag, verdict in (("failure", "FAIL"), ("error", "ERROR"), ("skipped", "SKIP")):
        found = case.find(tag)
        if found is not None:
            return verdict, (found.get("message") or "").strip(), (found.text or "").strip()
    return "PASS", "", ""


def read_junit(path: Path) -> list[TestResult]:
    results = []
    for case in ET.parse(path).getroot().iter("testcase"):
        props = [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        verdict, message, traceback = _verdict(case)
        if verdict == "FAIL" and any(k == LAB_BROKEN for k, _ in props):
            verdict = "ERROR"  # the lab broke under the test: no verdict on the driver
        results.append(TestResult(
            name=f"{case.get('classname', '')}::{case.get('name', '')}", verdict=verdict,
            seconds=float(case.get("time") or 0), requirements=[v for k, v in props if k == REQUIREMENT] or ["(none)"],
            message=message, traceback=traceback, evidence=[v for k, v in props if k == EVIDENCE],
            observed=[v for k, v in props if k == OBSERVED],
            spec_drift=[json.loads(v) for k, v in props if k == SPEC_DRIFT]))
    return results


def by_requirement(results: list[TestResult]) -> list[RequirementResult]:
    ids = sorted({r for t in results for r in t.requirements})
    out = []
    for rid in ids:
        tests = [t for t in results if rid in t.requirements]
        verdicts = {t.verdict for t in tests}
        worst = next(v for v in VERDICTS if v in verdicts)
        out.append(RequirementResult(rid, worst, round(sum(t.seconds for t in tests), 2), tests))
    return out


def build(results: list[TestResult], environment: dict[str, Any], wall_seconds: float) -> dict[str, Any]:
    requirements = by_requirement(results)
    counts = Counter(r.verdict for r in requirements)
    certified = counts["FAIL"] == 0 and counts["ERROR"] == 0 and counts["PASS"] > 0
    drift = [{**d, "test": t.name} for t in results for d in t.spec_drift]
    return {
        "summary": {"certified": certified, "requirements": {v: counts[v] for v in VERDICTS},
                    "tests": {v: sum(t.verdict == v for t in results) for v in VERDICTS},
                    "wall_seconds": round(wall_seconds, 1)},
        "requirements": [asdict(r) for r in requirements],
        "spec_drift": drift,
        "environment": environment,
    }


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    as_json, as_html = out_dir / "report.json", out_dir / "report.html"
    as_json.write_text(json.dumps(report, indent=2))
    as_html.write_text(render_html(report))
    return as_json, as_html


STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.PASS{background:#dfd}.FAIL{background:#fdd}.ERROR{background:#fcb}.SKIP{background:#eee}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;max-height:30em;overflow:auto}
.verdict{font-size:1.4em;font-weight:bold}
td:nth-child(-n+4),th:nth-child(-n+4){white-space:nowrap;width:1%}"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _details(test: dict[str, Any]) -> str:
    parts = [f"<p><b>{_e(test['name'])}</b>: {_e(test['verdict'])} in {test['seconds']:.1f}s</p>"]
    if test["message"]:
        parts.append(f"<pre>{_e(test['message'])}</pre>")
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


def render_html(report: dict[str, Any]) -> str:
    summary = report["summary"]
    title = "CERTIFIED" if summary["certified"] else "NOT CERTIFIED"
    counts = ", ".join(f"{n} {v}" for v, n in summary["requirements"].items())
    rows = []
    for r in report["requirements"]:
        observed = "<br>".join(_e(_case(t) + o[:300]) for t in r["tests"] for o in t["observed"])
        failing = "".join(_details(t) for t in r["tests"] if t["verdict"] in ("FAIL", "ERROR"))
        rows.append(f"<tr class='{r['verdict']}' id='{_e(r['id'])}'><td>{_e(r['id'])}</td><td>{r['verdict']}</td>"
                    f"<td>{r['seconds']:.1f}s</td><td>{len(r['tests'])}</td><td>{observed}{failing}</td></tr>")
    drift = "".join(f"<tr><td>{_e(d['kep'])}</td><td>{_e(d['topic'])}</td><td>{_e(d['promised'])}</td>"
                    f"<td>{_e(d['observed'])}</td></tr>" for d in report["spec_drift"]) \
        or "<tr><td colspan='4'>none recorded by the checks that ran</td></tr>"
    environment = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
                          for k, v in report["environment"].items())
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>dralab: {title}</title>
<style>{STYLE}</style></head><body>
<h1>dralab certification</h1>
<p class="verdict {'PASS' if summary['certified'] else 'FAIL'}">{title}: {counts} (requirements);
tests: {_e(', '.join(f'{n} {v}' for v, n in summary['tests'].items()))}; {summary['wall_seconds']}s</p>
<h2>Requirements</h2>
<table><tr><th>ID</th><th>verdict</th><th>duration</th><th>tests</th><th>observed, and for failures the evidence</th></tr>
{''.join(rows)}</table>
<h2>Spec drift (shipped Kubernetes against the KEP text)</h2>
<table><tr><th>KEP</th><th>topic</th><th>the KEP promised</th><th>this cluster did</th></tr>{drift}</table>
<h2>Environment</h2><table>{environment}</table>
</body></html>
"""
