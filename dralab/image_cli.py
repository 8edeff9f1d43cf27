"""`dralab image build`: a driver's image archive from its binaries and files, without Docker.

One layer, written by the lab's own image code (clusters/provision/images.py) as the OCI layout
`ctr images import` takes and `dralab driver validate` checks. A dynamically linked ELF file (a
cgo binary) brings the shared libraries and the loader `ldd` finds for it, so a vendor with
binaries only needs no base image.
"""

from __future__ import annotations

import os
import platform as host
import posixpath
import re
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import click

from basics.errors import BadInput
from basics.progress import console
from clusters.provision import c_library_files, images

EXAMPLE_TAG = "registry.acme.example/gpu-driver:1.0"
EXAMPLE_ENTRYPOINT = "/usr/bin/gpu-kubeletplugin"
EXAMPLE_FILE = f"./bin/gpu-kubeletplugin:{EXAMPLE_ENTRYPOINT}"
# `uname -m` in the architecture names of image configs (Go's), for the default platform.
MACHINES = {"x86_64": "amd64", "aarch64": "arm64"}
# ELF e_machine values in those names, to refuse a binary built for another platform.
ELF_MACHINES = {3: "386", 22: "s390x", 40: "arm", 62: "amd64", 183: "arm64", 243: "riscv64"}
PT_DYNAMIC = 2
# The reference grammar of distribution/reference: a registry host, path components, a tag.
DOMAIN = re.compile(
    r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"(?::[0-9]+)?$"
)
COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REPOSITORY = re.compile(rf"^{COMPONENT}(?:/{COMPONENT})*$")
TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
PLATFORM = re.compile(r"^[a-z0-9]+/[a-z0-9]+$")


class Elf(NamedTuple):
    architecture: str | None  # None: a machine not in ELF_MACHINES
    dynamic: bool


@dataclass
class Contents:
    """What goes into the layer, each path in the image with where it comes from."""

    files: dict[str, Path] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # a file's or symlink's path -> the option giving it

    def add_file(self, dest: str, src: Path, origin: str) -> None:
        if not os.access(src, os.R_OK):
            raise BadInput(f"{origin}: {src} is not readable by this user: run as one who can read it")
        self._claim(dest, origin)
        self.files[dest] = src

    def add_symlink(self, dest: str, target: str, origin: str) -> None:
        self._claim(dest, origin)
        self.symlinks[dest] = target

    def _claim(self, dest: str, origin: str) -> None:
        if dest in self.origins:
            raise BadInput(f"{origin}: {dest} is already in the image (from {self.origins[dest]}): give each path in the image once")
        self.origins[dest] = origin


def reference(tag: str) -> str:
    """The fully qualified name the kubelet looks the image up by: a short name is expanded as
    the kubelet expands a pod's (docker.io/library/...), and the tag is required."""
    name, colon, version = tag.rpartition(":")
    first, slash, rest = name.partition("/")
    domain, path = (first, rest) if slash and ("." in first or ":" in first or first == "localhost") else ("docker.io", name)
    if domain == "docker.io" and "/" not in path:
        path = f"library/{path}"
    if not (colon and TAG.match(version) and DOMAIN.match(domain) and REPOSITORY.match(path)):
        raise BadInput(
            f"--tag {tag!r} is not an image reference with a tag: give [REGISTRY/]NAME:TAG, the name "
            f"in lower case, as your pods name the image, e.g. --tag {EXAMPLE_TAG}"
        )
    return f"{domain}/{path}:{version}"


def host_platform() -> str:
    machine = host.machine()
    return f"linux/{MACHINES.get(machine, machine)}"


def _source_and_dest(value: str, option: str) -> tuple[Path, str]:
    src, colon, dest = value.rpartition(":")
    if not (colon and src and dest.startswith("/")):
        raise BadInput(
            f"{option} {value!r}: expected SRC:DEST, a path on this machine and an absolute path in "
            f"the image, e.g. {option} {EXAMPLE_FILE if option == '--file' else './licenses:/licenses'}"
        )
    if dest.endswith("/") and option == "--file":  # into that directory, under its own name
        dest += Path(src).name
    return Path(src), posixpath.normpath(dest)


def _add_file(contents: Contents, value: str) -> None:
    src, dest = _source_and_dest(value, "--file")
    if src.is_dir():
        raise BadInput(f"--file {value}: {src} is a directory: add it with --dir {value}")
    if not src.is_file():
        raise BadInput(
            f"--file {value}: {src} is not a file (from {Path.cwd()}): give the path of a file on "
            "this machine, relative to the current directory or absolute"
        )
    contents.add_file(dest, src, f"--file {value}")


def _add_dir(contents: Contents, value: str) -> None:
    """The tree under SRC at DEST: files keep their modes, symlinks stay symlinks (as COPY does)."""
    src, dest = _source_and_dest(value, "--dir")
    if not src.is_dir():
        raise BadInput(
            f"--dir {value}: {src} is not a directory (from {Path.cwd()}): give a directory on this machine, or add a file with --file"
        )
    if dest != "/":  # the root is every layer's
        contents.dirs.append(dest)
    for root, subdirs, names in os.walk(src):
        for name in sorted([*subdirs, *names]):
            path = Path(root) / name
            in_image = posixpath.join(dest, path.relative_to(src).as_posix())
            if path.is_symlink():
                contents.add_symlink(in_image, os.readlink(path), f"--dir {value}")
            elif path.is_dir():
                contents.dirs.append(in_image)
            elif path.is_file():
                contents.add_file(in_image, path, f"--dir {value}")
            else:
                raise BadInput(
                    f"--dir {value}: {path} is neither a file, a directory nor a symlink: "
                    "remove it from the directory or give its files one by one with --file"
                )


def _elf(path: Path) -> Elf | None:
    """The architecture of an ELF file and whether it is dynamically linked (has a dynamic
    section: a cgo binary or a shared library; a static-pie's ldd lists nothing); None for
    another file."""
    with path.open("rb") as f:
        head = f.read(64)
        if len(head) < 52 or head[:4] != b"\x7fELF":  # 52: the smallest (32-bit) ELF header
            return None
        order = "<" if head[5] == 1 else ">"
        wide = head[4] == 2  # ELFCLASS64
        try:
            (machine,) = struct.unpack_from(order + "H", head, 18)
            (table_at,) = struct.unpack_from(order + ("Q" if wide else "I"), head, 32 if wide else 28)
            entry_size, entries = struct.unpack_from(order + "HH", head, 54 if wide else 42)
        except struct.error:  # truncated: not a program anything could run
            return None
        f.seek(table_at)
        table = f.read(entry_size * entries)
    types = {struct.unpack_from(order + "I", table, i)[0] for i in range(0, len(table) - 3, max(entry_size, 4))}
    return Elf(ELF_MACHINES.get(machine), PT_DYNAMIC in types)


def _shared_libraries(files: dict[str, Path], architecture: str) -> dict[str, Path]:
    """The libraries and the loader the dynamically linked files load, at the paths they ask
    for, each the file its symlinks resolve to."""
    found: dict[str, Path] = {}
    for dest, src in sorted(files.items()):
        found_elf = _elf(src)
        if found_elf is None:
            continue
        if found_elf.architecture not in (None, architecture):
            raise BadInput(
                f"{src} ({dest} in the image) is built for {found_elf.architecture}, the image for "
                f"{architecture}: give --platform linux/{found_elf.architecture}, or add the "
                f"{architecture} build"
            )
        if found_elf.dynamic:
            found.update(_ldd(src))
    return found


def _ldd(binary: Path) -> dict[str, Path]:
    try:
        return c_library_files([binary])
    except FileNotFoundError:
        raise BadInput(
            f"{binary} is dynamically linked and ldd, which finds its libraries, is not installed: "
            "install it (Debian: libc-bin), or build the binary static (Go: CGO_ENABLED=0)"
        ) from None
    except subprocess.CalledProcessError as e:
        raise BadInput(
            f"ldd cannot list the shared libraries of {binary} ({(e.stderr or e.stdout).strip()}): "
            "build the image on a machine of the binary's platform, or build it static "
            "(Go: CGO_ENABLED=0)"
        ) from None


def _check_entrypoint(entrypoint: str, contents: Contents) -> str:
    path = posixpath.normpath(entrypoint)
    if not entrypoint.startswith("/"):
        raise BadInput(
            f"--entrypoint {entrypoint!r}: give the absolute path of a program in the image, e.g. --entrypoint {EXAMPLE_ENTRYPOINT}"
        )
    src = contents.files.get(path)
    if src is None and path not in contents.symlinks:
        raise BadInput(f"--entrypoint {entrypoint}: the image has no such file: add it with --file SRC:{path}")
    if src is not None and not src.stat().st_mode & 0o111:
        raise BadInput(f"--entrypoint {entrypoint}: {src} is not executable: chmod +x {src}")
    return path


def _environment(values: tuple[str, ...]) -> list[str]:
    """The default PATH, then each K=V given (a PATH given replaces it)."""
    env = dict([images.DEFAULT_PATH.split("=", 1)])
    for value in values:
        key, equals, val = value.partition("=")
        if not (key and equals):
            raise BadInput(f"--env {value!r}: expected NAME=VALUE, e.g. --env LOG_LEVEL=2")
        env[key] = val
    return [f"{k}={v}" for k, v in env.items()]


def _check_out(out: Path) -> None:
    if out.is_dir() or not out.parent.is_dir():
        raise BadInput(f"--out {out}: give a file path in an existing directory, e.g. --out gpu-driver.tar")


def _write(out: Path, archive: bytes) -> None:
    """All or nothing at `out`: written beside it, then renamed over it."""
    partial = out.with_name(f".{out.name}.partial")
    try:
        partial.write_bytes(archive)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


@click.group()
def image() -> None:
    """Image archives for a driver profile's `images`, without Docker."""


@image.command()
@click.option("--tag", required=True, help=f"The image reference your pods use, e.g. {EXAMPLE_TAG}.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The archive to write (OCI layout tar).")
@click.option(
    "--file",
    "files",
    multiple=True,
    metavar="SRC:DEST",
    help="A file at DEST in the image, mode kept; a DEST ending in / keeps SRC's name. Repeatable.",
)
@click.option("--dir", "dirs", multiple=True, metavar="SRC:DEST", help="A directory's tree at DEST, modes and symlinks kept. Repeatable.")
@click.option("--entrypoint", default=None, help="The program the image runs, an absolute path in the image.")
@click.option(
    "--cmd", multiple=True, help="A word of the image's Cmd: the entrypoint's arguments (or, without one, the program and its). Repeatable."
)
@click.option("--env", multiple=True, metavar="NAME=VALUE", help="An environment variable. Repeatable.")
@click.option("--workdir", default="/", show_default=True, help="The working directory of the image's processes.")
@click.option("--platform", "platform_", default=host_platform(), show_default=True, metavar="OS/ARCH")
def build(
    tag: str,
    out: Path,
    files: tuple[str, ...],
    dirs: tuple[str, ...],
    entrypoint: str | None,
    cmd: tuple[str, ...],
    env: tuple[str, ...],
    workdir: str,
    platform_: str,
) -> None:
    """Write an image archive of files and binaries (no Docker, no base image): each dynamically
    linked binary (cgo) brings the libc, libraries and loader ldd finds for it."""
    ref = reference(tag)
    _check_out(out)
    if not PLATFORM.match(platform_):
        raise BadInput(f"--platform {platform_!r}: expected OS/ARCH, e.g. --platform {host_platform()}")
    os_name, architecture = platform_.split("/")
    if not workdir.startswith("/"):
        raise BadInput(f"--workdir {workdir!r}: give an absolute path in the image, e.g. --workdir /")
    if not files and not dirs:
        raise BadInput(f"nothing to put in the image: give --file SRC:DEST (e.g. --file {EXAMPLE_FILE}) or --dir")
    contents = Contents()
    for value in files:
        _add_file(contents, value)
    for value in dirs:
        _add_dir(contents, value)
    # A library given explicitly wins over the host's.
    libraries = {p: src for p, src in _shared_libraries(contents.files, architecture).items() if p not in contents.origins}
    # The base a container expects (/tmp, /var/tmp, /etc's users, groups and name service), where not given.
    base_dirs, texts = images.base(set(contents.origins) | set(contents.dirs))
    spec = images.ImageSpec(
        ref=ref,
        files={**contents.files, **libraries},
        symlinks=contents.symlinks,
        dirs=tuple(contents.dirs) + base_dirs,
        texts=texts,
        entrypoint=[_check_entrypoint(entrypoint, contents)] if entrypoint else [],
        cmd=list(cmd),
        env=_environment(env),
        workdir=workdir,
        os=os_name,
        architecture=architecture,
    )
    archive, digest = images.oci_archive(spec)
    _write(out, archive)
    console.print(f"wrote {out}: {ref} for {platform_}, {len(spec.files)} file(s), manifest {digest}")
    for path, src in sorted(libraries.items()):
        console.print(f"  {path} (from {src}, found with ldd)")
