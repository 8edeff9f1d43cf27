"""Container images built from files by our own code, written as OCI image layout tarballs.

No registry is reachable, so the pause image (tagged exactly as containerd's pinned sandbox
image) and the workload image are assembled here and imported with `ctr images import`; so is a
vendor's image (`dralab image build`). Everything is deterministic (fixed mtimes and owners,
sorted entries), so the digests are stable.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
DEFAULT_PATH = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
# Where the runtime mounts (proc, sys, dev, run) and where programs expect to write (tmp, var/tmp,
# root's home): a container image's base has them (a driver made by `dralab image build` crash-looped
# without /tmp: dranet's "stat /tmp: no such file or directory").
BASE_DIRS = ("/tmp", "/var/tmp", "/etc", "/proc", "/sys", "/dev", "/var/run", "/root")
STICKY_DIRS = {"tmp", "var/tmp"}  # mode 1777, as in every distribution's base image
# The /etc files a base image has: the users and groups a program looks up, how names resolve.
BASE_TEXTS = {
    "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "/etc/nsswitch.conf": "hosts: files dns\n",
}


@dataclass
class ImageSpec:
    """An image of one layer: files (each with its host file's mode), symlinks and directories."""

    ref: str
    files: dict[str, Path] = field(default_factory=dict)  # path in image -> host file
    texts: dict[str, str] = field(default_factory=dict)  # path in image -> its content (mode 0644)
    symlinks: dict[str, str] = field(default_factory=dict)  # path in image -> target
    dirs: tuple[str, ...] = ()
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=lambda: [DEFAULT_PATH])
    workdir: str = "/"
    os: str = "linux"
    architecture: str = "amd64"

    @property
    def platform(self) -> dict[str, str]:
        return {"architecture": self.architecture, "os": self.os}


def base(given: set[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The dirs and texts of a base image (ImageSpec's), leaving out the paths an image's maker
    gave (`given`): theirs win."""
    return tuple(d for d in BASE_DIRS if d not in given), {p: t for p, t in BASE_TEXTS.items() if p not in given}


def _add(tar: tarfile.TarFile, info: tarfile.TarInfo, content: IO[bytes] | None = None) -> None:
    info.mtime = 0
    info.uid = info.gid = 0
    tar.addfile(info, content)


def layer_tar(spec: ImageSpec) -> bytes:
    buf = io.BytesIO()
    paths = set(spec.files) | set(spec.texts) | set(spec.symlinks) | set(spec.dirs)
    parents = {str(p) for path in paths for p in Path(path.lstrip("/")).parents if str(p) != "."}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in sorted(parents | {d.lstrip("/") for d in spec.dirs}):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d in STICKY_DIRS else 0o755
            _add(tar, info)
        for path, src in sorted(spec.files.items()):
            info = tarfile.TarInfo(path.lstrip("/"))
            st = src.stat()
            info.size, info.mode = st.st_size, stat.S_IMODE(st.st_mode)  # an executable stays one
            with src.open("rb") as content:
                _add(tar, info, content)
        for path, text in sorted(spec.texts.items()):
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o644
            _add(tar, info, io.BytesIO(data))
        for path, target in sorted(spec.symlinks.items()):
            info = tarfile.TarInfo(path.lstrip("/"))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            _add(tar, info)
    return buf.getvalue()


def _blob(blobs: dict[str, bytes], data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def oci_archive(spec: ImageSpec) -> tuple[bytes, str]:
    """The OCI layout tarball of `spec` and its manifest digest."""
    blobs: dict[str, bytes] = {}
    layer = layer_tar(spec)
    layer_desc = _blob(blobs, layer, OCI_LAYER)
    config = {
        **spec.platform,
        "config": {"Entrypoint": spec.entrypoint or None, "Cmd": spec.cmd or None, "Env": spec.env, "WorkingDir": spec.workdir},
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }
    config_desc = _blob(blobs, json.dumps(config, sort_keys=True).encode(), OCI_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_desc, "layers": [layer_desc]}
    manifest_desc = _blob(blobs, json.dumps(manifest, sort_keys=True).encode(), OCI_MANIFEST)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                **manifest_desc,
                "platform": spec.platform,
                "annotations": {"io.containerd.image.name": spec.ref, "org.opencontainers.image.ref.name": spec.ref.rsplit(":", 1)[-1]},
            }
        ],
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        entries = {
            "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
            "index.json": json.dumps(index, sort_keys=True).encode(),
        }
        entries.update({f"blobs/sha256/{d.split(':')[1]}": b for d, b in blobs.items()})
        for d in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            _add(tar, info)
        for name, data in sorted(entries.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            _add(tar, info, io.BytesIO(data))
    return out.getvalue(), manifest_desc["digest"]
