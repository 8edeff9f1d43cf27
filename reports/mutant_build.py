"""A mutant's build (`dralab mutants`): the drivers module copied with the mutant applied, never the
tree, and the reference drivers' programs that contain the mutated file built from the copy as
the tree's are (clusters.provision.components), cached by the copy's source as the drivers image
is by the tree's (GoRecipe.key)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

from clusters.provision import ensure_go
from clusters.provision.components import DRIVERS_UNDER_TEST, DRIVERS_WITH_CGO
from clusters.provision.gobuild import GoRecipe
from reports.mutant_listing import Mutant, go_env

# The reference drivers' programs (drivers_under_test/cmd) and the profile that certifies each.
# gpu-nvml runs gpu-dra-driver too, on NVML (HW-10): its own lab, left to `make certify-nvml`.
PROGRAMS = {"gpu-dra-driver": "gpu", "vf-dra-driver": "net", "fake-gpu-plugin": "fake-gpu-plugin"}
# The recipes the programs are built by in the tree: cgo or not, as there.
BASES = (DRIVERS_UNDER_TEST, DRIVERS_WITH_CGO)


def programs_of(module: Path) -> dict[str, set[str]]:
    """Program -> the directories, relative to `module`, of its packages in the module."""
    out = {}
    for program in PROGRAMS:
        listed = subprocess.run(
            ["go", "list", "-deps", "-f", "{{.Dir}}", f"./cmd/{program}"],
            cwd=module,
            env=go_env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        out[program] = {Path(d).relative_to(module).as_posix() for d in listed if Path(d).is_relative_to(module)}
    return out


def affected(mutant: Mutant, programs: dict[str, set[str]]) -> list[str]:
    """The programs the mutated file goes into."""
    return [p for p, dirs in programs.items() if Path(mutant.file).parent.as_posix() in dirs]


def applied(mutant: Mutant, module: Path, root: Path) -> Path:
    """`module` copied to `root`/<its name> (the tree's layout, which the build recipes name) with
    the mutant's file in place of its own; `root`, made afresh."""
    if root.exists():
        shutil.rmtree(root)
    copy = root / module.name
    shutil.copytree(module, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (copy / mutant.file).write_text(mutant.source)
    return root


def recipes(root: Path, programs: list[str]) -> list[GoRecipe]:
    """The tree's recipes of `programs`, named apart, built from the copy under `root`: their keys
    hash its source, so each mutant's build is cached by its own."""
    out = []
    for base in BASES:
        wanted = {name: package for name, package in base.binaries.items() if name in programs}
        if wanted:
            out.append(dataclasses.replace(base, name=f"mutant-{base.name}", local_root=root, binaries=wanted))
    return out


def built(mutant: Mutant, module: Path, programs: list[str], work: Path) -> list[Path]:
    """The directories of the mutant's builds of `programs` (built unless cached); LabBroken with
    the compiler's words when it does not build."""
    root = applied(mutant, module, work)
    try:
        return [ensure_go(recipe, offline=False) for recipe in recipes(root, programs)]
    finally:
        shutil.rmtree(root)  # the builds are cached; the copy served its purpose
