"""The `dralab` command."""

from __future__ import annotations

import sys
import time

import click

from basics.children import Terminated, interrupt_on_sigterm
from basics.errors import DralabError
from clusters.lab_cli import kubernetes_version_option
from basics.progress import console


class Group(click.Group):
    """Turns dralab errors into their exit codes (RP-04) with the message, not a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except DralabError as e:
            console.print(f"[red]error:[/red] {e}")
            sys.exit(e.exit_code)
        except KeyboardInterrupt as e:
            console.print("[yellow]interrupted[/yellow]")
            sys.exit(143 if isinstance(e, Terminated) else 130)  # as the shell reports death by the signal
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception:  # a bug or an unforeseen failure: the lab broke (RP-04), keep the evidence
            console.print_exception()
            sys.exit(3)


@click.group(cls=Group)
def main() -> None:
    """dralab: conformance suite and emulated hardware lab for Kubernetes DRA."""
    # A CI job cancelled or a `timeout` sends SIGTERM: every command tears down what it started, as on Ctrl-C.
    interrupt_on_sigterm()


@main.command()
@click.option("--offline", is_flag=True, help="Only check the cache; build nothing.")
@kubernetes_version_option("Kubernetes version to build (each is cached apart).")
def provision(offline: bool, kubernetes_version: str) -> None:
    """Build every pinned component into the cache (LAB-01)."""
    from clusters.provision import cache_root, provision as do_provision

    start = time.monotonic()
    tools = do_provision(offline=offline, kubernetes_version=kubernetes_version)
    console.print(f"provisioned in {time.monotonic() - start:.1f}s under {cache_root()}")
    for name, path in (
        ("kubernetes", tools.kubernetes),
        ("etcd", tools.etcd),
        ("containerd", tools.containerd),
        ("runc", tools.runc),
        ("drivers under test", tools.drivers_under_test),
    ):
        console.print(f"  {name:18} {path}")
    for image in tools.images:
        console.print(f"  {'image':18} {image.ref} {image.digest[:19]} {image.archive}")


def _register_commands() -> None:
    from clusters import lab_cli
    from dralab.driver_cli import driver
    from dralab.hw_cli import hw
    from dralab.image_cli import image
    from reports.certify import certify
    from reports.matrix import matrix
    from reports.mutants import mutants
    from reports.perf.command import perf
    from reports.qualify import qualify
    from reports.selfcheck import selfcheck
    from reports.soak import soak

    for command in [*lab_cli.COMMANDS, hw, driver, image, certify, matrix, mutants, perf, qualify, selfcheck, soak]:
        main.add_command(command)


_register_commands()


if __name__ == "__main__":
    main()
