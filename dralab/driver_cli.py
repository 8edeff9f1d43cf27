"""`dralab driver`: deploy a driver profile (reference or vendor) into a lab, remove it, list profiles."""

from __future__ import annotations

import time
from pathlib import Path

import click

from basics.progress import console


def _lab(lab_name: str, kubeconfig: Path | None, kubelet_root_dir: str):  # -> clusters.providers.Lab
    from clusters.kubeconfig.provider import KUBECONFIG
    from clusters.local.cluster import LocalCluster
    from clusters.local.provider import local_lab
    from clusters.provision import provision

    # --lab names a local lab (`dralab up --name`), --kubeconfig any cluster.
    if kubeconfig is not None:
        return KUBECONFIG.attach(kubeconfig, provision(offline=True).kubectl, Path("out") / "logs", kubelet_root_dir)
    return local_lab(LocalCluster.load(lab_name))


_lab_options = [
    click.option("--profile", "profile_name", required=True, help="Shipped profile name (gpu, net, fake-gpu-plugin) or a .yaml path."),
    click.option("--lab", "lab_name", default="default", show_default=True, help="Local lab (see `dralab up --name`)."),
    click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        default=None,
        help="Use an existing cluster instead of a local lab.",
    ),
    click.option(
        "--kubelet-root-dir", default="/var/lib/kubelet", show_default=True, help="With --kubeconfig: the nodes' kubelet root dir."
    ),
]


def lab_options(fn):
    for option in reversed(_lab_options):
        fn = option(fn)
    return fn


@click.group()
def driver() -> None:
    """Deploy drivers under test into a lab (driver profiles: drivers_under_test/profiles)."""


@driver.command()
@lab_options
@click.option("--variant", default=None, help="A variant the profile lists: broken (MUT-01) or a configuration such as metadata-disabled.")
@click.option("--timeout", default=120.0, show_default=True, help="Seconds to wait for the driver to register.")
def deploy(profile_name: str, lab_name: str, kubeconfig: Path | None, kubelet_root_dir: str, variant: str | None, timeout: float) -> None:
    """Import the profile's images, apply its manifests and wait until it has registered on every node."""
    from drivers_under_test.deploy import deploy as do_deploy
    from drivers_under_test.profile import load_profile

    profile = load_profile(profile_name)
    profile.variant(variant)  # an unknown variant is refused before anything happens
    lab = _lab(lab_name, kubeconfig, kubelet_root_dir)
    start = time.monotonic()
    do_deploy(lab, profile, variant, timeout)
    console.print(
        f"driver {profile.name}{f' (variant {variant})' if variant else ''} deployed in "
        f"{time.monotonic() - start:.1f}s: namespace {profile.namespace}"
    )


@driver.command()
@lab_options
def remove(profile_name: str, lab_name: str, kubeconfig: Path | None, kubelet_root_dir: str) -> None:
    """Delete everything the profile deployed (any variant) and its drivers' ResourceSlices."""
    from drivers_under_test.deploy import remove as do_remove
    from drivers_under_test.profile import load_profile

    profile = load_profile(profile_name)
    lab = _lab(lab_name, kubeconfig, kubelet_root_dir)
    do_remove(lab, profile)


@driver.command("list")
def list_profiles() -> None:
    """The shipped driver profiles, their capabilities and broken variants."""
    from drivers_under_test.profile import load_profile, shipped_profiles

    for name in shipped_profiles():
        p = load_profile(name)
        console.print(f"[bold]{p.name}[/bold]  {p.description}")
        console.print(
            f"  drivers: {', '.join(p.drivers + p.extended_resources)}; "
            f"capabilities: {', '.join(c.value for c in p.capabilities)}; hardware: {p.hardware}"
        )
        for v, spec in sorted(p.variants.items()):
            what = f"breaks {', '.join(spec.breaks)}" if spec.breaks else "a configuration (breaks nothing)"
            console.print(f"  variant {v:22} {what}")


@driver.command()
def schema() -> None:
    """Print the driver profile's JSON Schema (for editors and CI; `driver validate` checks more)."""
    from drivers_under_test.schema import shipped

    click.echo(shipped(), nl=False)


@driver.command()
@click.argument("profiles", nargs=-1, required=True)
def validate(profiles: tuple[str, ...]) -> None:
    """Check driver profiles before any lab starts (DEP-02): schema, template parameters, manifests,
    the containers they name, image archives (os/architecture), variants. Every problem is listed,
    a schema error too; exit 2 if any."""
    from drivers_under_test.validate import validate_or_raise
    from suites import catalogue

    start = time.monotonic()
    from reports.certify import NO_CAPABILITY, certifiable

    for profile in validate_or_raise(list(profiles), set(catalogue.load())):
        console.print(f"driver profile {profile.source}: valid")
        if not certifiable(profile):  # valid, yet certify would stop at once: say so now
            console.print(
                f"[yellow]note:[/yellow] driver profile {profile.source} has {NO_CAPABILITY}: certify "
                "would answer NOTHING TO CERTIFY (exit 4)"
            )
    console.print(f"checked {len(profiles)} profile(s) in {time.monotonic() - start:.2f}s")
