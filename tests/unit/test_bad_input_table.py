"""Bad input to the CLI and to profiles, kind by kind: each exits 2 with the input named and the
fix said, before any lab starts or any suite runs (a lab started or pytest run fails the case)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from basics import file_locks
from clusters.local import cluster, preflight
from dralab.cli import main
from reports import certify

PROFILES = Path(__file__).parents[2] / "drivers_under_test" / "profiles"


def _profile(tmp_path: Path, name: str, old: str, new: str) -> str:
    """nvidia-gpu's profile with one thing changed, beside the shipped ones (relative paths hold)."""
    text = (PROFILES / "nvidia-gpu.yaml").read_text()
    assert old in text
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace(old, new).replace("$schema=../", f"$schema={PROFILES.parent}/"))
    return str(path)


def _kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "refused.kubeconfig"
    path.write_text(
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n'
        "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
        "users: [{name: u, user: {token: x}}]\n"
    )
    return str(path)


# kind of bad input -> (the command, what the answer must say: the input and the fix)
CASES = {
    "unknown driver": (["certify", "--driver", "nosuch"], ["unknown driver profile 'nosuch'", "or give a .yaml path"]),
    "unknown variant": (
        ["certify", "--driver", "gpu", "--variant", "nosuch"],
        ["--variant 'nosuch'", "has no such variant; it has metadata-disabled"],
    ),
    "unknown Kubernetes version": (
        ["certify", "--kubernetes-version", "v1.99.0"],
        ["'v1.99.0' is not one of 'v1.35.4', 'v1.36.3', 'v1.37.1'"],
    ),
    "unknown suite": (["certify", "--only", "NOPE"], ["--only 'NOPE': unknown suite(s) NOPE", "choose from DEP, KP"]),
    "an --only that selects nothing": (
        ["certify", "--only", "KP-99"],
        ["KP-99 is not a requirement of the catalogue", "its suite has KP-01"],
    ),
    "a seed that is not a number": (["certify", "--seed", "abc"], ["'--seed': 'abc' is not a valid integer"]),
    "an --out that cannot be written": (
        ["certify", "--out", "/proc/nope/out"],
        ["--out /proc/nope/out: cannot write there", "give a directory you can write"],
    ),
    "a kubeconfig that is not a file": (
        ["certify", "--cluster", "kubeconfig", "--kubeconfig", "/nonexistent"],
        ["--cluster kubeconfig needs --kubeconfig PATH of an existing file"],
    ),
    "a kubeconfig that does not connect": (
        ["certify", "--cluster", "kubeconfig", "--kubeconfig", "{kubeconfig}"],
        ["the cluster at https://127.0.0.1:1 does not answer", "check its server"],
    ),
    "unknown hardware": (["up", "--hardware", "nosuch"], ["unknown hardware profile 'nosuch'", "cpu-pair"]),
    "a lab name that is not a DNS label": (["up", "--name", "Not_A_Label"], ["name:", "DNS label"]),
    "malformed feature gates": (
        ["up", "--feature-gates", "DRADerivedAttributes"],
        ["--feature-gates 'DRADerivedAttributes': expected NAME=true"],
    ),
    "a lab name another command is bringing up": (
        ["up", "--name", "busy"],
        ["lab 'busy' is being brought up or torn down by another dralab", "give another --name"],
    ),
    "unknown capability": (["driver", "validate", "{capability}"], ["capabilities.0: Input should be 'metadata'"]),
    "chart path missing": (
        ["driver", "validate", "{chart}"],
        ["chart deployments/helm/nothing-here is not a chart in module", "give its path relative to the module's root"],
    ),
    "an image archive that is not one": (["driver", "validate", "{archive}"], ["not-an-archive.tar"]),
    "unknown matrix cell": (["matrix", "--cell", "nosuch@v1.37.1"], ["--cell nosuch@v1.37.1: nosuch is not a shipped profile"]),
    "a matrix option without the one it belongs to": (["matrix", "--plan-format", "gitlab"], ["--plan-format is for --plan"]),
    "unknown selfcheck variant": (
        ["selfcheck", "--variant", "gpu:nosuch"],
        ["--variant gpu:nosuch: no reference driver has it", "`dralab selfcheck --list`"],
    ),
}


@pytest.fixture
def no_lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Labs under tmp_path; starting one, or running the suites, fails the case."""

    def started(*_: object, **__: object) -> None:
        raise AssertionError("a lab started, or the suites ran, on bad input")

    monkeypatch.setenv("DRALAB_LABS", str(tmp_path / "labs"))
    monkeypatch.setattr(cluster.LocalCluster, "_up", started)
    monkeypatch.setattr(certify.SuiteRun, "pytest", started)
    return tmp_path


@pytest.mark.parametrize("kind", CASES)
def test_bad_input_exits_2_naming_the_input_and_the_fix_before_any_lab(no_lab: Path, kind: str, monkeypatch) -> None:
    (no_lab / "not-an-archive.tar").write_text("not a tar\n")
    paths = {
        "kubeconfig": _kubeconfig(no_lab),
        "capability": _profile(no_lab, "cap", "capabilities: []", "capabilities: [teleport]"),
        "chart": _profile(no_lab, "chart", "path: deployments/helm/dra-driver-nvidia-gpu", "path: deployments/helm/nothing-here"),
        "archive": _profile(
            no_lab,
            "archive",
            "- build:\n    tag: registry.example/dra-driver-nvidia-gpu:v0.4.1",
            f"- archive: {no_lab / 'not-an-archive.tar'}\n- build:\n    tag: registry.example/dra-driver-nvidia-gpu:v0.4.1",
        ),
    }
    args, said = CASES[kind]
    args = [a.format(**paths) for a in args]
    if args[0] in ("up",):
        monkeypatch.setattr(preflight, "require_root", lambda what: None)
    if kind == "a lab name another command is bringing up":
        monkeypatch.setattr(
            preflight,
            "lab_name_lock",
            lambda name: file_locks.exclusive(
                no_lab / "held.lock",
                lambda pid: (
                    f"lab {name!r} is being brought up or torn down by another dralab (pid {pid}): wait for it, or give another --name"
                ),
            ),
        )
        with file_locks.exclusive(no_lab / "held.lock", lambda pid: pid):  # this process's own: the flock is per open file
            result = CliRunner().invoke(main, args)
    else:
        result = CliRunner().invoke(
            main, [*args, *(["--out", str(no_lab / "out")] if args[0] == "certify" and "--out" not in args else [])]
        )
    assert result.exit_code == 2, (kind, result.exit_code, result.output, result.exception)
    for words in said:
        assert words in result.output, (kind, words, result.output)
    assert not (no_lab / "labs" / "labs").exists() or not any((no_lab / "labs" / "labs").iterdir()), kind


def test_the_table_has_fifteen_kinds_or_more() -> None:
    assert len(CASES) >= 15
