"""`dralab selfcheck`: dralab's verdicts on the reference drivers' own variants, checked.

A broken variant (MUT-01) must FAIL exactly the requirements it breaks, each FAIL's message
naming the violation it commits (the profile's `violations`), and WARN where it only misses a
SHOULD; a valid variant (MUT-02), another legitimate choice than ours, must be CERTIFIED. Each
variant is one certification run (reports.certify.SuiteRun) of only the suites it concerns;
the runs share their labs (--reuse-labs), which go at the end, also after a failure or Ctrl-C.
Written as selfcheck.json and selfcheck.html, each variant's own report beside them.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from basics.errors import BadInput
from basics.junit_properties import Verdict
from basics.progress import console
from clusters.config import DNS_LABEL, saved_config
from basics import shards
from drivers_under_test.profile import METADATA_DISABLED, load_profile, shipped_profiles
from reports import page_style
from reports.certify import NoResults, SuiteRun, certifiable, lab_names, selection
from reports.report import CERTIFIED, INCOMPLETE, first_message

VALID, BROKEN = "valid", "broken"
LAB_PREFIX = "self"
# Configurations the suites deploy by name (MD-15 turns metadata off): neither valid nor broken.
CONFIGURATIONS = {METADATA_DISABLED}
# What a seed sweep (--seeds) checks every valid variant on: the checks over the calls, the
# containers and the claims of the generated workloads (suites/kubelet_plugin, suites/device_metadata/
# in_containers.py, suites/resource_claim_status/test_status_over_the_run.py), whatever the
# variant's choice concerns.
SWEPT = [
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
    "MD-16",
    "MD-19",
    "ST-01",
    "ST-02",
    "ST-07",
    "ST-08",
]


@dataclass(frozen=True)
class Case:
    """One variant of a reference driver and what dralab must say about it."""

    variant: str
    driver: str  # the driver profile's name
    kind: str  # VALID or BROKEN
    breaks: list[str] = field(default_factory=list)
    warns: list[str] = field(default_factory=list)
    violations: dict[str, str] = field(default_factory=dict)  # ID -> what its FAIL message must say (a regex)
    concerns: list[str] = field(default_factory=list)  # a valid variant: the IDs or suites its choice can change
    seeds: int = 1  # of generated workloads, drawn in turn (Variant.seeds)

    @property
    def name(self) -> str:
        return f"{self.driver}:{self.variant}"

    def expected(self, checked: list[str] | None = None) -> dict[str, str]:
        """Requirement ID -> the verdict dralab must reach; for a valid variant, the outcome (and
        the warnings of the IDs it is `checked` on)."""
        if self.kind == VALID:
            return {"outcome": CERTIFIED, **{i: Verdict.WARNING for i in _named(self.warns, checked)}}
        return {**{i: Verdict.FAIL for i in self.breaks}, **{i: Verdict.WARNING for i in self.warns}}


def cases() -> list[Case]:
    """Every variant of every shipped reference profile, broken or valid, configurations aside."""
    found = []
    for name in shipped_profiles():
        profile = load_profile(name)
        for variant, v in sorted(profile.variants.items()):
            if variant in CONFIGURATIONS:
                continue
            found.append(
                Case(
                    variant,
                    profile.name,
                    BROKEN if v.breaks else VALID,
                    list(v.breaks),
                    list(v.warns),
                    dict(v.violations),
                    list(v.concerns),
                    v.seeds,
                )
            )
    return found


# A seed sweep's case of a reference driver itself, no variant (certify checks it on its own).
REFERENCE = "reference"


def references() -> list[Case]:
    """The reference drivers themselves, as valid cases: those with valid variants."""
    return [Case(REFERENCE, driver, VALID) for driver in sorted({c.driver for c in cases() if c.kind == VALID})]


def chosen(all_cases: list[Case], only: str | None, variants: tuple[str, ...]) -> list[Case]:
    """The cases `--variant` names (driver:variant or variant), then those that concern `--only`'s
    IDs or suites: broken ones breaking or warning on one of them, valid ones whose driver the
    IDs apply to. BadInput for a variant no profile has."""
    picked = all_cases
    if variants:
        unknown = [v for v in variants if not any(v in (c.variant, c.name) for c in all_cases)]
        if unknown:
            raise BadInput(f"--variant {', '.join(unknown)}: no reference driver has it; `dralab selfcheck --list` lists them")
        picked = [c for c in all_cases if c.variant in variants or c.name in variants]
    if only:
        selection(only)  # BadInput for what names no suite
        picked = [c for c in picked if _named(c.breaks + c.warns, only) or (c.kind == VALID and _checked_on(c, only))]
    return picked


def _named(ids: list[str], names: str | list[str] | None) -> list[str]:
    """The IDs that `names` (IDs or suites, a comma-separated string or a list) names; all of them for None."""
    if names is None:
        return ids
    wanted = {p.strip().upper() for p in (names.split(",") if isinstance(names, str) else names) if p.strip()}
    return [i for i in ids if i in wanted or i.split("-")[0] in wanted]


def _checked_on(case: Case, only: str | None) -> list[str]:
    """A valid variant's requirements: those of its driver's that its profile is certifiable on (the
    lab's and the cluster's own checks judge no driver choice), of them those its choice concerns
    (all without `concerns`), and of those what --only names."""
    return _named(_named(certifiable(load_profile(case.driver)), case.concerns or None), only)


def _suites_of(case: Case, only: str | None, sweep: bool = False) -> str:
    """certify's --only for a case: what it breaks or warns on; for a valid variant coming up (DEP)
    and the requirements it is checked on (in a seed sweep, those of SWEPT its driver has, of them
    what --only names)."""
    if case.kind == BROKEN:
        return ",".join(case.breaks + case.warns)
    if sweep:
        return ",".join(["DEP", *_named(_named(certifiable(load_profile(case.driver)), SWEPT), only)])
    return ",".join(["DEP", *_checked_on(case, only)])


@dataclass
class Observed:
    """What dralab said about a variant, against what it must say."""

    variant: str
    driver: str
    kind: str
    breaks: list[str]
    expected: dict[str, str]
    observed: dict[str, str]
    messages: dict[str, str]  # ID -> the first line of its FAIL/ERROR/WARNING
    match: bool
    why: str  # for a mismatch: what differs
    seconds: float
    report: str


def judge(case: Case, report: dict[str, Any], seconds: float, report_path: Path, checked: list[str] | None = None) -> Observed:
    """Compare a variant's certification report (of the IDs and suites `checked`) with what dralab
    must say about it."""
    verdicts = {r["id"]: r["verdict"] for r in report["requirements"]}
    messages = {
        r["id"]: first_message(r)
        for r in report["requirements"]
        if r["verdict"] in (Verdict.FAIL, Verdict.ERROR, Verdict.BLOCKED, Verdict.WARNING)
    }
    said = {r["id"]: _failures(r) for r in report["requirements"]}
    expected = case.expected(checked)
    outcome = report["summary"]["outcome"]
    observed = {"outcome": outcome, **verdicts} if case.kind == VALID else verdicts
    problems = []
    for rid, want in expected.items():
        got = observed.get(rid, "not run")
        if got != want:
            problems.append(f"{rid}: {got}, expected {want}" + (f" ({messages[rid][:160]})" if rid in messages else ""))
        elif want == Verdict.FAIL and not re.search(case.violations.get(rid, r"(?!)"), said.get(rid, "")):
            problems.append(
                f"{rid} FAILed without naming the violation /{case.violations.get(rid, '(none declared)')}/: {messages.get(rid, '')[:200]}"
            )
    # Exactly what it breaks: no other requirement of the driver may FAIL, nor the lab ERROR.
    problems += [
        f"{r['id']}: {r['verdict']} ({messages.get(r['id'], '')[:160]})"
        for r in report["requirements"]
        if r["id"] not in expected and r["verdict"] in (Verdict.FAIL, Verdict.ERROR, Verdict.BLOCKED)
    ]
    return Observed(
        case.variant,
        case.driver,
        case.kind,
        case.breaks,
        expected,
        observed,
        messages,
        not problems,
        "; ".join(problems),
        round(seconds, 1),
        str(report_path),
    )


def _failures(requirement: dict[str, Any]) -> str:
    """All that a requirement's FAILed tests said: each message and the failure's own lines of its
    traceback (pytest's "E" lines; the message is cut to its first lines, and the violation a check
    names is often on a later one, under a header). Not the traceback's source lines, which quote
    the check's wording whether or not it was said."""
    failed = [t for t in requirement["tests"] if t["verdict"] == Verdict.FAIL]
    return "\n".join(
        [t.get("message") or "" for t in failed]
        + [line[1:].strip() for t in failed for line in (t.get("traceback") or "").splitlines() if line.startswith("E ")]
    )


def run(selected: list[Case], out_dir: Path, only: str | None, seeds: int | None = None, lab_prefix: str = LAB_PREFIX) -> list[Observed]:
    """Certify each case on shared labs (named after `lab_prefix`); the labs go at the end whatever
    happens. With `seeds`, each run draws its generated workloads with seeds 1 to `seeds` (the
    same for every case). The report is written again after each case, so a run stopped halfway
    keeps what it judged (for --merge)."""
    results: list[Observed] = []
    started_all = time.monotonic()
    try:
        for n, case in enumerate(selected, 1):
            console.print(
                f"[bold]selfcheck {n}/{len(selected)}: {case.name}[/bold] ({case.kind}"
                f"{', breaks ' + ', '.join(case.breaks) if case.breaks else ''})"
            )
            checked = _suites_of(case, only, sweep=bool(seeds))
            paths, ids = selection(checked)
            suite_run = SuiteRun(
                out_dir / "variants" / f"{case.driver}-{case.variant}",
                paths,
                ids,
                drivers=[load_profile(case.driver)],
                variant=None if case.variant == REFERENCE else case.variant,
                lab_prefix=lab_prefix,
                reuse_labs=True,
                seed=1 if seeds else None,
                seeds=seeds or case.seeds,
            )
            started = time.monotonic()
            try:
                report = suite_run.report(suite_run.pytest(), {}, {})
            except NoResults:  # no verdict at all: that is not what dralab must say either
                report = {"requirements": [], "summary": {"outcome": INCOMPLETE}}
            result = judge(case, report, time.monotonic() - started, suite_run.out_dir / "report.html", checked.split(","))
            results.append(result)
            write(results, out_dir, time.monotonic() - started_all)
            console.print(
                f"  {'[green]match[/green]' if result.match else '[red]MISMATCH[/red]'} in "
                f"{result.seconds:.0f}s: {result.why or _short(result.observed)}"
            )
            if any(r["verdict"] == Verdict.ERROR for r in report["requirements"]) or not report["requirements"]:
                # A lab that broke under this variant is not one to reuse: the next starts afresh.
                remove_labs(lab_prefix)
    finally:
        remove_labs(lab_prefix)
    return results


def _short(observed: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in observed.items() if v != Verdict.SKIP)


def remove_labs(lab_prefix: str) -> None:
    """The local labs named under `lab_prefix` (reused runs', dralab mutants' too), each removed."""
    from clusters.local.cluster import remove

    for name in lab_names(lab_prefix):
        cfg = saved_config(name)
        if cfg is not None:
            console.print(f"removing lab {name}")
            for left in remove(cfg):
                console.print(f"[red]left behind (LAB-05): {left}[/red]")


def shard_of(selected: list[Case], shard: tuple[int, int]) -> list[Case]:
    """The cases part K of N takes (--shard K/N): one case each in turn by name, as basics.shards
    places tests (a variant's certification takes about as long as another's), so every part of
    a split computes the same split."""
    k, n = shard
    placed = shards.assign((c.name for c in selected), n)
    return [c for c in selected if placed[c.name] == k]


def merged(parts: tuple[Path, ...], wanted: list[Case]) -> tuple[list[Observed], list[str], float]:
    """The variants judged in earlier runs' out directories (shards of one selfcheck, or a run
    stopped halfway and its rest), of those `wanted`: a variant judged in two parts counts as the
    later part says (a re-run). Also the wanted variants no part judged, and the longest part's
    wall time (parts run side by side)."""
    by_name: dict[str, Observed] = {}
    wall = 0.0
    for part in parts:
        path = part / "selfcheck.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise BadInput(f"--merge {part}: no selfcheck report to read ({path}: {e}); give a selfcheck's --out directory") from e
        wall = max(wall, data["summary"]["wall_seconds"])
        for v in data["variants"]:
            by_name[f"{v['driver']}:{v['variant']}"] = Observed(**v)
    names = [c.name for c in wanted]
    return [by_name[n] for n in names if n in by_name], [n for n in names if n not in by_name], wall


def write(results: list[Observed], out_dir: Path, wall_seconds: float, not_run: list[str] | None = None) -> tuple[Path, Path]:
    matched = sum(r.match for r in results)
    data = {
        "summary": {
            "variants": len(results),
            "matched": matched,
            "wall_seconds": round(wall_seconds, 1),
            "certification_seconds": round(sum(r.seconds for r in results), 1),
            "valid": sum(r.kind == VALID for r in results),
            "broken": sum(r.kind == BROKEN for r in results),
            "not_run": not_run or [],
        },
        "variants": [asdict(r) for r in results],
    }
    as_json, as_html = out_dir / "selfcheck.json", out_dir / "selfcheck.html"
    as_json.write_text(json.dumps(data, indent=2))
    as_html.write_text(render_html(data, out_dir))
    return as_json, as_html


# After page_style's rules.
STYLE = """table{width:100%}
tr.PASS td:nth-child(6){color:#070}.notrun{color:#b00}tr.FAIL td:nth-child(6){color:#b00;font-weight:bold}"""


def render_html(data: dict[str, Any], out_dir: Path) -> str:
    e = html.escape

    def cell(mapping: dict[str, str]) -> str:
        return "<br>".join(e(f"{k}: {v}") for k, v in mapping.items() if v != Verdict.SKIP) or "-"

    rows = "".join(
        f"<tr class='{Verdict.PASS if v['match'] else Verdict.FAIL}'><td>{e(v['driver'])}</td><td>{e(v['variant'])}</td>"
        f"<td>{e(v['kind'])}</td><td>{cell(v['expected'])}</td><td>{cell(v['observed'])}</td>"
        f"<td>{'match' if v['match'] else 'MISMATCH: ' + e(v['why'])}</td><td>{v['seconds']:.0f}s</td>"
        f"<td><a href='{e(Path(os.path.relpath(v['report'], out_dir)).as_posix())}'>report</a></td></tr>"
        for v in data["variants"]
    )
    s = data["summary"]
    return f"""{page_style.head("dralab selfcheck", STYLE)}
<h1>dralab selfcheck: {s["matched"]} of {s["variants"]} variants as expected</h1>
<p>{s["broken"]} broken variants (MUT-01: each must FAIL what it breaks, naming the violation), {s["valid"]} valid
variants (MUT-02: each must be CERTIFIED); {s["wall_seconds"]}s.</p>
{f"<p class='notrun'>Not run: {e(', '.join(s['not_run']))}</p>" if s.get("not_run") else ""}
<table><tr><th>driver</th><th>variant</th><th>kind</th><th>expected</th><th>observed</th><th>match</th>
<th>time</th><th>its report</th></tr>{rows}</table></body></html>
"""


def _lab_prefix(prefix: str) -> str:
    if not DNS_LABEL.match(prefix + "2") or len(prefix) > 16:
        raise BadInput(
            f"--lab-prefix {prefix!r}: a lab name starts with it, so it must be lower-case letters, digits "
            "and dashes, not starting with a dash, at most 16 characters (say --lab-prefix self2)"
        )
    return prefix


@click.command()
@click.option("--out", "out_dir", default="selfcheck", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--only",
    default=None,
    help="Comma-separated suites or requirement IDs: the broken variants that "
    "break one of them, and the valid variants checked on them only.",
)
@click.option("--variant", "variants", multiple=True, help="Only this variant (name or driver:variant; repeatable).")
@click.option(
    "--list", "list_only", is_flag=True, help="Print the variants, what each breaks and the requirements each is checked on; run nothing."
)
@click.option("--json", "as_json", is_flag=True, help="With --list: a JSON list of {variant, driver, kind, breaks, checked_on}.")
@click.option("--kind", type=click.Choice([VALID, BROKEN]), default=None, help="Only the valid or only the broken variants.")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=None,
    help="A sweep for false FAILs (`make seeds`): the "
    f"reference DRA drivers and their valid variants, each checked on {', '.join(SWEPT)} with its generated "
    "workloads drawn with seeds 1 to N in turn.",
)
@click.option(
    "--lab-prefix",
    default=LAB_PREFIX,
    show_default=True,
    callback=lambda _c, _p, v: _lab_prefix(v),
    help="Name the labs after this (two selfchecks side by side each need their own).",
)
@click.option(
    "--shard",
    "shard",
    default=None,
    callback=lambda _c, _p, v: v and shards.parse(v),
    help="Part K of N (K/N): the variants this process takes, as every part computes them; join the parts with --merge.",
)
@click.option(
    "--merge",
    "parts",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="An earlier run's --out directory (repeatable): join their verdicts into one report in --out, "
    "naming the selected variants none of them ran; certifies nothing.",
)
def selfcheck(
    out_dir: Path,
    only: str | None,
    variants: tuple[str, ...],
    list_only: bool,
    as_json: bool,
    kind: str | None,
    seeds: int | None,
    lab_prefix: str,
    shard: tuple[int, int] | None,
    parts: tuple[Path, ...],
) -> None:
    """Certify the reference drivers' variants and check dralab's verdicts on them (MUT-01, MUT-02):
    broken ones must FAIL what they break, valid ones must be CERTIFIED (exit 0 all as expected,
    1 a mismatch, 2 bad input)."""
    selected = [c for c in chosen((references() if seeds else []) + cases(), only, variants) if kind in (None, c.kind)]
    if seeds:
        selected = [c for c in selected if c.kind == VALID and _named(certifiable(load_profile(c.driver)), SWEPT)]
    if shard:
        if parts:
            raise BadInput("--shard and --merge: a part is run with --shard, the parts joined with --merge alone")
        selected = shard_of(selected, shard)
    if list_only:
        listing = [
            {
                "variant": c.variant,
                "driver": c.driver,
                "kind": c.kind,
                "breaks": c.breaks,
                "checked_on": _suites_of(c, only, sweep=bool(seeds)).split(","),
            }
            for c in selected
        ]
        if as_json:
            click.echo(json.dumps(listing, indent=2))
        else:
            for c, entry in zip(selected, listing):
                click.echo(
                    f"{c.name:40} {c.kind:7} {'breaks ' + ', '.join(c.breaks) if c.breaks else ''}"
                    f"{' warns ' + ', '.join(c.warns) if c.warns else ''}"
                    f"{' checked on ' + ', '.join(entry['checked_on']) if c.kind == VALID else ''}"
                )
        return
    if as_json:
        raise BadInput("--json goes with --list")
    if not selected:
        raise BadInput(f"no variant matches --only {only!r} --variant {' '.join(variants)!r}; see `dralab selfcheck --list`")
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    not_run: list[str] = []
    if parts:
        results, not_run, wall = merged(parts, selected)
    else:
        results = run(selected, out_dir, only, seeds, lab_prefix)
        wall = time.monotonic() - started
    as_json_path, as_html = write(results, out_dir, wall, not_run)
    matched = sum(r.match for r in results)
    console.print(
        f"selfcheck: {matched} of {len(results)} variants as expected in {wall:.0f}s"
        f"{f'; {len(not_run)} not run: ' + ', '.join(not_run) if not_run else ''}; {as_html}, {as_json_path}",
        markup=False,
    )
    sys.exit(0 if matched == len(results) and not not_run else 1)
