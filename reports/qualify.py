"""`dralab qualify`: is this cluster DRA-ready? Kubernetes' own DRA e2e suite (test/e2e/dra, built
from the k8s.io/kubernetes module at the lab's version) run on a lab dralab starts (local or kind)
or on any cluster by kubeconfig, with a verdict per spec (PASS, FAIL with the lab's diagnosis, or
SKIP with its reason) in qualification.html/json and ginkgo's junit.xml."""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Iterator

import click

from basics.errors import BadInput
from basics.progress import console
from clusters import residue, versions
from clusters.config import ClusterConfig
from clusters.lab_cli import cluster_option, exit_if_left_behind, kubernetes_version_option
from clusters.provider_registry import provider
from clusters.providers import Capability, Lab, Provider
from clusters.provision import Toolchain, provision
from clusters.provision.e2e_suite import E2ESuite, ensure_e2e_suite
from clusters.provision.gobuild import download
from reports import qualification
from suites.upstream_dra.plan import Plan, plan_foreign, plan_owned, upstream_runtime_config
from suites.upstream_dra.run import FAILED, run
from suites.upstream_dra.specs import list_specs

# Two kubelet nodes, as the suite's specs ask for one to four; no emulated hardware: the suite
# brings its own test driver.
LAB = ClusterConfig(name="qualify", nodes=2)


def lab_config(plan: Plan, kubernetes_version: str, chosen: Provider) -> ClusterConfig:
    cfg = ClusterConfig.model_validate(
        LAB.model_dump()
        | {"kubernetes_version": kubernetes_version, "feature_gates": plan.feature_gates, "runtime_config": plan.runtime_config}
    )
    return chosen.for_run(cfg)


@contextlib.contextmanager
def started_lab(chosen: Provider, cfg: ClusterConfig, suite: E2ESuite, out_dir: Path, offline: bool) -> Iterator[Lab]:
    """A lab up for the run with the suite's images in its nodes; down afterwards whatever happens,
    its component logs kept under out_dir/logs."""
    console.print(
        f"starting {chosen.name} lab {cfg.name}: {cfg.nodes} nodes, Kubernetes {cfg.kubernetes_version}, "
        f"feature gates on: {', '.join(cfg.feature_gates) or 'none'}; API versions served beyond the "
        f"defaults: {', '.join(api for api, on in cfg.runtime_config.items() if on) or 'none'}"
    )
    lab = chosen.up(cfg, offline=offline, images=suite.images)
    try:
        yield lab
    finally:
        try:
            shutil.copytree(lab.log_dir, out_dir / "logs" / cfg.name, dirs_exist_ok=True)
        finally:
            lab.down()


@contextlib.contextmanager
def foreign_cluster(
    chosen: Provider, kubeconfig: Path, kubelet_root_dir: str, tools: Toolchain, suite: E2ESuite, out_dir: Path
) -> Iterator[Lab]:
    console.print(
        f"using the cluster of {kubeconfig}: dralab cannot load images into its nodes; they must be able "
        f"to pull {', '.join(image.ref for image in suite.images)}"
    )
    yield chosen.attach(kubeconfig, tools.kubectl, out_dir / "logs", kubelet_root_dir)


def suite_version_for(kubeconfig: Path) -> str:
    """The suite's version for a cluster: the one dralab builds of the API server's minor version,
    else the default, said (specs of behaviour newer than the cluster then fail there)."""
    from kubernetes import client

    from clusters.api_client import client_for

    api = client_for(kubeconfig)
    server = client.VersionApi(api).get_code().git_version
    same_minor = [v for v in versions.KUBERNETES_VERSIONS if v.split(".")[:2] == server.split("-")[0].split(".")[:2]]
    if same_minor:
        return same_minor[-1]
    console.print(
        f"[yellow]the cluster's API server is {server}; dralab builds the suite at "
        f"{', '.join(versions.KUBERNETES_VERSIONS)}: running {versions.KUBERNETES}'s (--kubernetes-version "
        "picks another)[/yellow]"
    )
    return versions.KUBERNETES


def served_apis(kubeconfig: Path) -> set[str]:
    """Every group/version the cluster's API server serves, by discovery."""
    from kubernetes import client

    from clusters.api_client import client_for

    api = client_for(kubeconfig)
    return {v.group_version for g in client.ApisApi(api).get_api_versions().groups for v in g.versions}


def _server(lab: Lab) -> str:
    from kubernetes import client

    api = lab.api()
    return f"{api.configuration.host} ({client.VersionApi(api).get_code().git_version})"


@click.command()
@click.option("--out", "out_dir", default="qualify-out", show_default=True, type=click.Path(file_okay=False, path_type=Path))
@cluster_option(help_text="local: the embedded lab; kind: a kind cluster; kubeconfig: your cluster (--kubeconfig).")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --cluster kubeconfig: the cluster's kubeconfig.",
)
@click.option(
    "--procs",
    default=3,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Specs run at once (ginkgo processes); Serial specs run alone.",
)
@click.option("--focus", default=None, help="Only the specs whose full name matches this regular expression.")
@click.option(
    "--gates-on",
    default="",
    help="With --cluster kubeconfig: comma-separated feature gates on in your "
    "cluster that are off by default (their specs SKIP otherwise).",
)
@click.option(
    "--kubelet-root-dir",
    default="/var/lib/kubelet",
    show_default=True,
    help="With --cluster kubeconfig: the kubelets' root dir on your nodes (the same on all).",
)
@click.option("--offline", is_flag=True, help="Do not build: fail if the suite or a component is not cached.")
@kubernetes_version_option(
    "Kubernetes version of the lab and of the suite (built once per version); on a kubeconfig "
    "cluster, default: its API server's minor version."
)
def qualify(
    out_dir: Path,
    cluster: str,
    kubeconfig: Path | None,
    procs: int,
    focus: str | None,
    gates_on: str,
    kubelet_root_dir: str,
    offline: bool,
    kubernetes_version: str,
) -> None:
    """Run Kubernetes' own DRA e2e suite on a cluster: is it DRA-ready? (exit 0 QUALIFIED, 1 NOT
    QUALIFIED, 2 bad input, 3 INCOMPLETE: the lab dralab started broke under the run)."""
    chosen = provider(cluster)
    owned = Capability.LAB_STARTS in chosen.capabilities
    if not owned and not (kubeconfig and kubeconfig.is_file()):
        raise BadInput(f"--cluster {cluster} needs --kubeconfig PATH of an existing file (got {kubeconfig})")
    if kubeconfig and owned:
        raise BadInput("--kubeconfig is for --cluster kubeconfig; drop it or add --cluster kubeconfig")
    if gates_on and owned:
        raise BadInput("--gates-on describes a kubeconfig cluster; dralab's own labs get every gate the suite needs")
    if kubelet_root_dir != "/var/lib/kubelet" and owned:
        raise BadInput("--kubelet-root-dir describes a kubeconfig cluster's nodes; dralab's labs use /var/lib/kubelet")
    if focus is not None:
        try:
            re.compile(focus)
        except re.error as e:
            raise BadInput(f"--focus {focus!r} is not a regular expression: {e}") from None
    chosen.require_version(kubernetes_version)
    if owned:
        from clusters.local.preflight import require_root

        require_root("qualify")
    if not owned and click.get_current_context().get_parameter_source("kubernetes_version") == click.core.ParameterSource.DEFAULT:
        kubernetes_version = suite_version_for(kubeconfig)  # type: ignore[arg-type]  # --cluster kubeconfig: a file, checked above
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tools = provision(offline=offline, kubernetes_version=kubernetes_version)
    suite = ensure_e2e_suite(tools, offline)
    specs = list_specs(suite.test_binary)
    if not owned:
        plan = plan_foreign(specs, suite.gate_defaults, {g.strip() for g in gates_on.split(",") if g.strip()}, served_apis(kubeconfig))  # type: ignore[arg-type]  # checked a file above
        lab_cm = foreign_cluster(chosen, kubeconfig.resolve(), kubelet_root_dir, tools, suite, out_dir)
    else:
        source = Path(download("k8s.io/kubernetes", kubernetes_version)["Dir"])
        plan = plan_owned(specs, suite.gate_defaults, upstream_runtime_config(source))
        cfg = lab_config(plan, kubernetes_version, chosen)
        lab_cm = started_lab(chosen, cfg, suite, out_dir, offline)
    console.print(
        f"qualify: {len(specs)} upstream DRA specs (Kubernetes {kubernetes_version})"
        + (f", {len(plan.skips)} of them SKIP on this cluster" if plan.skips else "")
        + (f"; only those matching {focus!r}" if focus else "")
    )
    with lab_cm as lab:
        server = _server(lab)
        outcomes = run(
            suite.ginkgo,
            suite.test_binary,
            lab.kubeconfig,
            plan,
            out_dir,
            procs=procs,
            focus=focus,
            kubelet_root_dir=lab.nodes[0].kubelet_root_dir,
        )
        diagnosis = lab.dead_parts()
    settings = {
        "feature gates": plan.feature_gates or "the cluster's own",
        "runtime config": plan.runtime_config or "the cluster's own",
        "suite": str(suite.test_binary),
        "ginkgo log": str(out_dir / "ginkgo.log"),
        "junit": str(out_dir / "junit.xml"),
        "component logs": str(out_dir / "logs"),
    }
    q = qualification.build(outcomes, cluster, kubernetes_version, server, time.monotonic() - start, settings, diagnosis, owned=owned)
    _, as_html = qualification.write(q, out_dir)
    if not focus:  # a subset does not qualify a cluster
        qualification.record(q, out_dir)
    for o in outcomes:
        if o.state == FAILED:
            console.print(f"  FAIL {o.name}: {o.message.splitlines()[0][:200] if o.message else ''}", markup=False)
    for reason, n in qualification.skip_reasons(q):
        console.print(f"  SKIP ×{n}: {reason[:200]}", markup=False)
    if owned:
        exit_if_left_behind([str(r) for r in residue.find(cfg.name)])
    console.print(f"{qualification.summary(q)}; {as_html}", markup=False)
    sys.exit(qualification.EXIT_CODES[q["outcome"]])
