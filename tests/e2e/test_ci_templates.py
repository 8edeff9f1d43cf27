"""docs/ci's templates run here as their CI systems would run them, on dralab's reference device
plugin packaged as a vendor's (acme_vendor.py): dralab from its wheel into a virtualenv, provision,
validate, certify on a kind cluster, and the files the upload names. What belongs to the CI system
is played by the test: the checkout is the vendor's directory, Go and Python are this machine's,
the restored cache is dralab's provisioned one, the vendor's image build is replaced by the
archive already there, and `sudo` runs the command as it is (the test runs as root). Certify runs
the device plugin suite only (the templates' CERTIFY_ARGS), as the guide's test does.

Needs root, PyPI (the wheel's dependencies), Debian's mirror and the provisioned cache;
`make test-ci-templates` (each template starts its own kind cluster: about 4 minutes each)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from clusters import residue
from clusters.provision import cache_root
from tests.e2e.acme_vendor import vendor_dir
from tests.package_files import REPO, build_wheel

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
    done = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT)
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
        "RUNNER_TEMP": str(runner_temp), "GITHUB_WORKSPACE": str(repo), "GITHUB_ENV": str(github_env)}
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
