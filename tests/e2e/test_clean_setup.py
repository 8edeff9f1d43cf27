"""The README's set-up leaves the system interpreter alone (issue 21): `make setup` in a fresh
clone creates its virtualenv and installs everything there, and the system interpreter's package
list is the same before and after. Needs the PyPI index and a provisioned cache, no lab."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.package_files import REPO

pytestmark = pytest.mark.e2e

SYSTEM_PYTHON = "/usr/bin/python3"


def _system_packages() -> list[str]:
    done = subprocess.run(
        [SYSTEM_PYTHON, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"], capture_output=True, text=True, timeout=120
    )
    # Without pip in the system interpreter nothing can have been pip-installed into it: compare its site-packages.
    if done.returncode != 0:
        listed = subprocess.run(
            [
                SYSTEM_PYTHON,
                "-c",
                "import sys, os; print('\\n'.join(sorted(f for p in sys.path if os.path.isdir(p) for f in os.listdir(p))))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return listed.stdout.split()
    return done.stdout.split()


def test_make_setup_in_a_fresh_clone_changes_nothing_in_the_system_interpreter(tmp_path: Path) -> None:
    if not shutil.which("git") or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    before = _system_packages()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "setup"], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"make setup exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert (clone / ".venv" / "bin" / "dralab").exists(), "make setup created no .venv with dralab in it"
    after = _system_packages()
    assert before, "could not list the system interpreter's packages"
    added, removed = sorted(set(after) - set(before)), sorted(set(before) - set(after))
    assert not added and not removed, f"make setup changed the system interpreter: added {added}, removed {removed}"
