"""A cluster's qualification: Kubernetes' own DRA e2e suite's outcome per spec on it, written as
qualification.json and qualification.html beside ginkgo's JUnit report, and recorded per cluster
so that a later `dralab certify` on the same kind of cluster names it in its environment."""

from __future__ import annotations

import dataclasses
import html
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from clusters.config import labs_root
from clusters.provider_registry import provider
from clusters.providers import Capability
from basics.junit_properties import Verdict
from reports import page_style
from suites.upstream_dra.run import FAILED, PASSED, SKIPPED, Outcome

QUALIFIED, NOT_QUALIFIED, INCOMPLETE = "QUALIFIED", "NOT QUALIFIED", "INCOMPLETE"
EXIT_CODES = {QUALIFIED: 0, NOT_QUALIFIED: 1, INCOMPLETE: 3}


def build(
    outcomes: list[Outcome],
    cluster: str,
    kubernetes_version: str,
    server: str,
    wall_seconds: float,
    lab: dict[str, Any],
    diagnosis: list[str],
    owned: bool = True,
) -> dict[str, Any]:
    """The qualification; INCOMPLETE when a lab dralab started broke under the run (`diagnosis`
    names its dead parts): its failures are the lab's, not the cluster's kind's."""
    counts = Counter(o.state for o in outcomes)
    outcome = INCOMPLETE if owned and diagnosis else NOT_QUALIFIED if counts[FAILED] or not outcomes else QUALIFIED
    return {
        "outcome": outcome,
        "cluster": cluster,
        "kubernetes_version": kubernetes_version,
        "server": server,
        "counts": {state: counts[state] for state in (PASSED, FAILED, SKIPPED)},
        "wall_seconds": round(wall_seconds),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lab": lab,
        "diagnosis": diagnosis,
        "specs": [dataclasses.asdict(o) for o in sorted(outcomes, key=lambda o: (o.state != FAILED, o.name))],
    }


def summary(q: dict[str, Any]) -> str:
    c = q["counts"]
    return (
        f"{q['outcome']}: {sum(c.values())} upstream DRA specs, {c[PASSED]} passed, {c[FAILED]} failed, "
        f"{c[SKIPPED]} skipped, on the {q['cluster']} cluster (Kubernetes {q['kubernetes_version']}) in "
        f"{q['wall_seconds']}s"
    )


def skip_reasons(q: dict[str, Any]) -> list[tuple[str, int]]:
    """Each SKIP reason (its first line) with how many specs gave it, most frequent first."""
    return Counter(s["message"].splitlines()[0] if s["message"] else "?" for s in q["specs"] if s["state"] == SKIPPED).most_common()


def _e(value: object) -> str:
    return html.escape(str(value))


def _message(spec: dict[str, Any]) -> str:
    return f"<pre>{_e(spec['message'])}</pre>" if spec["message"] else ""


def render_section(q: dict[str, Any]) -> str:
    """The qualification as a section of an HTML report: settings, each SKIP's reason, each spec."""
    rows = "".join(
        f"<tr class='{Verdict.PASS if s['state'] == PASSED else Verdict.FAIL if s['state'] == FAILED else Verdict.SKIP}'>"
        f"<td>{_e(s['state'])}</td><td>{s['seconds']:.1f}s</td><td>{_e(s['name'])}<br><small>"
        f"{_e(s['location'])}</small>{_message(s)}"
        f"</td></tr>"
        for s in q["specs"]
    )
    skips = "".join(f"<li>{n} × {_e(reason)}</li>" for reason, n in skip_reasons(q))
    lab = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v if isinstance(v, str) else json.dumps(v))}</td></tr>" for k, v in q["lab"].items())
    diagnosis = f"<h3>Lab diagnosis</h3><pre>{_e(chr(10).join(q['diagnosis']))}</pre>" if q["diagnosis"] else ""
    return (
        f"<h2>Cluster qualification: Kubernetes' DRA e2e suite</h2><p class='verdict "
        f"{Verdict.PASS if q['outcome'] == QUALIFIED else Verdict.FAIL}'>{_e(summary(q))}</p><table>{lab}</table>{diagnosis}"
        f"<h3>Why specs skipped</h3><ul>{skips or '<li>none skipped</li>'}</ul>"
        f"<table><tr><th>outcome</th><th>duration</th><th>spec</th></tr>{rows}</table>"
    )


STYLE = "pre{white-space:pre-wrap;max-width:110em}"  # after page_style's rules


def write(q: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    as_json, as_html = out_dir / "qualification.json", out_dir / "qualification.html"
    as_json.write_text(json.dumps(q, indent=2) + "\n")
    head = page_style.head(f"dralab qualify: {q['outcome']}", page_style.VERDICTS + STYLE)
    as_html.write_text(f"{head}<h1>dralab qualify</h1>{render_section(q)}</body></html>\n")
    return as_json, as_html


def _record_path(cluster: str, kubernetes_version: str, host: str) -> Path:
    # Labs dralab starts are new clusters each time: what is qualified is their provider and version;
    # another cluster is qualified by its API server.
    owned = Capability.LAB_STARTS in provider(cluster).capabilities
    key = f"{cluster}-{kubernetes_version}" if owned else f"{cluster}-" + "".join(c if c.isalnum() else "_" for c in host)
    return labs_root() / "qualifications" / f"{key}.json"


def record(q: dict[str, Any], report_dir: Path) -> Path:
    path = _record_path(q["cluster"], q["kubernetes_version"], q["server"].split(" ")[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"summary": summary(q), "finished": q["finished"], "report": str(report_dir / "qualification.html")}) + "\n")
    return path


def recorded(cluster: str, kubernetes_version: str, kubeconfig: str | None = None) -> str:
    """The last qualification of such a cluster (of this kubeconfig's API server), as certify's
    environment names it."""
    host = ""
    if kubeconfig:
        from clusters.api_client import client_for

        host = client_for(kubeconfig).configuration.host
    path = _record_path(cluster, kubernetes_version, host)
    if not path.exists():
        return f"not run (`dralab qualify --cluster {cluster}` runs Kubernetes' own DRA e2e suite on such a cluster)"
    r = json.loads(path.read_text())
    return f"{r['summary']}; finished {r['finished']}; {r['report']}"
