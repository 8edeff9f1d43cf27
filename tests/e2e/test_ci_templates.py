"""docs/ci's templates run here as their CI systems would run them, on dralab's reference device
plugin packaged as a vendor's (acme_vendor.py): dralab from its wheel into a virtualenv, provision,
validate, certify on a kind cluster, and the files the upload names. What belongs to the CI system
is played by the test: the checkout is the vendor's directory, Go and Python are this machine's,
the restored cache is dralab's provisioned one, the vendor's image build is replaced by the
archive already there, and `sudo` runs the command as it is (the test runs as root). Certify runs
the device plugin suite only (the templates' CERTIFY_ARGS), as the guide's test does.

Needs root, PyPI (the wheel's dependencies), Debian's mirror and the provisioned cache;
`make test-ci-templates` (each template starts its own kind cluster: about 4 minutes each).

The nightly matrix templates start no lab here: their plan and merge run as the CI system would
run them, with this checkout's dralab, the cells the plan lists become the cell jobs (each job's
dralab commands parsed by dralab's own CLI, options and values checked), and the merge joins what
those jobs' artifacts would hold (cell records standing in for certifications, which need a lab)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

from clusters import residue
from clusters.provision import cache_root
from clusters.versions import KUBERNETES_VERSIONS
from drivers_under_test.profile import load_profile, shipped_profiles
from reports import matrix
from reports.report import CERTIFIED
from tests.e2e.acme_vendor import vendor_dir
from tests.package_files import REPO, build_wheel
from tests.unit.test_certify_guide import invocations, resolve

pytestmark = pytest.mark.e2e

TEMPLATES = REPO / "docs" / "ci"
# What each template's variables say about the vendor's repository, for the vendor of acme_vendor.py.
VENDOR = {"PROFILE": "profile.yaml", "ARCHIVE": "acme-gpu-plugin.tar", "CERTIFY_ARGS": "--only DP"}
IMAGE_BUILD_STEP = "Build the driver's image archive"  # the vendor's own: its archive is already there
GITLAB_VENV = Path("/opt/dralab")  # where the GitLab job installs dralab, in its own container
STEP_TIMEOUT = 1800


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))[0]


@pytest.fixture
def repo(tmp_path: Path, wheel: Path) -> Path:
    """The vendor's repository as the CI job checks it out, with dralab's wheel in ci/ (as the
    templates' DRALAB_PIP_SPEC says) and dralab's cache restored as .dralab-cache."""
    repo = tmp_path / "repo"
    repo.mkdir()
    vendor_dir(repo)
    (repo / "ci").mkdir()
    shutil.copy(wheel, repo / "ci")
    (repo / ".dralab-cache").symlink_to(cache_root())
    return repo


def _environment(repo: Path, variables: dict[str, str], wheel: Path) -> dict[str, str]:
    """This process's environment without its virtualenv, the template's variables with the
    vendor's values, and a `sudo` where there is none."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "DRALAB_CACHE")}
    if shutil.which("sudo") is None:
        shim = repo.parent / "bin"
        shim.mkdir()
        (shim / "sudo").write_text('#!/bin/sh\nexec "$@"\n')  # root already
        (shim / "sudo").chmod(0o755)
        env["PATH"] = f"{shim}:{env['PATH']}"
    return {**env, **{k: str(v) for k, v in variables.items()}, **VENDOR, "DRALAB_PIP_SPEC": f"./ci/{wheel.name}"}


def _run(script: str, repo: Path, env: dict[str, str], what: str) -> subprocess.CompletedProcess[str]:
    start = time.monotonic()
    done = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT)
    print(f"{what}: exit {done.returncode} in {time.monotonic() - start:.0f}s")
    return done


def _certified(repo: Path, uploaded: list[str], output: str) -> None:
    """What the job uploads is there and says the driver is certified, on a kind cluster."""
    missing = [p for p in uploaded if not (repo / p).exists()]
    assert not missing, f"the upload names files certify did not write: {missing}"
    assert output.strip().splitlines()[-1].startswith("CERTIFIED"), output[-3000:]
    report = json.loads((repo / "out" / "report.json").read_text())
    verdicts = {r["id"]: r["verdict"] for r in report["requirements"] if r["section"] == "driver"}
    assert verdicts.get("DEP-01") == "PASS" and verdicts.get("DP-01") == "PASS", verdicts
    assert report["environment"]["cluster"] == "kind", report["environment"]
    assert "<testsuite" in (repo / "out" / "junit.xml").read_text()
    assert residue.find() == [], "the template's run left residue"


@pytest.mark.requirement("LAB-06")
@pytest.mark.timeout(3600)
def test_github_actions_workflow(repo: Path, wheel: Path, tmp_path: Path) -> None:
    workflow = yaml.safe_load((TEMPLATES / "github-actions.yml").read_text())
    runner_temp, github_env = tmp_path / "runner", tmp_path / "github_env"
    runner_temp.mkdir()
    github_env.touch()
    env = _environment(repo, workflow["env"], wheel) | {
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_ENV": str(github_env),
    }
    failed, uploaded, outputs = "", [], {}
    for step in workflow["jobs"]["certify"]["steps"]:
        if failed and "always()" not in str(step.get("if", "")):
            continue
        if "uses" in step:  # checkout, setup-go/python, cache: played by the test (see above)
            if step["uses"].startswith("actions/upload-artifact@"):
                uploaded = step["with"]["path"].split()
            continue
        if step["name"] == IMAGE_BUILD_STEP:
            continue
        done = _run(step["run"], repo, env, step["name"])
        outputs[step["name"]] = done.stdout + done.stderr
        env |= dict(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
        if done.returncode != 0 and not failed:
            failed = f"step {step['name']!r} exited {done.returncode}:\n{outputs[step['name']][-4000:]}"
    assert not failed, failed
    _certified(repo, uploaded, outputs["Certify on a kind cluster"])


@pytest.mark.requirement("LAB-06")
@pytest.mark.timeout(3600)
def test_gitlab_ci_job(repo: Path, wheel: Path) -> None:
    if GITLAB_VENV.exists():
        pytest.skip(f"{GITLAB_VENV} exists: the GitLab job installs dralab there, in a container of its own")
    job = yaml.safe_load((TEMPLATES / "gitlab-ci.yml").read_text())["dralab-certify"]
    variables = {k: v.replace("$CI_PROJECT_DIR", str(repo)) for k, v in job["variables"].items()}
    env = _environment(repo, variables, wheel) | {"CI_PROJECT_DIR": str(repo)}
    try:
        done = _run("\n".join(job["script"]), repo, env, "the job's script")
    finally:
        shutil.rmtree(GITLAB_VENV, ignore_errors=True)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"the job's script exited {done.returncode}:\n{output[-4000:]}"
    _certified(repo, job["artifacts"]["paths"], output)


@pytest.fixture
def dralab_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without its virtualenv, and $DRALAB running this checkout's dralab."""
    shim = tmp_path / "bin" / "dralab"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m dralab.cli "$@"\n')
    shim.chmod(0o755)
    return {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}, "DRALAB": str(shim)}


def _planned_cells() -> list[str]:
    """What a single machine's `dralab matrix` would certify, cell by cell, in its order."""
    todo = matrix.planned([load_profile(n) for n in shipped_profiles()], list(KUBERNETES_VERSIONS))
    return [matrix.key(p.name, v) for p, v in todo if p.unsupported_kubernetes(v) is None]


def _commands(script: str, env: dict[str, str]) -> list[str]:
    """Each dralab command line of `script` with its variables expanded from `env`, parsed by
    dralab's CLI as it would run it (unknown options and bad values raise), run not."""
    found = []
    for words in invocations(script):
        expanded = [part for word in words for part in re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m[1], ""), word).split()]
        command, rest = resolve(expanded)
        command.make_context(command.name, list(rest))
        found.append(" ".join(expanded))
    return found


def _recorded(cells_dir: Path, cells: list[str]) -> None:
    """What the cell jobs' artifacts hold once downloaded: a cell record and report per cell."""
    for cell in cells:
        driver, _, version = cell.partition("@")
        report = f"runs/20270101T020000Z/{driver}-{version}/report.html"
        (cells_dir / cell / report).parent.mkdir(parents=True)
        (cells_dir / cell / report).write_text(cell)
        record = matrix.CellRecord(
            "20270101T020000Z", 60.0, [matrix.Cell(driver, version, False, CERTIFIED, {"DEP-01": "PASS"}, report, 60.0)], [], {}
        )
        matrix.write_record(cells_dir / cell, record)


def _merged(out: Path, cells: list[str]) -> None:
    data = json.loads((out / "matrix.json").read_text())
    assert [matrix.key(c["driver"], c["version"]) for c in data["cells"]] == cells
    assert all((out / c["report"]).read_text() == matrix.key(c["driver"], c["version"]) for c in data["cells"])
    assert len(json.loads((out / matrix.HISTORY).read_text())) == 1 and (out / "matrix.html").is_file()


def _step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name)


def test_github_actions_nightly_matrix(dralab_env: dict[str, str], tmp_path: Path) -> None:
    workflow = yaml.safe_load((TEMPLATES / "github-actions-matrix.yml").read_text())
    jobs, env, github_output = workflow["jobs"], dralab_env | workflow["env"], tmp_path / "github_output"
    github_output.touch()
    plan = _step(jobs["plan"], "Plan the cells")
    done = _run(plan["run"], tmp_path, env | {"GITHUB_OUTPUT": str(github_output)}, plan["name"])
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = dict(line.split("=", 1) for line in github_output.read_text().splitlines())
    assert jobs["plan"]["outputs"]["cells"] == "${{ steps.%s.outputs.cells }}" % plan["id"]
    assert jobs["cell"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.cells) }}"
    include = json.loads(outputs["cells"])["include"]
    cells = [entry["cell"] for entry in include]
    assert cells == _planned_cells()

    used = set(re.findall(r"matrix\.(\w+)", yaml.safe_dump(jobs["cell"])))
    for entry in include:
        assert used <= set(entry), f"the cell job uses matrix.{used - set(entry)}, which the plan does not give"
        job_env = env | {k: re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: entry[m[1]], v) for k, v in jobs["cell"]["env"].items()}
        commands = [c for step in jobs["cell"]["steps"] if "run" in step for c in _commands(step["run"], job_env)]
        assert f"matrix --cell {entry['cell']} --out cells/{entry['cell']}" in commands, commands
        assert f"provision --kubernetes-version {entry['kubernetes_version']}" in commands, commands

    # Each cell's artifact holds cells/ (<cell>/cell.json), which the merge job downloads into one directory.
    upload = next(s for s in jobs["cell"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    download = next(s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert upload["with"]["path"] == "cells/" and download["with"]["merge-multiple"] is True
    assert all(fnmatch(upload["with"]["name"].replace("${{ matrix.cell }}", c), download["with"]["pattern"]) for c in cells)
    workspace = tmp_path / "merge"
    _recorded(workspace / download["with"]["path"], cells)
    merge = _step(jobs["merge"], "Merge the cells")
    done = _run(merge["run"], workspace, env, merge["name"])
    assert done.returncode == 0, done.stderr[-3000:]
    _merged(workspace / "matrix", cells)


def test_gitlab_ci_nightly_matrix(dralab_env: dict[str, str], tmp_path: Path) -> None:
    parent = yaml.safe_load((TEMPLATES / "gitlab-ci-matrix.yml").read_text())
    plan, trigger = parent["dralab-matrix-plan"], parent["dralab-matrix"]
    assert plan["extends"] == trigger["extends"] == ".dralab-matrix"  # the trigger's variables reach the child
    variables = parent[".dralab-matrix"]["variables"]
    env = dralab_env | variables | plan["variables"] | {"CELLS_TEMPLATE": str(TEMPLATES / "gitlab-ci-matrix-cells.yml")}
    done = _run("\n".join(plan["script"]), tmp_path, env, "the plan job's script")
    assert done.returncode == 0, done.stderr[-3000:]
    (include,) = trigger["trigger"]["include"]
    assert include == {"artifact": plan["artifacts"]["paths"][0], "job": "dralab-matrix-plan"}

    child = yaml.safe_load((tmp_path / include["artifact"]).read_text())
    cell_job = child["dralab-matrix-cell"]
    template = child[cell_job["extends"]]
    entries = cell_job["parallel"]["matrix"]
    assert all(isinstance(v, list) and all(isinstance(x, str) for x in v) for e in entries for v in e.values())
    jobs = [dict(zip(e, values)) for e in entries for values in itertools.product(*e.values())]
    assert len(jobs) <= matrix.PLAN_LIMITS["gitlab"]
    cells = [job["CELL"] for job in jobs]
    assert cells == _planned_cells()
    for job in jobs:
        commands = _commands("\n".join(template["script"]), dralab_env | variables | template["variables"] | job)
        assert f"matrix --cell {job['CELL']} --out cells/{job['CELL']}" in commands, commands
        assert f"provision --kubernetes-version {job['KUBERNETES_VERSION']}" in commands, commands
        assert job["CELL"].endswith("@" + job["KUBERNETES_VERSION"])

    merge = child["dralab-matrix-merge"]
    assert merge["needs"] == ["dralab-matrix-cell"] and template["artifacts"]["paths"] == ["cells/"]
    assert {cell_job["extends"], merge["extends"]} <= set(child) and template["extends"] in child
    workspace = tmp_path / "merge"
    _recorded(workspace / "cells", cells)
    done = _run("\n".join(merge["script"]), workspace, dralab_env | variables, "the merge job's script")
    assert done.returncode == 0, done.stderr[-3000:]
    _merged(workspace / "matrix", cells)
