"""What dralab's wheel must carry besides Python modules: every other file under the packages
pyproject.toml ships (driver and hardware profiles, manifests, the Go modules' sources with their
go.mod and go.sum, build recipes, the catalogue), because the code opens them from its own tree."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SKIPPED = ("__pycache__", ".pytest_cache")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def package_dirs() -> list[str]:
    """The top-level package directories (`packages.find` include patterns are `name*`)."""
    include = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    return [pattern.rstrip("*") for pattern in include]


def package_data_patterns() -> list[str]:
    return [p for patterns in pyproject()["tool"]["setuptools"]["package-data"].values() for p in patterns]


def data_files(root: Path = REPO) -> list[str]:
    """Every file of the shipped package directories under `root` (the checkout or a copy of it)
    that is no Python module, relative to `root`."""
    files = []
    for top in package_dirs():
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root)
            if path.is_file() and path.suffix not in (".py", ".pyc") and not set(relative.parts) & set(SKIPPED):
                files.append(relative.as_posix())
    return files


def unshipped(files: list[str]) -> list[str]:
    """The files no package-data pattern takes (setuptools matches a pattern against the name
    within each package directory; directories without __init__.py are namespace packages)."""
    patterns = package_data_patterns()
    return [f for f in files if not any(fnmatch.fnmatch(Path(f).name, p) for p in patterns)]


def build_wheel(work: Path) -> tuple[Path, Path]:
    """dralab's wheel, built in `work` from a copy of the checkout (setuptools writes build/ and
    *.egg-info into the tree it builds, and the checkout is shared with running tests and other
    work): the wheel and the copy."""
    src = work / "src"
    src.mkdir()
    shutil.copy(REPO / "pyproject.toml", src)
    for top in package_dirs():
        shutil.copytree(REPO / top, src / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(work / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"pip wheel exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return next((work / "dist").glob("dralab-*.whl")), src
