"""`dralab image build`: an image archive from binaries and files, no Docker. The archive passes
the profile validation's archive checks, its layer holds the files with their modes, and a cgo
(dynamically linked) binary brings its libc and loader; a static one brings nothing."""

from __future__ import annotations

import io
import json
import re
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dralab.cli import main
from dralab.image_cli import reference
from drivers_under_test.validate import archive_problems

REF = "registry.acme.example/gpu-driver:1.0"
HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'
E_MACHINE = 18  # offset of the architecture in an ELF header

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build a C program")


def compiled(tmp_path: Path, *flags: str) -> Path:
    source, binary = tmp_path / "hello.c", tmp_path / ("hello" + "".join(flags).replace("-", "_"))
    source.write_text(HELLO)
    subprocess.run(["gcc", *flags, "-o", str(binary), str(source)], check=True)
    return binary


def build(*args: str) -> Result:
    return CliRunner().invoke(main, ["image", "build", *args])


def read_image(archive: Path) -> tuple[dict, dict, dict[str, tuple[tarfile.TarInfo, bytes | None]]]:
    """The index, the config and the one layer of an image archive, each layer member with its
    content (None for all but files)."""
    with tarfile.open(archive) as tar:
        blobs = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    index = json.loads(blobs["index.json"])

    def blob(digest: str) -> bytes:
        return blobs[f"blobs/sha256/{digest[7:]}"]

    manifest = json.loads(blob(index["manifests"][0]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]["digest"]))) as tar:
        layer = {m.name: (m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}
    return index, json.loads(blob(manifest["config"]["digest"])), layer


def interpreter(binary: Path) -> str:
    out = subprocess.run(["readelf", "-l", str(binary)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"Requesting program interpreter: (/\S+)\]", out)
    assert found, out
    return found[1]


@needs_gcc
def test_a_cgo_binary_brings_its_libc_and_loader_and_files_keep_their_modes(tmp_path: Path) -> None:
    binary = compiled(tmp_path)
    conf = tmp_path / "driver.conf"
    conf.write_text("level: 2\n")
    conf.chmod(0o640)
    out = tmp_path / "gpu-driver.tar"
    done = build(
        "--tag",
        REF,
        "--out",
        str(out),
        "--file",
        f"{binary}:/usr/bin/gpu-kubeletplugin",
        "--file",
        f"{conf}:/etc/acme/",
        "--entrypoint",
        "/usr/bin/gpu-kubeletplugin",
        "--cmd",
        "-v=2",
        "--env",
        "LOG=1",
        "--workdir",
        "/var/lib/acme",
        "--platform",
        "linux/amd64",
    )
    assert done.exit_code == 0, done.output
    assert archive_problems(out) == []
    index, image, members = read_image(out)
    plugin, content = members["usr/bin/gpu-kubeletplugin"]
    assert content == binary.read_bytes() and stat.S_IMODE(plugin.mode) == 0o755
    assert members["etc/acme/driver.conf"][1] == b"level: 2\n" and stat.S_IMODE(members["etc/acme/driver.conf"][0].mode) == 0o640
    # The loader at the path the binary asks for (a symlink on the host: its target's content there).
    loader, loader_content = members[interpreter(binary).lstrip("/")]
    assert loader_content == Path(interpreter(binary)).resolve().read_bytes() and loader.mode & 0o111
    libc = [name for name in members if name.endswith("/libc.so.6")]
    assert len(libc) == 1 and members[libc[0]][1] == Path("/" + libc[0]).resolve().read_bytes()
    annotations = index["manifests"][0]["annotations"]
    assert annotations["io.containerd.image.name"] == REF and annotations["org.opencontainers.image.ref.name"] == "1.0"
    assert (image["os"], image["architecture"]) == ("linux", "amd64")
    assert image["config"]["Entrypoint"] == ["/usr/bin/gpu-kubeletplugin"] and image["config"]["Cmd"] == ["-v=2"]
    assert image["config"]["Env"][-1] == "LOG=1" and image["config"]["WorkingDir"] == "/var/lib/acme"


@needs_gcc
def test_a_static_binary_brings_nothing(tmp_path: Path) -> None:
    try:
        binary = compiled(tmp_path, "-static")
    except subprocess.CalledProcessError:
        pytest.skip("no static libc to link against")
    out = tmp_path / "static.tar"
    done = build("--tag", REF, "--out", str(out), "--file", f"{binary}:/usr/bin/plugin")
    assert done.exit_code == 0, done.output
    assert sorted(read_image(out)[2]) == sorted(["usr", "usr/bin", "usr/bin/plugin", *BASE])
    assert archive_problems(out) == []


# What every image gets beside what its maker gives: the base a container expects.
BASE = ["dev", "etc", "etc/group", "etc/nsswitch.conf", "etc/passwd", "proc", "root", "sys", "tmp", "var", "var/run", "var/tmp"]


def test_an_image_has_the_base_a_container_expects(tmp_path: Path) -> None:
    (tmp_path / "plugin").write_text("#!/bin/sh\n")
    (tmp_path / "plugin").chmod(0o755)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("acme:x:1000:1000::/home/acme:/bin/sh\n")
    out = tmp_path / "image.tar"
    done = build("--tag", REF, "--out", str(out), "--file", f"{tmp_path / 'plugin'}:/usr/bin/plugin", "--dir", f"{tmp_path / 'etc'}:/etc")
    assert done.exit_code == 0, done.output
    layer = read_image(out)[2]
    assert {d: oct(layer[d][0].mode) for d in ("tmp", "var/tmp")} == {"tmp": "0o1777", "var/tmp": "0o1777"}
    assert layer["etc/passwd"][1] == b"acme:x:1000:1000::/home/acme:/bin/sh\n", "the maker's /etc wins over the base"
    assert layer["etc/nsswitch.conf"][1] == b"hosts: files dns\n" and layer["etc/group"][1].startswith(b"root:x:0:")


def test_a_directory_is_added_recursively_with_modes_and_symlinks(tmp_path: Path) -> None:
    tree = tmp_path / "share"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "health.sh").write_text("#!/bin/sh\nexit 0\n")
    (tree / "scripts" / "health.sh").chmod(0o755)
    (tree / "README").write_text("acme\n")
    (tree / "README").chmod(0o600)
    (tree / "empty").mkdir()
    (tree / "health").symlink_to("scripts/health.sh")
    out = tmp_path / "tree.tar"
    done = build("--tag", REF, "--out", str(out), "--dir", f"{tree}:/opt/acme", "--entrypoint", "/opt/acme/health")
    assert done.exit_code == 0, done.output
    members = read_image(out)[2]
    assert stat.S_IMODE(members["opt/acme/scripts/health.sh"][0].mode) == 0o755
    assert stat.S_IMODE(members["opt/acme/README"][0].mode) == 0o600 and members["opt/acme/README"][1] == b"acme\n"
    assert members["opt/acme/empty"][0].isdir() and members["opt/acme/health"][0].linkname == "scripts/health.sh"


@pytest.mark.parametrize(
    "tag, ref",
    [
        (REF, REF),
        ("localhost:5000/acme/gpu:v1", "localhost:5000/acme/gpu:v1"),
        ("gpu-driver:1.0", "docker.io/library/gpu-driver:1.0"),  # as the kubelet expands a pod's image
        ("acme/gpu-driver:1.0", "docker.io/acme/gpu-driver:1.0"),
    ],
)
def test_the_reference_is_the_kubelets(tag: str, ref: str) -> None:
    assert reference(tag) == ref


def bad_inputs(tmp_path: Path) -> list[tuple[list[str], list[str]]]:
    """Arguments after --out, and what the message must say: the input and the fix."""
    binary = tmp_path / "plugin"
    binary.write_bytes(b"#!/bin/sh\n")
    binary.chmod(0o755)
    data = tmp_path / "data"
    data.write_text("x")
    ok = ["--file", f"{binary}:/usr/bin/plugin"]
    return [
        (["--tag", "Registry.Acme/GPU:1.0", *ok], ["--tag 'Registry.Acme/GPU:1.0'", "[REGISTRY/]NAME:TAG"]),
        (["--tag", "registry.acme.example/gpu-driver", *ok], ["--tag", "with a tag", "e.g. --tag"]),
        (["--tag", REF, "--file", str(binary)], [f"--file '{binary}'", "expected SRC:DEST"]),
        (["--tag", REF, "--file", f"{binary}:usr/bin/plugin"], ["expected SRC:DEST", "absolute path in the image"]),
        (["--tag", REF, "--file", "./bin/missing:/usr/bin/plugin"], ["--file ./bin/missing:/usr/bin/plugin", "give the path of a file"]),
        (["--tag", REF, "--file", f"{tmp_path}:/opt"], [f"{tmp_path} is a directory", "--dir"]),
        (["--tag", REF, *ok, "--file", f"{data}:/usr/bin/plugin"], ["/usr/bin/plugin is already in the image"]),
        (["--tag", REF, *ok, "--entrypoint", "/usr/bin/other"], ["--entrypoint /usr/bin/other", "--file SRC:"]),
        (["--tag", REF, "--file", f"{data}:/data", "--entrypoint", "/data"], ["not executable", "chmod +x"]),
        (["--tag", REF, *ok, "--platform", "amd64"], ["--platform 'amd64'", "OS/ARCH"]),
        (["--tag", REF, *ok, "--env", "LOG"], ["--env 'LOG'", "NAME=VALUE"]),
    ]


def test_bad_input_exits_2_naming_it_and_the_fix_and_leaves_the_old_archive(tmp_path: Path) -> None:
    out = tmp_path / "out" / "gpu-driver.tar"
    out.parent.mkdir()
    out.write_bytes(b"the previous build")
    for args, said in bad_inputs(tmp_path):
        done = build("--out", str(out), *args)
        assert done.exit_code == 2, (args, done.output)
        assert all(s in done.output for s in said), (said, done.output)
        assert out.read_bytes() == b"the previous build" and sorted(out.parent.iterdir()) == [out]


def test_out_must_be_a_file_in_an_existing_directory(tmp_path: Path) -> None:
    binary = tmp_path / "plugin"
    binary.write_bytes(b"x")
    done = build("--tag", REF, "--out", str(tmp_path / "no" / "such.tar"), "--file", f"{binary}:/plugin")
    assert done.exit_code == 2 and "--out" in done.output and "existing directory" in done.output


def as_machine(binary: Path, machine: int, tmp_path: Path) -> Path:
    """A copy of `binary` whose ELF header says it is for another machine."""
    patched = tmp_path / f"{binary.name}-{machine}"
    data = bytearray(binary.read_bytes())
    data[E_MACHINE : E_MACHINE + 2] = machine.to_bytes(2, "little")
    patched.write_bytes(bytes(data))
    patched.chmod(0o755)
    return patched


@needs_gcc
def test_a_binary_for_another_architecture_is_refused(tmp_path: Path) -> None:
    arm64 = as_machine(compiled(tmp_path), 183, tmp_path)
    done = build("--tag", REF, "--out", str(tmp_path / "o.tar"), "--file", f"{arm64}:/plugin")
    assert done.exit_code == 2 and "built for arm64" in done.output and "--platform linux/arm64" in done.output
    assert not (tmp_path / "o.tar").exists()


@needs_gcc
def test_a_dynamic_binary_ldd_cannot_read_is_refused(tmp_path: Path) -> None:
    unknown = as_machine(compiled(tmp_path), 0x7777, tmp_path)  # a machine ldd knows nothing of
    done = build("--tag", REF, "--out", str(tmp_path / "o.tar"), "--file", f"{unknown}:/plugin")
    assert done.exit_code == 2 and "ldd cannot list the shared libraries" in done.output, done.output
    assert "CGO_ENABLED=0" in done.output and not (tmp_path / "o.tar").exists()


def test_a_cached_archive_keeps_its_mtime_while_in_use_and_is_touched_once_stale(tmp_path: Path, monkeypatch) -> None:
    """The nodes' import record keys an archive by its mtime: storing the same image again (every
    lab start does) must not change it, or each live lab imports the image again; an hour on it
    is touched, so that _prune sees it in use."""
    import os
    import time

    from clusters.provision import IN_USE_REFRESH_SECONDS, store_image
    from clusters.provision.images import ImageSpec

    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "f").write_text("x")
    spec = ImageSpec(ref="dralab.dev/t:1", files={"/f": tmp_path / "f"})
    archive = store_image(spec).archive
    recent = time.time() - 60
    os.utime(archive, (recent, recent))
    assert store_image(spec).archive == archive and archive.stat().st_mtime == recent
    stale = time.time() - IN_USE_REFRESH_SECONDS - 60
    os.utime(archive, (stale, stale))
    store_image(spec)
    assert archive.stat().st_mtime > recent


def test_the_prune_spares_a_stale_build_a_live_process_runs_or_a_build_holds_and_removes_the_rest(tmp_path: Path, monkeypatch) -> None:
    import os
    import shutil
    import subprocess
    import time

    from basics.file_locks import waited_for
    from clusters import provision

    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path))
    builds = {name: tmp_path / "components" / f"thing-v1-{name}" for name in ("new", "running", "building", "unused")}
    for path in builds.values():
        path.mkdir(parents=True)
        shutil.copy(shutil.which("sleep"), path / "prog")
        os.utime(path, (time.time() - provision.STALE_SECONDS - 60,) * 2)
    lab = subprocess.Popen([str(builds["running"] / "prog"), "30"])  # a lab's component started a day ago
    try:
        with waited_for(tmp_path / "locks" / f"{builds['building'].name}.lock", "building thing"):
            provision._prune(builds.values(), keep=builds["new"])
    finally:
        lab.kill()
        lab.wait()
    assert sorted(p.name for p in (tmp_path / "components").iterdir()) == ["thing-v1-building", "thing-v1-new", "thing-v1-running"]
