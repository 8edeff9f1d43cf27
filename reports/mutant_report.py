"""The mutation report (`dralab mutants`): each mutant killed (the requirement IDs that FAILed),
survived, equivalent (it survived, and reports/mutant_equivalents.yaml says why nothing any
requirement speaks of changes), build-failed or incomplete (a lab's error, no verdict); written as
mutants.json and mutants.html, each run appended to history.json beside them, where a mutant's
status is compared with the last run that drew it (runs sample, so that may be an older one)."""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from basics.junit_properties import Verdict
from reports import page_style
from reports.mutant_listing import Mutant
from reports.run_history import RunHistory

KILLED, SURVIVED, EQUIVALENT, BUILD_FAILED, INCOMPLETE = "killed", "survived", "equivalent", "build-failed", "incomplete"
STATUSES = (KILLED, SURVIVED, EQUIVALENT, BUILD_FAILED, INCOMPLETE)
EQUIVALENTS = Path(__file__).with_name("mutant_equivalents.yaml")
HISTORY = "history.json"


def equivalents(path: Path) -> dict[str, str]:
    """Mutant id -> why it is equivalent, from the YAML file (none: an empty file)."""
    return {str(k): str(v) for k, v in (yaml.safe_load(path.read_text()) or {}).items()} if path.exists() else {}


@dataclass
class Outcome:
    id: str
    where: str
    diff: str
    status: str
    killed_by: list[str] = field(default_factory=list)  # the IDs that FAILed
    reason: str = ""  # equivalent: why; build-failed, incomplete: what happened
    reports: dict[str, str] = field(default_factory=dict)  # profile -> its report.html
    seconds: float = 0.0
    previous: str | None = None  # its status in the last run that drew it


def classified(
    mutant: Mutant,
    reports: dict[str, dict[str, Any] | None],
    known: dict[str, str],
    build_error: str | None = None,
    seconds: float = 0.0,
    paths: dict[str, str] | None = None,
) -> Outcome:
    """A mutant's outcome from its certification reports (profile -> report; None: no results)."""
    base = Outcome(mutant.id, mutant.where, mutant.diff, BUILD_FAILED, reports=paths or {}, seconds=round(seconds, 1))
    if build_error is not None:
        return replace(base, reason=build_error)
    verdicts = [r for report in reports.values() if report for r in report["requirements"]]
    failed = sorted({r["id"] for r in verdicts if r["verdict"] == Verdict.FAIL})
    if failed:
        stale = f"declared equivalent ({known[mutant.id]}), yet killed: remove its entry" if mutant.id in known else ""
        return replace(base, status=KILLED, killed_by=failed, reason=stale)
    broken = sorted({r["id"] for r in verdicts if r["verdict"] in (Verdict.ERROR, Verdict.BLOCKED)})
    missing = sorted(p for p, report in reports.items() if not report)
    if broken or missing or not reports:
        what = [f"{', '.join(broken)} ERROR or BLOCKED"] if broken else []
        what += [f"no results for {', '.join(missing)}"] if missing else []
        return replace(base, status=INCOMPLETE, reason="; ".join(what) or "nothing certified")
    if mutant.id in known:
        return replace(base, status=EQUIVALENT, reason=known[mutant.id])
    return replace(base, status=SURVIVED)


def summary(outcomes: list[Outcome], generated: int) -> dict[str, Any]:
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    judged = counts[KILLED] + counts[SURVIVED]
    return {
        "generated": generated,
        "run": len(outcomes),
        **counts,
        # Of the mutants that built and were judged, the equivalent ones left out.
        "score": round(counts[KILLED] / judged, 3) if judged else None,
    }


def with_history(outcomes: list[Outcome], history: list[dict[str, Any]]) -> list[Outcome]:
    """The outcomes with each one's status in the latest earlier run that drew it."""
    out = []
    for o in outcomes:
        before = next((run["mutants"][o.id] for run in reversed(history) if o.id in run["mutants"]), None)
        out.append(replace(o, previous=before))
    return out


def write(out_dir: Path, outcomes: list[Outcome], generated: int, started: str, wall_seconds: float, seed: int) -> dict[str, Any]:
    """mutants.json, mutants.html and this run appended to history.json."""
    history = RunHistory(out_dir / HISTORY)
    outcomes = with_history(outcomes, history.runs)
    data = {
        "started": started,
        "seed": seed,
        "wall_seconds": round(wall_seconds, 1),
        "summary": summary(outcomes, generated),
        "mutants": [asdict(o) for o in outcomes],
    }
    history.append({"started": started, "summary": data["summary"], "mutants": {o.id: o.status for o in outcomes}})
    (out_dir / "mutants.json").write_text(json.dumps(data, indent=2))
    (out_dir / "mutants.html").write_text(render_html(data, history.runs))
    return data


# After page_style's rules.
STYLE = """table{width:100%}pre{margin:0;font-size:85%}
tr.killed td:nth-child(3){color:#070}tr.survived td:nth-child(3){color:#b00;font-weight:bold}"""


def render_html(data: dict[str, Any], history: list[dict[str, Any]]) -> str:
    e = html.escape

    def detail(m: dict[str, Any]) -> str:
        said = ", ".join(m["killed_by"]) if m["status"] == KILLED else ""
        return e(" ".join(p for p in (said, m["reason"]) if p)) or "-"

    def change(m: dict[str, Any]) -> str:
        return "" if m["previous"] in (None, m["status"]) else f" <b>(was {e(m['previous'])})</b>"

    def links(m: dict[str, Any]) -> str:
        return " ".join(f"<a href='{e(path)}'>{e(profile)}</a>" for profile, path in m["reports"].items())

    rows = "".join(
        f"<tr class='{e(m['status'])}'><td>{e(m['id'])}</td><td>{e(m['where'])}</td><td>{e(m['status'])}{change(m)}</td>"
        f"<td>{detail(m)}</td><td>{links(m)}</td>"
        f"<td><pre>{e(m['diff'])}</pre></td><td>{m['seconds']:.0f}s</td></tr>"
        for m in data["mutants"]
    )
    runs = "".join(
        f"<tr><td>{e(h['started'])}</td>" + "".join(f"<td>{h['summary'].get(k)}</td>" for k in ("run", *STATUSES, "score")) + "</tr>"
        for h in history
    )
    s = data["summary"]
    return f"""{page_style.head("dralab mutants", STYLE)}
<h1>dralab mutants: {s[KILLED]} killed, {s[SURVIVED]} survived of {s["run"]} run ({s["generated"]} generated)</h1>
<p>Score on the non-equivalent mutants judged: {s["score"]}; {s[EQUIVALENT]} equivalent, {s[BUILD_FAILED]} did not build,
{s[INCOMPLETE]} incomplete; seed {data["seed"]}, {data["wall_seconds"]}s.</p>
<table><tr><th>mutant</th><th>where</th><th>status</th><th>killed by / why</th><th>reports</th><th>diff</th><th>time</th></tr>{rows}</table>
<h2>History</h2><table><tr><th>run</th><th>mutants</th>{"".join(f"<th>{k}</th>" for k in STATUSES)}<th>score</th></tr>{runs}</table>
</body></html>
"""
