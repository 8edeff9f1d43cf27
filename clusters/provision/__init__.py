"""`dralab provision` (LAB-01): every pinned component, built once and cached by version and recipe.

The cache lives in a stable directory (DRALAB_CACHE, default /var/cache/dralab) so a second
run, a CI run on the same machine and every `dralab up` reuse it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from clusters import versions
from basics.errors import BadInput, LabBroken
from basics.file_locks import held, waited_for
from basics.progress import run_logged, step
from clusters.provision import gobuild, images
from clusters.provision.components import (
    CGO_DRIVER_BINARIES,
    CNI_BIN_DIR,
    CONTAINERD,
    DEBIAN_PACKAGES,
    DRIVER_BINARIES,
    DRIVERS_UNDER_TEST,
    DRIVERS_WITH_CGO,
    ETCD,
    HELM,
    KWOK,
    NVIDIA_SMI_FILE,
    NVML_LIBRARY_FILE,
    GO_RECIPES,
    KUBERNETES,
    RUNC,
    STATIC_TOOLS,
    kubernetes_recipe,
)
from clusters.provision.gobuild import RECIPES, GoRecipe


def cache_root() -> Path:
    return Path(os.environ.get("DRALAB_CACHE", "/var/cache/dralab"))


@dataclass(frozen=True)
class Image:
    ref: str
    archive: Path
    digest: str


@dataclass(frozen=True)
class Toolchain:
    """Where the provisioned binaries and image archives are."""

    kubernetes: Path
    etcd_dir: Path
    containerd: Path
    runc_dir: Path
    drivers_under_test: Path
    drivers_with_cgo: Path
    images: tuple[Image, ...]
    allure: Path
    kwok_dir: Path
    kubernetes_version: str = versions.KUBERNETES

    def kube(self, component: str) -> Path:
        return self.kubernetes / component

    @property
    def kubectl(self) -> Path:
        return self.kube("kubectl")

    @property
    def etcd(self) -> Path:
        return self.etcd_dir / "etcd"

    @property
    def runc(self) -> Path:
        return self.runc_dir / "runc"

    @property
    def nvml_library(self) -> Path:
        return self.drivers_with_cgo / NVML_LIBRARY_FILE

    @property
    def nvidia_smi(self) -> Path:
        return self.drivers_with_cgo / NVIDIA_SMI_FILE

    @property
    def kwok(self) -> Path:
        return self.kwok_dir / "kwok"

    @property
    def kwok_stages(self) -> Path:
        return self.kwok_dir / "kwok-stages"

    @property
    def cni_bin_dir(self) -> Path:
        return CNI_BIN_DIR

    @property
    def node_images(self) -> tuple[Image, ...]:
        """What every node gets at bring-up; driver images are imported when a driver is deployed."""
        return tuple(i for i in self.images if i != self.drivers_image)

    @property
    def drivers_image(self) -> Image:
        return next(i for i in self.images if i.ref.startswith(versions.DRIVERS_IMAGE_REPO + ":"))

    def versions(self) -> dict[str, str]:
        return versions.ALL | {"kubernetes": self.kubernetes_version}


def _component_dir(recipe: GoRecipe) -> Path:
    return cache_root() / "components" / f"{recipe.name}-{recipe.version}-{recipe.key()}"


def _ensure_debian_packages(offline: bool) -> None:
    missing = [pkg for pkg, marker in DEBIAN_PACKAGES.items() if not marker.exists()]
    if not missing:
        return
    if offline:
        raise BadInput(f"Debian packages missing: {', '.join(missing)}; run `dralab provision` without --offline")
    log = cache_root() / "logs" / "apt.log"
    with (
        waited_for(cache_root() / "locks" / "apt.lock", "installing Debian packages"),
        step(f"Installing Debian packages: {', '.join(missing)}"),
    ):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run_logged(["apt-get", "update", "-q"], log, env=env, what="apt-get update")
        run_logged(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
            log,
            env=env,
            what=f"apt-get install {' '.join(missing)}",
        )


def _ensure_allure(offline: bool) -> Path:
    """The allure 3 CLI from the npm registry, under the cache keyed by its version."""
    prefix = cache_root() / "npm" / f"allure-{versions.ALLURE}"
    cli = prefix / "node_modules" / ".bin" / "allure"
    if cli.exists():
        return cli
    if offline:
        raise BadInput(f"the allure CLI {versions.ALLURE} is not in the cache ({cli}); run `dralab provision` without --offline first")
    log = cache_root() / "logs" / "npm-allure.log"

    def install() -> None:
        with step(f"Installing allure {versions.ALLURE} from the npm registry (log: {log})"):
            run_logged(
                ["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", f"allure@{versions.ALLURE}"],
                log,
                what=f"npm install allure@{versions.ALLURE}",
            )

    _once(cli, f"installing allure {versions.ALLURE}", install)
    return cli


def _once(out: Path, doing: str, build: Callable[[], None]) -> None:
    """Build `out` unless the cache has it, one command at a time: a second one waits for the
    first's build (and says so), then finds it done."""
    if out.exists():
        return
    with waited_for(cache_root() / "locks" / f"{out.name}.lock", doing):
        if not out.exists():
            build()


def ensure_go(recipe: GoRecipe, offline: bool) -> Path:
    out = _component_dir(recipe)
    if not offline:
        _once(out, f"building {recipe.name} {recipe.version}", lambda: _build(recipe, out))
    if out.is_dir():
        os.utime(out)  # in use: not stale for _prune
        return out
    raise BadInput(f"{recipe.name} {recipe.version} is not in the cache ({out}); run `dralab provision` without --offline first")


def _build(recipe: GoRecipe, out: Path) -> None:
    log = cache_root() / "logs" / f"build-{recipe.name}-{recipe.version}.log"
    log.unlink(missing_ok=True)
    with step(f"Building {recipe.name} {recipe.version} from Go modules (log: {log})"):
        gobuild.build(recipe, out, cache_root() / "work" / f"{recipe.name}-{recipe.key()}", log)
    if recipe.local_root is not None:  # our own code changes often: keep only the newest build
        _prune(out.parent.glob(f"{recipe.name}-{recipe.version}-*"), keep=out)


STALE_SECONDS = 24 * 3600
IN_USE_REFRESH_SECONDS = 3600


def _prune(paths: Iterable[Path], keep: Path) -> None:
    """Remove other builds unused for a day: a checkout of other sources (a CI clone) may be
    using a build of its own right now. Never one a live process runs or names (a lab started a
    day ago) or one whose build lock is held."""
    os.utime(keep)
    for path in paths:
        if (
            path != keep
            and time.time() - path.stat().st_mtime > STALE_SECONDS
            and not _in_use(path)
            and not held(cache_root() / "locks" / f"{path.name.removesuffix('.partial')}.lock")
        ):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _in_use(path: Path) -> bool:
    """Some process runs a program under `path` or names it on its command line."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = os.readlink(proc / "exe")
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if any(p == str(path) or p.startswith(f"{path}/") for p in [exe, *cmdline]):
            return True
    return False


def pause_binary(offline: bool) -> Path:
    source = RECIPES / "images" / "pause.c"
    key = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = cache_root() / "components" / f"pause-{key}" / "pause"
    if out.exists():
        return out
    if offline:
        raise BadInput(f"the pause binary is not in the cache ({out}); run `dralab provision` without --offline")
    out.parent.mkdir(parents=True, exist_ok=True)

    def compile_it() -> None:
        run_logged(
            ["gcc", "-static", "-Os", "-s", "-o", f"{out}.partial", source],
            cache_root() / "logs" / "build-pause.log",
            what="compiling the pause binary with gcc -static",
        )
        os.rename(f"{out}.partial", out)

    _once(out, "compiling the pause binary", compile_it)
    return out


def _busybox_applets() -> list[str]:
    out = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True, check=True).stdout
    return [a for a in out.split() if a != "busybox"]


def c_library_files(binaries: Iterable[Path]) -> dict[str, Path]:
    """What the dynamically linked binaries load at start (libc, the loader), at the paths they name."""
    files = {}
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
        for path in re.findall(r"(/\S+) \(0x", out):
            files[path] = Path(path).resolve()
    return files


def static_tools(tools: Iterable[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """The files and symlinks of Debian's static `tools` (busybox with its applets, bash) in an image."""
    files: dict[str, Path] = {}
    links: dict[str, str] = {}
    for tool in tools:
        files[f"/bin/{tool}"] = STATIC_TOOLS[tool]
        if tool == "busybox":
            links.update({f"/bin/{a}": "busybox" for a in _busybox_applets()})
    links = {link: target for link, target in links.items() if link not in files}  # bash stays bash
    return files, links


def busybox_image(ref: str, files: dict[str, Path] | None = None, entrypoint: list[str] | None = None) -> images.ImageSpec:
    """An image with Debian's static busybox as its shell and tools, and `files` beside it."""
    tools, links = static_tools(["busybox"])
    contents = {**tools, **(files or {})}
    dirs, texts = images.base(set(contents))
    return images.ImageSpec(
        ref=ref, files=contents, symlinks=links, dirs=dirs, texts=texts, entrypoint=entrypoint or [], cmd=[] if entrypoint else ["/bin/sh"]
    )


# Builds of some of the reference drivers' programs (`dralab mutants`: a mutant's), separated by
# os.pathsep, whose programs the drivers image carries in place of the tree's. An environment
# variable, so that every process of a run (certify's pytest runs, their labs' deploys, the report's
# record of the images) builds and names the same image.
DRIVERS_BUILDS = "DRALAB_DRIVERS_BUILDS"


def other_drivers_builds() -> tuple[Path, ...]:
    return tuple(Path(p) for p in os.environ.get(DRIVERS_BUILDS, "").split(os.pathsep) if p)


@contextlib.contextmanager
def drivers_built_in(builds: Sequence[Path]) -> Iterator[None]:
    """Within: the drivers image has the programs of `builds` in place of the tree's (DRIVERS_BUILDS)."""
    before = os.environ.get(DRIVERS_BUILDS)
    os.environ[DRIVERS_BUILDS] = os.pathsep.join(map(str, builds))
    try:
        yield
    finally:
        if before is None:
            del os.environ[DRIVERS_BUILDS]
        else:
            os.environ[DRIVERS_BUILDS] = before


def image_specs(pause: Path, built: Path, built_cgo: Path, instead: Sequence[Path] = ()) -> list[images.ImageSpec]:
    """The pause image, the workload image and the reference drivers' image (busybox for a shell),
    with the programs the builds `instead` have taken from them, tagged apart from the tree's image."""

    def program(name: str, build: Path) -> Path:
        return next((d / name for d in instead if (d / name).exists()), build / name)

    tag = hashlib.sha256(" ".join(d.name for d in instead).encode()).hexdigest()[:12] if instead else built.name.rsplit("-", 1)[1]
    cgo_binaries = {f"/usr/local/bin/{name}": program(name, built_cgo) for name in CGO_DRIVER_BINARIES}
    return [
        images.ImageSpec(ref=versions.PAUSE_IMAGE, files={"/pause": pause}, entrypoint=["/pause"]),
        busybox_image(versions.WORKLOAD_IMAGE, {"/usr/local/bin/incluster-whoami": built / "incluster-whoami"}),
        busybox_image(
            f"{versions.DRIVERS_IMAGE_REPO}:{tag}",
            {
                **{f"/usr/local/bin/{name}": program(name, built) for name in DRIVER_BINARIES},
                **cgo_binaries,
                **c_library_files(cgo_binaries.values()),
            },
        ),
    ]


def store_image(spec: images.ImageSpec) -> Image:
    """`spec`'s archive in the cache, named by its digest; older builds of the image pruned."""
    archive, digest = images.oci_archive(spec)
    path = cache_root() / "images" / f"{spec.ref.rsplit('/', 1)[-1].replace(':', '_')}-{digest[7:19]}.tar"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")  # two commands writing it at once write their own
        partial.write_bytes(archive)
        partial.replace(path)
        _prune(path.parent.glob(f"{path.name.split('_')[0]}_*.tar"), keep=path)  # older builds of this image
    elif time.time() - path.stat().st_mtime > IN_USE_REFRESH_SECONDS:
        # In use: not stale for _prune. Touched at most hourly: the nodes' import record keys an
        # archive by its mtime too, and a touch at every lab start made each live lab's nodes import
        # the 165 MB drivers image again at their next deploy (5 times a node in one certify).
        os.utime(path)
    return Image(spec.ref, path, digest)


def _ensure_images(pause: Path, built: Path, built_cgo: Path) -> tuple[Image, ...]:
    return tuple(store_image(spec) for spec in image_specs(pause, built, built_cgo, other_drivers_builds()))


def provision(offline: bool = False, kubernetes_version: str = versions.KUBERNETES) -> Toolchain:
    """Build or find every component, Kubernetes at `kubernetes_version`; with `offline`, only find
    (BadInput if anything is missing)."""
    if why := versions.unsupported(kubernetes_version):
        raise BadInput(f"{why} (--kubernetes-version)")
    if os.geteuid() != 0 and not offline:
        raise BadInput("dralab provision installs Debian packages and must run as root (try: sudo dralab provision)")
    cache_root().mkdir(parents=True, exist_ok=True)
    _ensure_debian_packages(offline)
    recipes = [kubernetes_recipe(kubernetes_version) if r is KUBERNETES else r for r in GO_RECIPES]
    dirs = {r.name: ensure_go(r, offline) for r in recipes}
    pause = pause_binary(offline)
    imgs = _ensure_images(pause, dirs[DRIVERS_UNDER_TEST.name], dirs[DRIVERS_WITH_CGO.name])
    return Toolchain(
        kubernetes=dirs[KUBERNETES.name],
        etcd_dir=dirs[ETCD.name],
        containerd=dirs[CONTAINERD.name],
        runc_dir=dirs[RUNC.name],
        drivers_under_test=dirs[DRIVERS_UNDER_TEST.name],
        drivers_with_cgo=dirs[DRIVERS_WITH_CGO.name],
        images=imgs,
        allure=_ensure_allure(offline),
        kwok_dir=dirs[KWOK.name],
        kubernetes_version=kubernetes_version,
    )


def helm() -> Path:
    """The pinned helm, which renders the charts driver profiles name; BadInput naming the fix
    when `dralab provision` has not built it."""
    return ensure_go(HELM, offline=True) / "helm"


def check_toolchain_usable(tools: Toolchain) -> None:
    for path in (tools.kube("kube-apiserver"), tools.etcd, tools.containerd / "containerd", tools.runc):
        if not os.access(path, os.X_OK):
            raise LabBroken(f"{path} is missing or not executable; remove {path.parent} and run `dralab provision`")
    if shutil.which("iptables") is None:
        raise BadInput("iptables is not installed (kube-proxy needs it); run `dralab provision`")
