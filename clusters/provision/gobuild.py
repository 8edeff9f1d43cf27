"""Build Go programs from modules at pinned versions, through a generated wrapper module.

`go install module/cmd@version` refuses modules whose go.mod has replace directives
(k8s.io/kubernetes, etcd's server). A wrapper module of ours requires the pinned module, pins
what needs pinning with replace directives, and builds either its own main.go (a recipe dir)
or packages of the required modules listed as `tool` directives.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from basics.errors import LabBroken
from basics.progress import run_logged

RECIPES = Path(__file__).parent / "recipes"
# A binary named so is built as a C shared library, with its name as its soname: a program that
# loads it by soname (dlopen("libnvidia-ml.so.1")) then finds it where it was preloaded by another name.
SHARED_LIBRARY = re.compile(r"^lib[\w-]+\.so(\.\d+)*$")


@dataclass(frozen=True)
class GoRecipe:
    """What to build and how; every field takes part in the cache key."""

    name: str
    version: str
    requires: dict[str, str] = field(default_factory=dict)
    replaces: dict[str, str] = field(default_factory=dict)
    # Replace every `require <module> v0.0.0` of this module's go.mod (k8s.io/kubernetes's
    # staging modules) with the given version; resolved at build time from the go.mod itself.
    pin_unversioned_requires_of: tuple[str, str] | None = None
    # Output name -> package path; "." is the wrapper's own main package from `recipe_dir`.
    binaries: dict[str, str] = field(default_factory=dict)
    # Output name -> package whose tests are compiled into it (`go test -c`): a ginkgo suite.
    tests: dict[str, str] = field(default_factory=dict)
    # Extra names under which a multi-call binary is linked: alias -> binary.
    links: dict[str, str] = field(default_factory=dict)
    recipe_dir: Path | None = None
    # A module of this repository (drivers_under_test) built in place instead of a wrapper.
    local_module: Path | None = None
    cgo: bool = False
    tags: tuple[str, ...] = ()
    ldflags: str = "-s -w"

    def source_files(self) -> list[Path]:
        roots = [p for p in (self.recipe_dir, self.local_module) if p is not None]
        files: list[Path] = []
        for root in roots:
            files += sorted(
                p
                for p in root.rglob("*")
                if p.is_file()
                and p.suffix in {".go", ".mod", ".sum", ".c"}
                # a local module's tests do not change its binaries; a recipe's tests are one
                and not (root == self.local_module and p.name.endswith("_test.go"))
            )
        return files

    def key(self) -> str:
        h = hashlib.sha256()
        # `tests` only when set: recipes without it keep the keys (and the cached builds) they had.
        desc = {k: v for k, v in self.__dict__.items() if k not in ("recipe_dir", "local_module") and not (k == "tests" and not v)}
        h.update(json.dumps(desc, sort_keys=True, default=str).encode())
        h.update(go_version().encode())
        for f in self.source_files():
            h.update(str(f.name).encode())
            h.update(f.read_bytes())
        return h.hexdigest()[:12]

    def all_replaces(self) -> dict[str, str]:
        replaces = dict(self.replaces)
        if self.pin_unversioned_requires_of is not None:
            module, version = self.pin_unversioned_requires_of
            gomod = module_gomod(module, self.requires[module])
            for staged in re.findall(r"^\s*(\S+) v0\.0\.0$", gomod, re.MULTILINE):
                replaces.setdefault(staged, version)
        return replaces

    def go_mod(self, go_directive: str) -> str:
        lines = [f"module dralab.dev/build/{self.name}", "", f"go {go_directive}", ""]
        lines += [f"require {m} {v}" for m, v in sorted(self.requires.items())]
        lines += [f"replace {m} => {m} {v}" for m, v in sorted(self.all_replaces().items())]
        lines += [f"tool {p}" for p in sorted(set(self.binaries.values())) if p != "."]
        return "\n".join(lines) + "\n"


_go_version: str | None = None


def go_version() -> str:
    global _go_version
    if _go_version is None:
        if shutil.which("go") is None:
            raise LabBroken("`go` is not on PATH: dralab builds every component from Go modules; install Go >= 1.26")
        _go_version = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    return _go_version


def download(module: str, version: str) -> dict[str, str]:
    """A module version through the Go module proxy (and its local cache): `go mod download
    -json`'s answer, with Dir (the source tree, read-only) and GoMod."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True, cwd=Path.home()
    )  # no go.mod of a checkout in the way
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Dir" not in info:
        raise LabBroken(f"cannot download {module}@{version}: {info.get('Error') or out.stderr.strip()}")
    return info


def module_gomod(module: str, version: str) -> str:
    """The go.mod of a module version, through the Go module proxy."""
    return Path(download(module, version)["GoMod"]).read_text()


def build(recipe: GoRecipe, out_dir: Path, work_dir: Path, log: Path) -> None:
    """Build every binary of `recipe` into `out_dir` (which must not exist yet)."""
    env = dict(os.environ, CGO_ENABLED="1" if recipe.cgo else "0", GOFLAGS="-buildvcs=false")
    if recipe.local_module is not None:
        src = recipe.local_module
    else:
        src = work_dir
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        if recipe.recipe_dir is not None:
            for f in recipe.recipe_dir.glob("*.go"):  # _test.go too: a recipe's suite
                shutil.copy(f, src / f.name)
        (src / "go.mod").write_text(recipe.go_mod(go_version().removeprefix("go")))
        run_logged(["go", "mod", "tidy"], log, cwd=src, env=env, what=f"resolving modules for {recipe.name}")
    staging = out_dir.with_name(out_dir.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for binary, package in recipe.binaries.items():
        cmd = ["go", "build", "-trimpath", "-o", str(staging / binary), "-ldflags", recipe.ldflags]
        if SHARED_LIBRARY.match(binary):  # cgo's #cgo LDFLAGS do not take -soname
            cmd[-1] = f"{recipe.ldflags} -extldflags=-Wl,-soname,{binary}".strip()
            cmd.append("-buildmode=c-shared")
        if recipe.tags:
            cmd += ["-tags", ",".join(recipe.tags)]
        run_logged(cmd + [package], log, cwd=src, env=env, what=f"building {binary} ({recipe.name} {recipe.version})")
    for binary, package in recipe.tests.items():
        run_logged(
            ["go", "test", "-c", "-trimpath", "-o", str(staging / binary), "-ldflags", recipe.ldflags, package],
            log,
            cwd=src,
            env=env,
            what=f"building {binary} ({recipe.name} {recipe.version})",
        )
    for alias, binary in recipe.links.items():
        (staging / alias).symlink_to(binary)
    staging.rename(out_dir)
