"""Build Go programs from modules at pinned versions, through a generated wrapper module.

`go install module/cmd@version` refuses modules whose go.mod has replace directives
(k8s.io/kubernetes, etcd's server). A wrapper module of ours requires the pinned module, pins
what needs pinning with replace directives, and builds either its own main.go (a recipe dir)
or packages of the required modules listed as `tool` directives. This repository's own programs
are built in place, each in the module of the room it lives in (docs/architecture.md, "Go code").
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
from typing import Any

from basics.errors import LabBroken
from basics.progress import run_logged

RECIPES = Path(__file__).parent / "recipes"
# A binary named so is built as a C shared library, with its name as its soname: a program that
# loads it by soname (dlopen("libnvidia-ml.so.1")) then finds it where it was preloaded by another name.
SHARED_LIBRARY = re.compile(r"^lib[\w-]+\.so(\.\d+)*$")
GO_SOURCES = {".go", ".mod", ".sum", ".c"}


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
    # This repository's tree, for its own programs: each binary's package is a directory under it
    # (fake_hardware/cmd/sysfs-fuse), built in place in the room's module that holds it, no wrapper.
    local_root: Path | None = None
    cgo: bool = False
    tags: tuple[str, ...] = ()
    ldflags: str = "-s -w"

    def source_files(self) -> list[Path]:
        files: list[Path] = []
        if self.recipe_dir is not None:  # a recipe's tests are one of its binaries
            files += sorted(p for p in self.recipe_dir.rglob("*") if p.is_file() and p.suffix in GO_SOURCES)
        for module in self.local_modules():
            files += module_sources(module)
        return files

    def local_modules(self) -> list[Path]:
        """The modules of this repository the binaries are built from: each one's module, and what
        those replace with a directory of the tree (suites' probes use drivers_under_test's packages)."""
        if self.local_root is None:
            return []
        found: list[Path] = []
        pending = [module_of(self.local_root / package, self.local_root) for package in self.binaries.values()]
        while pending:
            module = pending.pop()
            if module not in found:
                found.append(module)
                replaces = module_edit_json(module).get("Replace") or []
                pending += [Path(os.path.normpath(module / r["New"]["Path"])) for r in replaces if is_local(r)]
        return sorted(found)

    def key(self) -> str:
        h = hashlib.sha256()
        # `tests` only when set: recipes without it keep the keys (and the cached builds) they had.
        desc = {k: v for k, v in self.__dict__.items() if k not in ("recipe_dir", "local_root") and not (k == "tests" and not v)}
        h.update(json.dumps(desc, sort_keys=True, default=str).encode())
        h.update(go_version().encode())
        for f in self.source_files():
            # a file of the tree by its path there: moved to another package, it builds something else
            h.update((f.relative_to(self.local_root).as_posix() if self.local_root else f.name).encode())
            h.update(f.read_bytes())
        return h.hexdigest()[:12]

    def located(self, package: str, work_dir: Path) -> tuple[Path, str]:
        """Where `go build` runs for `package`, and the package as it names it there: a package of
        the tree in its own module, any other in the wrapper module at `work_dir`."""
        if self.local_root is None:
            return work_dir, package
        module = module_of(self.local_root / package, self.local_root)
        return module, "./" + (self.local_root / package).relative_to(module).as_posix()

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


def module_of(package_dir: Path, root: Path) -> Path:
    """The module holding `package_dir`: the nearest directory up to `root` with a go.mod."""
    for d in (package_dir, *package_dir.parents):
        if (d / "go.mod").exists():
            return d
        if d == root:
            break
    raise LabBroken(f"{package_dir} is in no Go module under {root}")


def module_edit_json(module: Path) -> dict[str, Any]:
    """`module`'s go.mod as `go mod edit -json` reads it (no network)."""
    out = subprocess.run(["go", "mod", "edit", "-json"], cwd=module, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def is_local(replace: dict[str, Any]) -> bool:
    """A replace directive naming a directory (a path, no version) rather than a module version."""
    return replace["New"]["Path"].startswith(("./", "../"))


def module_sources(module: Path) -> list[Path]:
    """The files of `module` that can go into its binaries: go.mod, go.sum, and each .go (tests
    excepted) and .c file where Go looks for packages, skipping as it does directories named .* or
    _* or testdata, nested modules and the go.mod's `ignore ./...` ones (a bare-name ignore still
    counts here: a needless rebuild, never a stale one)."""
    ignored = {module / i["Path"] for i in module_edit_json(module).get("Ignore") or [] if i["Path"].startswith("./")}
    files = []
    for d, dirs, names in os.walk(module):
        here = Path(d)
        dirs[:] = [
            s
            for s in dirs
            if not s.startswith((".", "_")) and s != "testdata" and not (here / s / "go.mod").exists() and (here / s) not in ignored
        ]
        files += [here / n for n in names if Path(n).suffix in GO_SOURCES and not n.endswith("_test.go")]
    return sorted(files)


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
    # GOWORK=off: a build reads its module's go.mod and go.sum alone, which the key covers; the
    # checkout's go.work, which an installed wheel lacks, would select versions across all modules.
    env = dict(os.environ, CGO_ENABLED="1" if recipe.cgo else "0", GOFLAGS="-buildvcs=false", GOWORK="off")
    if recipe.local_root is None:
        if work_dir.exists():
            shutil.rmtree(work_dir)
        work_dir.mkdir(parents=True)
        if recipe.recipe_dir is not None:
            for f in recipe.recipe_dir.glob("*.go"):  # _test.go too: a recipe's suite
                shutil.copy(f, work_dir / f.name)
        (work_dir / "go.mod").write_text(recipe.go_mod(go_version().removeprefix("go")))
        run_logged(["go", "mod", "tidy"], log, cwd=work_dir, env=env, what=f"resolving modules for {recipe.name}")
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
        cwd, package = recipe.located(package, work_dir)
        run_logged(cmd + [package], log, cwd=cwd, env=env, what=f"building {binary} ({recipe.name} {recipe.version})")
    for binary, package in recipe.tests.items():
        cwd, package = recipe.located(package, work_dir)
        run_logged(
            ["go", "test", "-c", "-trimpath", "-o", str(staging / binary), "-ldflags", recipe.ldflags, package],
            log,
            cwd=cwd,
            env=env,
            what=f"building {binary} ({recipe.name} {recipe.version})",
        )
    for alias, binary in recipe.links.items():
        (staging / alias).symlink_to(binary)
    staging.rename(out_dir)
