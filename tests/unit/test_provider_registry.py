"""A provider is one folder and one registration (clusters/provider_registry.py): --cluster offers
what is registered, a check asking for a capability its provider lacks SKIPs naming both, an
unknown name is bad input, and docs/architecture.md's capability table is the registry's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest
from click.testing import CliRunner

from basics.errors import BadInput, NotSupported
from clusters.config import ClusterConfig
from clusters.provider_registry import PROVIDERS, provider, register
from clusters.providers import Capability, Lab
from clusters.provision import Image
from dralab.cli import main
from dralab.pytest_plugin import options

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


class FakeProvider:
    """A provider of no folder: emulated hardware and nothing else."""

    name = "fake"
    description = "a unit test's"
    capabilities = frozenset({Capability.EMULATED_HARDWARE})
    lab_noun = "fake lab"

    def require_version(self, kubernetes_version: str) -> None:
        """Any."""

    def for_run(self, cfg: ClusterConfig) -> ClusterConfig:
        return cfg

    def up(self, cfg: ClusterConfig, *, offline: bool = False, images: Sequence[Image] = ()) -> Lab:
        raise NotSupported("the fake provider starts no lab")

    def running(self, cfg: ClusterConfig) -> Lab | None:
        return None

    def attach(self, kubeconfig: Path, kubectl: Path, log_dir: Path, kubelet_root_dir: str) -> Lab:
        return Lab(self, kubeconfig, kubectl, log_dir, [])


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    registered = FakeProvider()
    register(registered)
    yield registered
    del PROVIDERS[registered.name]


def test_a_registered_provider_is_offered_by_the_commands_cluster_option(fake: FakeProvider, tmp_path: Path) -> None:
    for command in ("certify", "qualify"):
        said = CliRunner().invoke(main, [command, "--help"]).output
        assert "[local|kind|kubeconfig|fake]" in said, said
    assert "[local|kind]" in CliRunner().invoke(main, ["up", "--help"]).output, "up offers the providers that start labs"
    # Accepted as a choice, and asked what it can do: it starts no lab, so it needs --kubeconfig.
    result = CliRunner().invoke(main, ["qualify", "--cluster", "fake", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--cluster fake needs --kubeconfig PATH" in result.output, result.output


class _Group:
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.parser.add_argument(*names, **attrs)


class _Parser:
    """pytest's Parser as far as the plugin's options use it, onto argparse, as pytest's is."""

    def __init__(self) -> None:
        self.argparse = argparse.ArgumentParser(exit_on_error=False)

    def getgroup(self, name: str) -> _Group:
        return _Group(self.argparse)


def test_a_registered_provider_is_offered_by_the_plugins_cluster_option(fake: FakeProvider) -> None:
    parser = _Parser()
    options.pytest_addoption(parser)  # type: ignore[arg-type]  # _Parser stands in for pytest's
    assert parser.argparse.parse_args(["--cluster", "fake"]).cluster == "fake"
    assert "fake: a unit test's" in " ".join(parser.argparse.format_help().split())
    with pytest.raises(argparse.ArgumentError, match="invalid choice: 'nowhere'"):
        parser.argparse.parse_args(["--cluster", "nowhere"])


def test_a_check_needing_what_its_provider_lacks_skips_naming_both(fake: FakeProvider, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
from pathlib import Path

import pytest

from clusters.provider_registry import provider
from clusters.providers import Capability


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    return provider("fake").attach(Path("/dev/null"), Path("/bin/true"), tmp_path_factory.mktemp("logs"), "/var/lib/kubelet")


def test_reads_the_nodes_files(host_access):
    pass


def test_reboots_a_node(lab):
    lab.require(Capability.NODE_REBOOTS, "rebooting a node")


def test_reads_the_emulated_hardware(lab):
    lab.require(Capability.EMULATED_HARDWARE, "reading the emulated hardware")
"""
    )
    result = pytester.runpytest("-rs", "--cluster", "fake")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*this check needs host access to the nodes' files and services, which the fake provider does not give*",
            "*rebooting a node needs node reboots, which the fake provider does not give*",
        ]
    )


def test_an_unknown_provider_is_bad_input_naming_the_known_ones() -> None:
    with pytest.raises(BadInput, match="^no provider named 'nowhere'; the providers are local, kind, kubeconfig$"):
        provider("nowhere")


def _table() -> str:
    """The capability table as docs/architecture.md has it, from the registry."""
    rows = [f"| {c.value} | " + " | ".join("yes" if c in p.capabilities else "-" for p in PROVIDERS.values()) + " |" for c in Capability]
    return "\n".join([f"| capability | {' | '.join(PROVIDERS)} |", "| --- |" + " --- |" * len(PROVIDERS), *rows])


def test_the_architecture_docs_capability_table_is_the_registrys() -> None:
    assert _table() in ARCHITECTURE.read_text(), _table()
