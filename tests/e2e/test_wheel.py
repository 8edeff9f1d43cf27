"""dralab as a vendor installs it (issue 21): the wheel built from this checkout, installed into a
fresh virtualenv outside the checkout, with the cwd outside it too, validates the shipped driver
profiles, finds every pinned component in the cache under the keys the checkout computes (so
`dralab provision` builds the same components from the installed Go sources) and collects the
suites as `dralab certify` runs them. Needs the PyPI index (the wheel's dependencies) and a
provisioned cache, no lab."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from basics.errors import BadInput
from clusters.provision import provision
from clusters.provision.components import GO_RECIPES
from clusters.provision.gobuild import GoRecipe
from drivers_under_test.profile import shipped_profiles
from tests.package_files import REPO, build_wheel, data_files

pytestmark = pytest.mark.e2e

# What the installed copy computes for each Go recipe: its key and its source files, relative to
# the package root, so a difference names the files the wheel lacks.
RECIPE_KEYS = """
import json
from pathlib import Path
from clusters.provision.components import GO_RECIPES, REPO
print(json.dumps({r.name: [r.key(), sorted(str(f.relative_to(REPO)) for f in r.source_files())] for r in GO_RECIPES}))
"""
COLLECT_SUITES = """
import subprocess, sys
from reports.certify import pytest_command
sys.exit(subprocess.call([*pytest_command(["suites"]), "--collect-only", "-q", "-p", "no:cacheprovider"]))
"""


class Installed:
    """A virtualenv with the wheel installed, the directory commands run in, and the copy of the
    checkout the wheel was built from (what is compared: the checkout changes under concurrent work)."""

    def __init__(self, venv: Path, cwd: Path, wheel: Path, src: Path) -> None:
        self.venv, self.cwd, self.wheel, self.src = venv, cwd, wheel, src

    def run(self, program: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        # Nothing of the checkout's environment may leak in: no PYTHONPATH, no active virtualenv.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run(
            [str(self.venv / "bin" / program), *args], cwd=self.cwd, env=env, capture_output=True, text=True, timeout=timeout
        )


def _checked(out: subprocess.CompletedProcess[str], what: str) -> str:
    """The output (dralab prints to stderr), once the command succeeded."""
    assert out.returncode == 0, f"{what} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    assert not work.resolve().is_relative_to(REPO), f"{work} must be outside the checkout {REPO}"
    start = time.monotonic()
    wheel, src = build_wheel(work)
    built = time.monotonic()
    venv = work / "venv"
    _checked(subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True), "python -m venv")
    _checked(
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", str(wheel)],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=900,
        ),
        f"pip install {wheel.name}",
    )
    print(
        f"wheel {wheel.name}: {wheel.stat().st_size / 1e3:.0f} kB, built in {built - start:.1f}s, "
        f"installed with its dependencies in {time.monotonic() - built:.1f}s"
    )
    return Installed(venv, work, wheel, src)


def _moved(recipe: GoRecipe, root: Path) -> GoRecipe:
    """The recipe with its sources under `root` instead of the checkout."""
    dirs = {f: root / getattr(recipe, f).relative_to(REPO) for f in ("recipe_dir", "local_root") if getattr(recipe, f)}
    return dataclasses.replace(recipe, **dirs)


def test_wheel_carries_every_data_file(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = [f for f in data_files(installed.src) if f not in names]
    assert not missing, f"the wheel lacks {missing}: add their pattern to [tool.setuptools.package-data]"


def test_commands_run_from_the_installation(installed: Installed) -> None:
    where = _checked(
        installed.run("python", "-c", "import drivers_under_test; print(drivers_under_test.__file__)"), "import drivers_under_test"
    )
    assert Path(where.strip()).is_relative_to(installed.venv), f"dralab was imported from {where.strip()}, not the venv"


def test_validate_shipped_profiles(installed: Installed) -> None:
    names = shipped_profiles()
    out = _checked(installed.run("dralab", "driver", "validate", *names), "dralab driver validate")
    assert out.count(": valid") == len(names), out
    assert str(installed.venv) in out, f"the profiles validated are not the installed ones:\n{out}"


def test_provision_offline_finds_the_checkouts_components(installed: Installed) -> None:
    installed_keys = json.loads(_checked(installed.run("python", "-c", RECIPE_KEYS), "the installed recipes' keys"))
    for recipe in GO_RECIPES:
        key, files = installed_keys[recipe.name]
        built_from = _moved(recipe, installed.src)
        ours = sorted(str(f.relative_to(installed.src)) for f in built_from.source_files())
        assert files == ours, f"{recipe.name}: the wheel lacks {sorted(set(ours) - set(files))}"
        assert key == built_from.key(), f"{recipe.name}: the installed sources differ from the checkout's"
    try:
        provision(offline=True)
    except BadInput as e:  # the same answer from the wheel proves nothing
        pytest.skip(f"the checkout's own components are not in the cache ({e}): run `dralab provision` first")
    _checked(installed.run("dralab", "provision", "--offline"), "dralab provision --offline from the wheel")


def test_suites_collect_as_certify_runs_them(installed: Installed) -> None:
    out = _checked(installed.run("python", "-c", COLLECT_SUITES), "collecting the installed suites")
    summary = next((line for line in out.splitlines() if " collected" in line), "")
    assert summary and "error" not in summary, out[-2000:]
