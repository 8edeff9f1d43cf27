"""The certification report (RP-01, RP-02, RP-04) from the suites' JUnit XML: a verdict per
requirement ID with its text, level, source and remedy from the shipped catalogue, duration, and
for FAIL/ERROR the failure, the evidence, the lab's diagnosis and the component logs; for SKIP its
reason; what the checks observed; the spec-drift records; the environment; and the run's outcome.
The driver's requirements are counted apart from cluster/lab checks and dralab's self-checks,
which never count as the driver's PASS. Written as report.json and a self-contained report.html,
which shows paths relative to the run's output directory it is written to."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from basics.junit_properties import BLOCKED_BY, DIAGNOSIS, EVIDENCE, OBSERVED, REQUIREMENT, WARNING, WORST_FIRST, Verdict, final_verdict
from clusters.config import labs_root
from reports import page_style
from suites import catalogue
from suites.catalogue import Checks
from suites.framework.spec_drift import PROPERTY as SPEC_DRIFT

# Worst first: a requirement takes its tests' worst verdict.
VERDICTS = WORST_FIRST
# Sections of the report: what the outcome is about, and what is reported apart.
DRIVER, CLUSTER, SELF_CHECK = "driver", "cluster", "self-check"
SECTION_TITLES = {
    DRIVER: "Requirements of the driver under test",
    CLUSTER: "Cluster and lab checks (reported apart: not the driver's PASS)",
    SELF_CHECK: "dralab's self-checks and harness (reported apart)",
}
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
    source: str = ""
    remedy: str = ""  # what a driver failing it has to fix
    upstream_issue: str = ""  # owner/repository#number


def _outcome(case: ET.Element) -> tuple[str, str, str]:
    """The JUnit outcome, its message (an assertion's text, a skip's reason) and the traceback."""
    for tag, verdict in (("failure", Verdict.FAIL), ("error", Verdict.ERROR), ("skipped", Verdict.SKIP)):
        found = case.find(tag)
        if found is not None:
            return verdict, (found.get("message") or "").strip(), (found.text or "").strip()
    return Verdict.PASS, "", ""


def _relocated(text: str, out_dir: Path | None) -> str:
    """Lab log paths as copied under the output directory: the lab's own are gone after teardown (LAB-07)."""
    if out_dir is None:
        return text
    return re.sub(rf"{re.escape(str(labs_root()))}/labs/([^/\s]+)/logs/", lambda m: f"{out_dir}/logs/{m.group(1)}/", text)


def _tests(root: ET.Element) -> list[list[ET.Element]]:
    """The testcase elements of each test. pytest writes a test that fails in its call and again in
    its teardown as two testcases of the same name (one outcome each, as the JUnit schema wants);
    the last has all the properties the plugin recorded over the test's phases."""
    tests: list[list[ET.Element]] = []
    for case in root.iter("testcase"):
        if tests and (tests[-1][0].get("classname"), tests[-1][0].get("name")) == (case.get("classname"), case.get("name")):
            tests[-1].append(case)
        else:
            tests.append([case])
    return tests


def read_junit(path: Path, out_dir: Path | None = None) -> list[TestResult]:
    results = []
    for cases in _tests(ET.parse(path).getroot()):
        case = cases[0]
        props = [(p.get("name", ""), _relocated(p.get("value", ""), out_dir)) for p in cases[-1].iter("property")]
        # The first failing phase's outcome and message; the others' tracebacks after its own.
        outcomes = [_outcome(c) for c in cases]
        outcome, message, _ = next((o for o in outcomes if o[0] != Verdict.PASS), outcomes[0])
        traceback = "\n\n".join(o[2] for o in outcomes if o[2])
        verdict = final_verdict(outcome, props)
        warnings = [v for k, v in props if k == WARNING]
        if verdict == Verdict.WARNING:
            message = "\n".join(f"SHOULD not met: {w}" for w in warnings)
        results.append(
            TestResult(
                name=f"{case.get('classname', '')}::{case.get('name', '')}",
                verdict=verdict,
                seconds=sum(float(c.get("time") or 0) for c in cases),
                requirements=[v for k, v in props if k == REQUIREMENT] or ["(none)"],
                message=_relocated(message, out_dir),
                traceback=_relocated(traceback, out_dir),
                evidence=[v for k, v in props if k == EVIDENCE],
                observed=[v for k, v in props if k == OBSERVED],
                spec_drift=[json.loads(v) for k, v in props if k == SPEC_DRIFT],
                diagnosis=next((v for k, v in props if k == DIAGNOSIS), ""),
                blocked_by=next((v for k, v in props if k == BLOCKED_BY), ""),
            )
        )
    return results


def _section(rid: str) -> str:
    known = catalogue.get(rid)
    if known is None or known.checks is Checks.HARNESS:
        return SELF_CHECK
    return DRIVER if known.checks is Checks.DRIVER else CLUSTER


def _catalogued(rid: str) -> dict[str, str]:
    """What the catalogue says of `rid` beside its verdict; nothing for an ID it does not know."""
    known = catalogue.get(rid)
    if known is None:
        return {}
    return {
        "text": known.text,
        "level": known.level.value,
        "source": known.source,
        "remedy": known.remedy or "",
        "upstream_issue": known.upstream_issue or "",
    }


def by_requirement(results: list[TestResult]) -> list[RequirementResult]:
    order = {rid: i for i, rid in enumerate(catalogue.load())}
    ids = sorted({r for t in results for r in t.requirements}, key=lambda rid: (order.get(rid, len(order)), rid))
    out = []
    for rid in ids:
        tests = [t for t in results if rid in t.requirements]
        verdicts = {t.verdict for t in tests}
        out.append(
            RequirementResult(
                rid,
                next(v for v in VERDICTS if v in verdicts),
                round(sum(t.seconds for t in tests), 2),
                tests,
                section=_section(rid),
                **_catalogued(rid),
            )
        )
    return out


def outcome(requirements: list[RequirementResult]) -> tuple[str, list[str]]:
    """The run's outcome (RP-04) and the requirement IDs behind it, from the driver's requirements only."""
    driver = [r for r in requirements if r.section == DRIVER]
    failed = [r.id for r in driver if r.verdict == Verdict.FAIL]
    if failed:
        return NOT_CERTIFIED, failed
    no_verdict = [r.id for r in driver if r.verdict in (Verdict.ERROR, Verdict.BLOCKED)]
    if no_verdict:
        return INCOMPLETE, no_verdict
    # Coming up (DEP) is needed, not sufficient: a MUST of what the driver claims must have been exercised.
    exercised = _driver_ids(requirements, "MUST", (Verdict.PASS, Verdict.WARNING))
    if not exercised:
        return NOTHING, []
    return CERTIFIED, exercised


def _unclaimed(requirement: RequirementResult) -> bool:
    """Whether every test of the requirement SKIPped because the profile does not claim what it needs."""
    return all(t.verdict == Verdict.SKIP and NOT_CLAIMED.search(t.message) for t in requirement.tests)


def _driver_ids(requirements: list[RequirementResult], level: str, verdicts: tuple[str, ...]) -> list[str]:
    """The driver's requirements (coming up aside) of `level` that got one of `verdicts`."""
    return [
        r.id for r in requirements if r.section == DRIVER and r.level == level and r.verdict in verdicts and not r.id.startswith("DEP-")
    ]


def _counts(requirements: list[RequirementResult], section: str) -> dict[str, int]:
    counts = Counter(r.verdict for r in requirements if r.section == section)
    return {v: counts[v] for v in VERDICTS}


def build(results: list[TestResult], environment: dict[str, Any], wall_seconds: float) -> dict[str, Any]:
    requirements = by_requirement(results)
    result, behind = outcome(requirements)
    drift = [{**d, "test": t.name} for t in results for d in t.spec_drift]
    return {
        "summary": {
            "outcome": result,
            "exit_code": EXIT_CODES[result],
            "behind": behind,
            "warnings": [r.id for r in requirements if r.section == DRIVER and r.verdict == Verdict.WARNING],
            # What CERTIFIED rests on besides the MUSTs that PASSed (`behind`), said as it is.
            "not_exercised": [
                rid
                for rid in _driver_ids(requirements, "MUST", (Verdict.SKIP,))
                if not _unclaimed(next(r for r in requirements if r.id == rid))
            ],
            "shoulds_met": _driver_ids(requirements, "SHOULD", (Verdict.PASS,)),
            "requirements": {section: _counts(requirements, section) for section in SECTION_TITLES},
            "tests": {v: sum(t.verdict == v for t in results) for v in VERDICTS},
            "wall_seconds": round(wall_seconds, 1),
        },
        "requirements": [asdict(r) for r in requirements],
        "spec_drift": drift,
        "environment": environment,
    }


def first_message(requirement: dict[str, Any]) -> str:
    """The first line of the message of the first test that gave a requirement its verdict."""
    return next((t["message"] or "(no message)").splitlines()[0] for t in requirement["tests"] if t["verdict"] == requirement["verdict"])


def last_line(report: dict[str, Any]) -> str:
    """The line a run ends with: the outcome and the IDs behind it (RP-04); for CERTIFIED also the
    applicable MUSTs it was not exercised on (SKIP) and the SHOULDs, each said for what it is."""
    summary = report["summary"]
    ids = ", ".join(summary["behind"])
    what = {
        CERTIFIED: f"no MUST of the driver FAILed, and these were exercised and PASSed: {ids}",
        NOT_CERTIFIED: f"FAIL {ids}",
        INCOMPLETE: f"no verdict (ERROR or BLOCKED) for {ids}",
        NOTHING: "no MUST of the driver was exercised (the profile claims nothing dralab checks, or every MUST "
        "it claims SKIPped: see the reasons)",
    }[summary["outcome"]]
    parts = [f"{summary['outcome']}: {what}"]
    if summary["outcome"] == CERTIFIED and summary.get("not_exercised"):
        parts.append(f"not exercised (SKIP, reasons in the report): {', '.join(summary['not_exercised'])}")
    if summary.get("shoulds_met"):
        parts.append(f"SHOULD met: {', '.join(summary['shoulds_met'])}")
    if summary["warnings"]:
        parts.append(f"WARNING (SHOULD not met) {', '.join(summary['warnings'])}")
    return "; ".join(parts)


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    as_json, as_html = out_dir / "report.json", out_dir / "report.html"
    as_json.write_text(json.dumps(report, indent=2))
    as_html.write_text(render_html(report, out_dir))
    return as_json, as_html


# After page_style's rules.
STYLE = """body{max-width:80em}table{width:100%}td,th{padding:.3em .5em;overflow-wrap:anywhere}th{white-space:nowrap}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;max-height:30em;overflow:auto}
.verdict{font-size:1.4em;font-weight:bold}.text{color:#444;font-size:.9em}
.requirements td:nth-child(-n+5):not([colspan]),.requirements th:nth-child(-n+5){white-space:nowrap;width:1%}"""
# What a test shows on the page beyond what it observed.
SHOWN = (Verdict.FAIL, Verdict.ERROR, Verdict.WARNING, Verdict.BLOCKED)
# Verdicts whose row says what the requirement is, where it comes from and what to fix.
EXPLAINED = (Verdict.FAIL, Verdict.WARNING)
# What to do about a FAIL the driver cannot fix, by section.
REMEDY_ELSEWHERE = {
    CLUSTER: "not the driver's to fix: compare the cluster's versions and feature gates (Environment) with the source",
    SELF_CHECK: "dralab's own: report it to dralab with this report",
}
# DriverUnderTest.requires's SKIP (suites/framework/drivers.py): the profile does not claim what the
# requirement needs. Such requirements are one line per suite, not a row each.
NOT_CLAIMED = re.compile(r"driver profile (?P<profile>\S+) does not claim (?P<capabilities>.+)")
_SPACE = re.compile(r"\s*")


def _e(value: object) -> str:
    return html.escape(str(value))


def _json_values(text: str) -> list[Any] | None:
    """The JSON objects and arrays `text` is made of (a metadata file is a stream of them), or
    None when it is anything else."""
    decoder, values, at = json.JSONDecoder(), [], _SPACE.match(text).end()
    while at < len(text):
        if text[at] not in "{[":
            return None
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return None
        values.append(value)
        at = _SPACE.match(text, at).end()
    return values or None


def _strings(value: Any, change: Callable[[str], Any]) -> Any:
    """`value` with `change` applied to each string in it, however deep in dicts and lists."""
    if isinstance(value, dict):
        return {k: _strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, change) for v in value]
    return change(value) if isinstance(value, str) else value


def _decoded(text: str) -> Any:
    """A string that holds JSON (a file's text kept in a dict) as that JSON, so that it is shown
    as JSON, not as an escaped string inside JSON; a stream of several documents as their list."""
    values = _json_values(text)
    if values is None:
        return text
    return _strings(values[0] if len(values) == 1 else values, _decoded)


def _pretty(text: str) -> str:
    """Evidence that is JSON, indented once; anything else as recorded."""
    values = _json_values(text)
    if values is None:
        return text
    return "\n".join(json.dumps(_strings(v, _decoded), indent=2, ensure_ascii=False) for v in values)


def _evidence(item: str) -> str:
    title, _, body = item.partition("\n")
    # What the check saw is open on the page; component logs, the longer part, are one click away.
    return (
        f"<details{' open' if title.startswith('evidence: ') else ''}><summary>{_e(title)}</summary>"
        f"<pre>{_e(_pretty(body))}</pre></details>"
    )


def _details(test: dict[str, Any]) -> str:
    parts = [f"<p><b>{_e(test['name'])}</b>: {_e(test['verdict'])} in {test['seconds']:.1f}s</p>"]
    if test["message"]:
        parts.append(f"<pre>{_e(test['message'])}</pre>")
    if test.get("diagnosis"):
        parts.append(f"<details open><summary>lab diagnosis</summary><pre>{_e(test['diagnosis'])}</pre></details>")
    if test.get("traceback"):
        parts.append(f"<details><summary>traceback</summary><pre>{_e(test['traceback'])}</pre></details>")
    parts += [_evidence(item) for item in test["evidence"]]
    return "".join(parts)


def _case(test: dict[str, Any]) -> str:
    """A parametrised test's case, "[a bare name] ", to tell its observations apart."""
    name = test["name"]
    return name[name.index("[") :] + " " if "[" in name else ""


def _explained(r: dict[str, Any]) -> str:
    """A FAIL's or WARNING's level, source (and upstream issue) and what to fix."""
    issue = r.get("upstream_issue")
    upstream = f'; upstream: <a href="{_e(catalogue.issue_url(issue))}">{_e(issue)}</a>' if issue else ""
    remedy = r.get("remedy") or REMEDY_ELSEWHERE.get(r["section"], "")
    return (
        f"<div class='text'>{_e(r.get('level') or '')}; source: {_e(r.get('source') or '(not in the catalogue)')}"
        f"{upstream}</div><div><b>remedy:</b> {_e(remedy)}</div>"
    )


def _skip_reasons(r: dict[str, Any]) -> str:
    reasons = dict.fromkeys(t["message"] for t in r["tests"] if t["verdict"] == Verdict.SKIP and t["message"])
    return "".join(f"<p>skipped: {_e(reason)}</p>" for reason in reasons)


def _row(r: dict[str, Any]) -> str:
    observed = "<br>".join(_e(_case(t) + o[:300]) for t in r["tests"] for o in t["observed"])
    shown = "".join(_details(t) for t in r["tests"] if t["verdict"] in SHOWN)
    text = f"<div class='text'>{_e(r['text'])}</div>" if r.get("text") else ""
    explained = _explained(r) if r["verdict"] in EXPLAINED else ""
    skipped = _skip_reasons(r) if r["verdict"] == Verdict.SKIP else ""
    return (
        f"<tr class='{r['verdict']}' id='{_e(r['id'])}'><td>{_e(r['id'])}</td><td>{r['verdict']}</td>"
        f"<td>{_e(r.get('level') or '')}</td><td>{r['seconds']:.1f}s</td><td>{len(r['tests'])}</td>"
        f"<td>{text}{explained}{skipped}{observed}{shown}</td></tr>"
    )


def _not_claimed(r: dict[str, Any]) -> tuple[str, str, set[str]] | None:
    """(suite, driver profile, capabilities) of a requirement that SKIPped only because the profile
    does not claim the capabilities; None for any other."""
    found = [m for t in r["tests"] if (m := NOT_CLAIMED.search(t["message"]))]
    if r["verdict"] != Verdict.SKIP or len(found) < len(r["tests"]):
        return None
    suite = catalogue.family(r["id"])
    return suite, found[0]["profile"], {c for f in found for c in f["capabilities"].split(", ")}


def _unclaimed_lines(unclaimed: dict[str, tuple[str, str, set[str]]]) -> str:
    """One line per suite (and profile) for the requirements (ID: _not_claimed's) the profile does not claim."""
    groups: dict[tuple[str, str], tuple[set[str], list[str]]] = {}
    for rid, (suite, profile, capabilities) in unclaimed.items():
        needed, ids = groups.setdefault((suite, profile), (set(), []))
        needed |= capabilities
        ids.append(rid)
    return "".join(
        f"<tr class='SKIP unclaimed'><td colspan='6'>{_e(suite)}: {len(ids)} requirement"
        f"{'s' if len(ids) > 1 else ''} not claimed by driver profile {_e(profile)} "
        f"({_e(', '.join(sorted(capabilities)))}): {_e(', '.join(ids))}</td></tr>"
        for (suite, profile), (capabilities, ids) in groups.items()
    )


def _table(requirements: list[dict[str, Any]]) -> str:
    unclaimed = {r["id"]: found for r in requirements if (found := _not_claimed(r))}
    rows = "".join(_row(r) for r in requirements if r["id"] not in unclaimed)
    return (
        "<table class='requirements'><tr><th>ID</th><th>verdict</th><th>level</th><th>duration</th><th>tests</th>"
        f"<th>requirement, what was observed, and for failures the evidence</th></tr>{rows}"
        f"{_unclaimed_lines(unclaimed)}</table>"
    )


def _relative(report: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """`report` with the paths under the run's output directory relative to it: the page lives
    there, beside the logs it names, wherever the directory is moved."""
    under = re.compile(rf"{re.escape(str(out_dir))}(/|(?![\w.-]))")  # the directory itself: "."
    return _strings(report, lambda text: under.sub(lambda m: "" if m[1] else ".", text))


def render_html(report: dict[str, Any], out_dir: Path | None = None) -> str:
    """The page of `report`; `out_dir`: where it is written, which its paths are shown relative to."""
    if out_dir is not None:
        report = _relative(report, out_dir)
    summary = report["summary"]
    title = summary["outcome"]
    sections = []
    for section, heading in SECTION_TITLES.items():
        members = [r for r in report["requirements"] if r.get("section") == section]
        if not members:
            continue
        counts = ", ".join(f"{n} {v}" for v, n in summary["requirements"][section].items() if n)
        sections.append(f"<h2>{_e(heading)}</h2><p>{_e(counts)}</p>{_table(members)}")
    drift = (
        "".join(
            f"<tr><td>{_e(d['kep'])}</td><td>{_e(d['topic'])}</td><td>{_e(d['promised'])}</td><td>{_e(d['observed'])}</td></tr>"
            for d in report["spec_drift"]
        )
        or "<tr><td colspan='4'>none recorded by the checks that ran</td></tr>"
    )
    environment = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(v if isinstance(v, str) else json.dumps(v))}</td></tr>" for k, v in report["environment"].items()
    )
    paths = "<p>Paths are relative to the directory of this report, the run's output.</p>" if out_dir else ""
    return f"""{page_style.head(f"dralab: {title}", page_style.VERDICTS + STYLE)}
<h1>dralab certification</h1>
<p class="verdict {Verdict.PASS if title == CERTIFIED else Verdict.FAIL}">{_e(last_line(report))}</p>
<p>tests: {_e(", ".join(f"{n} {v}" for v, n in summary["tests"].items() if n))}; {summary["wall_seconds"]}s</p>{paths}
{"".join(sections)}
<h2>Spec drift (shipped Kubernetes against the KEP text)</h2>
<table><tr><th>KEP</th><th>topic</th><th>the KEP promised</th><th>this cluster did</th></tr>{drift}</table>
<h2>Environment</h2><table>{environment}</table>
</body></html>
"""
