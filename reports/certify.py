"""`dralab certify`: run every applicable suite against a lab and summarise the verdicts per requirement.

The suites run in a pytest subprocess: against the embedded local lab (started and torn down by
the pytest plugin's session fixture, under its own lab names) or a given cluster. It writes the
JUnit XML, allure results and, with the allure CLI the set-up installs, the allure HTML report,
and report.json and report.html (reports/report.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from basics.children import run_all_to_completion
from basics.errors import BadInput, LabBroken
from basics.junit_properties import Verdict
from basics.progress import console, run_logged
from clusters import residue, versions
from clusters.api_client import require_reachable
from clusters.lab_cli import cluster_option, kubernetes_version_option
from clusters.provider_registry import DEFAULT, provider
from clusters import providers
from clusters.lab_configurations import GATES_OFF, PLACEMENT, SCHEDULER_GATE_OFF, SESSION_LAB, at_version, on_kind, renamed, scale
from drivers_under_test.deploy import image_archives
from drivers_under_test.profile import NO_HARDWARE, Capability, DriverProfile
from drivers_under_test.validate import validate_or_raise
from reports import qualification
from reports.report import EXIT_CODES, INCOMPLETE, NOTHING, build, first_message, last_line, read_junit, write
from suites import catalogue

REPO = Path(__file__).resolve().parents[1]

# Requirement ID prefix -> the suite that checks it (`--only`).
SUITES = {
    "DEP": "suites/deployment",
    "KP": "suites/kubelet_plugin",
    "LAB": "suites/lab",
    "MD": "suites/device_metadata",
    "ST": "suites/resource_claim_status",
    "DA": "suites/derived_attributes",
    "DP": "suites/device_plugin",
}
# Local labs certify starts are named apart from a test run's ("e2e..."), so both can run at once.
LAB_PREFIX = "cert"
# Our progress lines instead of pytest's terminal output; its addopts name terminal options (-ra).
QUIET = ("-p", "no:terminal", "-o", "addopts=--strict-markers", "-p", "no:cacheprovider")
# pytest's exit code for a usage error: a bad option value that got past certify's own checks.
PYTEST_USAGE_ERROR = 4
# pytest's exit code when it ran nothing: a shard none of the chosen tests went to.
PYTEST_NO_TESTS = 5
# pytest runs side by side on a local cluster, each on labs of its own (--shards).
DEFAULT_SHARDS = 2


def selection(only: str | None) -> tuple[list[str], list[str]]:
    """The suites `--only MD,DA-04` names, and when it names single IDs, the filter for pytest's
    --requirement-ids (prefixes for whole suites, the IDs). No --only: every suite, no filter.
    BadInput for what names no suite."""
    if not only:
        return ["suites"], []
    wanted = [p.strip().upper() for p in only.split(",") if p.strip()]
    unknown = [p for p in wanted if p.split("-")[0] not in SUITES or not re.fullmatch(r"[A-Z]+(-\d+)?", p)]
    if unknown or not wanted:
        raise BadInput(
            f"--only {only!r}: unknown suite(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(SUITES)} or requirement IDs such as MD-01"
        )
    uncatalogued = [p for p in wanted if "-" in p and catalogue.get(p) is None]
    if uncatalogued:
        known = sorted(i for i in catalogue.load() if i.split("-")[0] in {p.split("-")[0] for p in uncatalogued})
        raise BadInput(
            f"--only {only!r}: {', '.join(uncatalogued)} is not a requirement of the catalogue, so it "
            f"selects nothing; its suite has {', '.join(known)}"
        )
    prefixes = {p.split("-")[0] for p in wanted}
    ids = [p for p in dict.fromkeys(wanted) if "-" in p and p.split("-")[0] not in wanted]  # a suite wins over its IDs
    # Whatever else is chosen, the driver must first come up (DEP-01).
    paths = [SUITES[p] for p in SUITES if p in prefixes | {"DEP"}]
    return paths, [p for p in dict.fromkeys(wanted) if p in prefixes] + ids if ids else []


def pytest_command(paths: list[str]) -> list[str]:
    """pytest on `paths` (relative to the package root) with dralab's plugin, from a checkout or an
    installed wheel. The plugin is named by its entry point, so that it loads where plugins are
    not (PYTEST_DISABLE_PLUGIN_AUTOLOAD), and once where they are. An installed dralab has no
    pyproject.toml: an empty ini file keeps pytest from taking the configuration of a directory
    above the installation (a vendor's repository holding the venv)."""
    config = [] if (REPO / "pyproject.toml").is_file() else ["-c", os.devnull, f"--rootdir={REPO}"]
    return [sys.executable, "-m", "pytest", "-p", "dralab", *config, *(str(REPO / p) for p in paths)]


def lab_hardware(option: str | None, drivers: list[DriverProfile]) -> str | None:
    """The hardware of the session lab's nodes, as pytest's --hardware takes it: --hardware when
    given, else what the driver profiles expect (`none`: no emulated hardware at all), else None
    (the lab's default, for the reference drivers). BadInput for an unknown profile, or profiles
    that expect different hardware."""
    if option is None:
        expected = {d.hardware for d in drivers if d.needs_hardware}
        if len(expected) > 1:
            raise BadInput(
                f"the driver profiles expect different hardware ({', '.join(sorted(expected))}) on the "
                "same lab: certify them one at a time, or choose one with --hardware"
            )
        if not drivers:
            return None
        return expected.pop() if expected else NO_HARDWARE
    if option == NO_HARDWARE:
        return option
    from fake_hardware.profile import load_node_profile

    try:
        load_node_profile(option)
    except Exception as e:
        raise BadInput(f"--hardware {option!r}: {e}; profiles: fake_hardware/profiles/*.yaml, a .yaml path, or {NO_HARDWARE}") from None
    return str(Path(option).resolve()) if Path(option).suffix in (".yaml", ".yml") else option


def _nodes_hardware(hardware: str | None) -> dict[str, str]:
    """Node -> hardware profile of the session lab started with pytest's --hardware `hardware`."""
    if hardware is None:
        return SESSION_LAB.hardware
    return {} if hardware == NO_HARDWARE else {node: hardware for node in SESSION_LAB.hardware}


# What a profile that claims nothing dralab checks is told, by certify and by `driver validate`.
NO_CAPABILITY = (
    f"no DRA driver (drivers: every DRA driver is checked on the kubelet-plugin contract, KP) and no "
    f"capability dralab checks (capabilities: {', '.join(c.value for c in Capability)})"
)


def certifiable(profile: DriverProfile) -> list[str]:
    """The driver requirements the profile's capabilities make it certifiable on (empty: none)."""
    return catalogue.certifiable([c.value for c in profile.capabilities], bool(profile.drivers))


def _check_variant(variant: str | None, drivers: list[DriverProfile]) -> None:
    if variant is None:
        return
    if len(drivers) != 1:
        raise BadInput(f"--variant {variant!r} applies to one driver profile: give exactly one --driver")
    if variant not in drivers[0].variants:
        raise BadInput(
            f"--variant {variant!r}: driver profile {drivers[0].source} has no such variant; "
            f"it has {', '.join(drivers[0].variants) or 'none'}"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def environment(
    cluster: str,
    drivers: list[DriverProfile],
    variant: str | None,
    hardware: dict[str, str],
    selected: list[str],
    kubernetes_version: str = versions.KUBERNETES,
    kubeconfig: str | None = None,
) -> dict[str, object]:
    """What the verdicts were reached on: what was selected, component versions, the drivers'
    images with their digests, for the embedded lab its gates and hardware, and the cluster's
    last qualification by Kubernetes' own DRA e2e suite (`dralab qualify`)."""
    from clusters.local.preflight import known_feature_gates
    from clusters.provision import provision

    tools = provision(offline=True, kubernetes_version=kubernetes_version)
    reference = tools.drivers_image
    env: dict[str, object] = {
        "suites": selected,
        "cluster": cluster,
        **tools.versions(),
        "driver profiles": [str(d.source) for d in drivers] or "the reference drivers",
        "driver images": [
            f"{reference.ref} {reference.digest}" if archive == reference.archive else f"{archive} sha256:{_sha256(archive)}"
            for d in drivers
            for archive in image_archives(d, reference.archive)
        ]
        or [f"{reference.ref} {reference.digest}"],
    }
    if variant:
        env["driver variant"] = variant
    one_pod = [d.name for d in drivers if d.in_variant(variant if variant in d.variants else None).claims_serve_one_pod]
    if one_pod:
        env["claims serve one pod"] = (
            f"{', '.join(one_pod)} (claimsServeOnePod): the suites' pods share no claim; "
            "requirements about claims shared by pods were judged on none"
        )
    one_container = [d.name for d in drivers if d.claims_serve_one_container]
    if one_container:
        env["claims serve one container"] = (
            f"{', '.join(one_container)} (claimsServeOneContainer): no two containers "
            "of the suites' pods use one claim; requirements about a claim's requests "
            "in several containers were judged on none"
        )
    env["cluster qualification"] = qualification.recorded(cluster, kubernetes_version, kubeconfig)
    if providers.Capability.LAB_STARTS in provider(cluster).capabilities:
        gates = at_version(SESSION_LAB, kubernetes_version, known_feature_gates(tools))[0].feature_gates
        env.update({"feature gates": gates, "hardware": hardware})
    return env


def _allure_html(results: Path, out: Path) -> Path | None:
    """The allure 3 HTML report of the results, when `dralab provision` installed the allure CLI."""
    from clusters.provision import cache_root, provision

    try:
        cli = provision(offline=True).allure
    except BadInput as e:
        console.print(f"[yellow]no allure HTML report: {e}[/yellow]")
        return None
    # One self-contained file (allurerc.json: singleFile), so it opens from disk like report.html.
    run_logged(
        [cli, "generate", results, "-o", out, "-c", Path(__file__).with_name("allurerc.json"), "--report-name", "dralab certification"],
        cache_root() / "logs" / "allure.log",
        what="allure generate",
    )
    return out / "index.html"


@dataclass(frozen=True)
class Shard:
    """One of the pytest runs side by side: its JUnit XML, its allure results, its own options."""

    junit: Path
    allure: Path
    options: list[str]


def shard_prefix(prefix: str, k: int) -> str:
    """The lab name prefix of shard k: the first keeps the run's."""
    return prefix if k == 1 else f"{prefix}{k}"


def _merge_junit(parts: list[Path], into: Path) -> None:
    """One JUnit XML of the test suites of `parts` (those a run wrote); the parts removed."""
    merged = ET.Element("testsuites")
    for part in parts:
        if part.exists():
            root = ET.parse(part).getroot()
            merged.extend(root.iter("testsuite") if root.tag == "testsuites" else [root])
            part.unlink()
    ET.ElementTree(merged).write(into, encoding="utf-8", xml_declaration=True)


def _merge_dirs(parts: list[Path], into: Path) -> None:
    """The files of `parts` moved into `into` (emptied first); the parts removed."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for part in parts:
        if part.is_dir():
            for f in part.iterdir():
                f.rename(into / f.name)
            part.rmdir()


class NoResults(LabBroken):
    """The suites wrote no JUnit XML: no verdict at all, INCOMPLETE (exit 3 as the lab's failure)."""


@dataclass
class SuiteRun:
    """One pytest run of the suites into out_dir, and the report built from its JUnit XML. Local
    labs are named under lab_prefix; with reuse_labs a live lab of the same configuration is used
    as it is and left up (dralab selfcheck runs variants one after another on the same labs)."""

    out_dir: Path
    paths: list[str]
    ids: list[str]
    cluster: str = DEFAULT
    kubeconfig: str | None = None
    drivers: list[DriverProfile] = field(default_factory=list)
    variant: str | None = None
    hardware: str | None = None
    lab_prefix: str = LAB_PREFIX
    reuse_labs: bool = False
    workload_image: str | None = None
    kubernetes_version: str = versions.KUBERNETES
    seed: int | None = None  # generated workloads (MUT-03): hypothesis's seed and examples per driver
    budget: int | None = None
    seeds: int | None = None
    shards: int = 1
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        # Without --hardware, the lab has what the drivers' profiles expect (the matrix's and the
        # selfcheck's runs too: a CPU driver on the default GPU nodes pinned containers to CPUs 0-63).
        if self.hardware is None:
            self.hardware = lab_hardware(None, self.drivers)

    @property
    def junit(self) -> Path:
        return self.out_dir / "junit.xml"

    def pytest(self) -> int:
        """Run the suites, in `shards` pytest processes side by side (each with labs of its own,
        their JUnit XML and allure results merged after); pytest's exit code. BadInput when pytest
        refused the options."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        (self.out_dir / "trace.jsonl").unlink(missing_ok=True)  # each lab's teardown appends its calls
        cmd = [
            *pytest_command(self.paths),
            f"--cluster={self.cluster}",
            f"--results-dir={self.out_dir}",
            "--progress",
            *QUIET,
            *(f"--driver={d.source}" for d in self.drivers),
        ]
        cmd += [f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []
        cmd += [f"--hardware={self.hardware}"] if self.hardware else []
        cmd += [f"--driver-variant={self.variant}"] if self.variant else []
        cmd += [f"--requirement-ids={','.join(self.ids)}"] if self.ids else []
        cmd += ["--reuse-labs"] if self.reuse_labs else []
        cmd += [f"--workload-image={self.workload_image}"] if self.workload_image else []
        cmd += [f"--kubernetes-version={self.kubernetes_version}"]
        cmd += [f"--seed={self.seed}"] if self.seed is not None else []
        cmd += [f"--budget={self.budget}"] if self.budget is not None else []
        cmd += [f"--seeds={self.seeds}"] if self.seeds is not None else []
        console.print(
            f"certify: {', '.join(self.paths)}{' (' + ', '.join(self.ids) + ')' if self.ids else ''} on the "
            f"{self.cluster} cluster (Kubernetes {self.kubernetes_version}){f' (variant {self.variant})' if self.variant else ''}"
            f"{f', in {self.shards} runs side by side' if self.shards > 1 else ''}; results in {self.out_dir}"
        )
        if self.shards > 1:  # built once, before the runs would each build what is missing
            from clusters.provision import provision

            provision(kubernetes_version=self.kubernetes_version)
        self.started = time.monotonic()
        with reserved_prefix(self.lab_prefix, self.shards, self.reuse_labs) as self.lab_prefix:
            parts = [self._part(k) for k in range(1, self.shards + 1)]
            codes = run_all_to_completion([[*cmd, *part.options] for part in parts], cwd=REPO)
        if PYTEST_USAGE_ERROR in codes:
            raise BadInput(f"pytest refused the options (exit {PYTEST_USAGE_ERROR}): {' '.join(cmd)}")
        if self.shards > 1:
            _merge_junit([part.junit for part in parts], self.junit)
            _merge_dirs([part.allure for part in parts], self.out_dir / "allure-results")
        ran = [code for code in codes if code != PYTEST_NO_TESTS] or [PYTEST_NO_TESTS]
        return max(ran)

    def _part(self, k: int) -> "Shard":
        """The options of shard k: its part of the tests, its labs' names, its JUnit XML and allure results."""
        alone = self.shards == 1
        junit = self.junit if alone else self.out_dir / f"junit-{k}.xml"
        allure = self.out_dir / ("allure-results" if alone else f"allure-results-{k}")
        return Shard(
            junit,
            allure,
            [
                f"--junitxml={junit}",
                f"--alluredir={allure}",
                "--clean-alluredir",
                f"--lab-prefix={shard_prefix(self.lab_prefix, k)}",
                *([] if alone else [f"--shard={k}/{self.shards}"]),
            ],
        )

    def report(self, rc: int, nodes_hardware: dict[str, str], more: dict[str, object]) -> dict[str, Any]:
        """report.json and report.html from the run's JUnit XML; NoResults when there is none."""
        if not self.junit.exists():
            raise NoResults(f"{INCOMPLETE}: the suites produced no results (pytest exit {rc}); logs under {self.out_dir / 'logs'}")
        env = {
            **environment(
                self.cluster, self.drivers, self.variant, nodes_hardware, self.paths + self.ids, self.kubernetes_version, self.kubeconfig
            ),
            **more,
        }
        report = build(read_junit(self.junit, self.out_dir), env, time.monotonic() - self.started)
        write(report, self.out_dir)
        return report


@click.command()
@click.option("--out", "out_dir", default="out", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@cluster_option(help_text="local: the embedded lab; kind: the same lab as a kind cluster (LAB-06); kubeconfig: your cluster.")
@click.option("--kubeconfig", default=None, help="With --cluster kubeconfig: the cluster's kubeconfig.")
@click.option(
    "--driver",
    "driver_names",
    multiple=True,
    help="Driver profile under test (name or .yaml; repeatable); default: each suite's reference drivers.",
)
@click.option(
    "--variant",
    default=None,
    help="Deploy the --driver profile in this variant of its own, e.g. a broken one (MUT-01) to see which requirements it fails.",
)
@click.option(
    "--hardware",
    default=None,
    help="Hardware profile of the local lab's nodes (name or .yaml, or "
    f"{NO_HARDWARE}); default: what the --driver profiles expect, for the reference drivers "
    f"{', '.join(sorted(set(SESSION_LAB.hardware.values())))}.",
)
@click.option(
    "--workload-image",
    default=None,
    help="Image of the suites' pods, pulled when a node lacks it "
    "(needs sh, busybox-like coreutils, ip and incluster-whoami); default: the lab's dralab.dev/workload:lab.",
)
@click.option(
    "--only", default=None, help=f"Comma-separated suites by requirement prefix ({', '.join(SUITES)}) or requirement IDs (MD-01)."
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the generated workloads (hypothesis); default: a "
    "random one, in the evidence of the check that draws them. The same seed draws the same pod shapes.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=None,
    help="Pod shapes the generated workloads try per "
    "driver (default 10: the widest shapes, three claims a pod, come up in 98 of 100 seeds).",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Draw the generated workloads with this many seeds in turn (--seed and those after it), each with --budget shapes.",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=4),
    default=DEFAULT_SHARDS,
    show_default=True,
    help="On the local cluster: pytest runs side by side, each on labs of its own, a driver's tests "
    "in one of them, the cluster's checks spread by suite (1: one run, one session lab).",
)
@kubernetes_version_option("Kubernetes version of the labs (local); IDs that shipped later or whose feature gates it lacks SKIP.")
def certify(
    out_dir: Path,
    cluster: str,
    kubeconfig: str | None,
    driver_names: tuple[str, ...],
    variant: str | None,
    hardware: str | None,
    only: str | None,
    workload_image: str | None,
    seed: int | None,
    budget: int | None,
    seeds: int | None,
    shards: int,
    kubernetes_version: str,
) -> None:
    """Run the conformance suites and write the results to OUT (exit 0 CERTIFIED, 1 NOT CERTIFIED,
    2 bad input, 3 INCOMPLETE, 4 NOTHING TO CERTIFY)."""
    paths, ids = selection(only)
    # DEP-02: every problem of every profile, before any lab starts.
    drivers = validate_or_raise(list(driver_names), set(catalogue.load()))
    _check_variant(variant, drivers)
    hardware = lab_hardware(hardware, drivers)
    capabilities = provider(cluster).capabilities
    if providers.Capability.LAB_STARTS not in capabilities:
        if not (kubeconfig and Path(kubeconfig).is_file()):
            raise BadInput(f"--cluster {cluster} needs --kubeconfig PATH of an existing file (got {kubeconfig!r})")
        require_reachable(kubeconfig)
    if drivers and not any(map(certifiable, drivers)):
        console.print(f"{NOTHING}: driver profile(s) {', '.join(str(d.source) for d in drivers)} have {NO_CAPABILITY}")
        sys.exit(EXIT_CODES[NOTHING])
    # The suites run with the package as their cwd (an installed one is not the user's): absolute paths only.
    out_dir, kubeconfig = writable(out_dir.resolve()), str(Path(kubeconfig).resolve()) if kubeconfig else None
    run = SuiteRun(
        out_dir,
        paths,
        ids,
        cluster,
        kubeconfig,
        drivers,
        variant,
        hardware,
        workload_image=workload_image,
        kubernetes_version=kubernetes_version,
        seed=seed,
        budget=budget,
        seeds=seeds,
        shards=shards if providers.Capability.SHARDED_RUNS in capabilities else 1,
    )
    rc = run.pytest()
    left = [str(r) for lab in lab_names(run.lab_prefix, run.shards) for r in residue.find(lab)]  # LAB-05, after every run
    if left:
        console.print("[red]left behind by the run's labs (LAB-05):[/red]\n  " + "\n  ".join(left))
    report = run.report(rc, _nodes_hardware(hardware), {"residue after teardown": left or "none"})
    as_json, as_html = out_dir / "report.json", out_dir / "report.html"
    allure_html = _allure_html(out_dir / "allure-results", out_dir / "allure-report")
    for r in report["requirements"]:
        if r["verdict"] in (Verdict.FAIL, Verdict.ERROR, Verdict.BLOCKED, Verdict.WARNING):
            console.print(f"  {r['verdict']} {r['id']} ({r['section']}): {first_message(r)[:200]}", markup=False)
    counts = "; ".join(
        f"{section}: " + ", ".join(f"{n} {v}" for v, n in c.items() if n)
        for section, c in report["summary"]["requirements"].items()
        if any(c.values())
    )
    trace = out_dir / "trace.jsonl"
    console.print(
        f"requirements {counts} in {report['summary']['wall_seconds']:.0f}s; {as_html}, {as_json}, {run.junit}, "
        f"logs {out_dir / 'logs'}"
        + (f", kubelet-plugin calls {trace}" if trace.exists() else "")
        + (f", {allure_html}" if allure_html else ""),
        markup=False,
    )
    console.print(last_line(report), markup=False)
    sys.exit(report["summary"]["exit_code"])


def writable(out_dir: Path) -> Path:
    """--out, made if need be; BadInput before any lab when it cannot be written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".dralab-write-test"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise BadInput(f"--out {out_dir}: cannot write there ({e.strerror}): give a directory you can write") from None
    return out_dir


@contextlib.contextmanager
def reserved_prefix(prefix: str, shards: int, reuse: bool) -> Iterator[str]:
    """A lab name prefix this run alone uses while it runs: `prefix`, or where another run holds it
    (or, unless `reuse`, labs named under it exist) the first free of prefix-b, prefix-c, ... Its lock
    is held for the run: two certifications on one machine never start labs of one name."""
    from basics.file_locks import exclusive
    from clusters.config import labs_root
    from clusters.local.preflight import locks_dir

    for candidate in [prefix, *(f"{prefix}{c}" for c in "bcdefghijk")]:
        if not reuse and any((labs_root() / "labs" / name).exists() for name in lab_names(candidate, shards)):
            continue
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(exclusive(locks_dir() / f"prefix-{candidate}.lock", lambda pid: pid))
        except BadInput:
            continue
        with stack:
            if candidate != prefix:
                console.print(f"labs named {prefix}... are another run's: this run's labs are named {candidate}...")
            yield candidate
        return
    raise BadInput(
        f"every lab name prefix from {prefix} to {prefix}k is in use by another run or its labs: "
        "wait for those runs, or remove their labs (`dralab down --name NAME`, `dralab residue`)"
    )


def lab_names(prefix: str, shards: int = DEFAULT_SHARDS) -> list[str]:
    """The labs, local or kind, a certification in `shards` runs may start, named under `prefix`."""
    names = []
    for k in range(1, shards + 1):
        local = [renamed(cfg, shard_prefix(prefix, k)) for cfg in (SESSION_LAB, GATES_OFF, SCHEDULER_GATE_OFF, PLACEMENT, scale(1))]
        names += [cfg.name for cfg in local] + [on_kind(cfg).name for cfg in local[:-1]]  # the scale lab is local only
    return names
