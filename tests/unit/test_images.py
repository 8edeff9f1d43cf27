import hashlib
import io
import json
import tarfile

from clusters.provision.images import ImageSpec, oci_archive


def members(data: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else m.linkname or None) for m in tar.getmembers()}


def spec(tmp_path) -> ImageSpec:
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF fake")
    return ImageSpec(ref="registry.k8s.io/pause:3.10.2", files={"/pause": binary},
                     symlinks={"/bin/sh": "busybox"}, entrypoint=["/pause"])


def test_archive_is_an_oci_layout_named_for_containerd_import(tmp_path) -> None:
    archive, digest = oci_archive(spec(tmp_path))
    files = members(archive)
    index = json.loads(files["index.json"])
    manifest_desc = index["manifests"][0]
    assert manifest_desc["annotations"]["io.containerd.image.name"] == "registry.k8s.io/pause:3.10.2"
    assert manifest_desc["digest"] == digest
    manifest = json.loads(files[f"blobs/sha256/{digest[7:]}"])
    for desc in [manifest["config"], *manifest["layers"]]:
        blob = files[f"blobs/sha256/{desc['digest'][7:]}"]
        assert hashlib.sha256(blob).hexdigest() == desc["digest"][7:] and len(blob) == desc["size"]
    layer = members(files[f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"])
    assert layer["pause"] == b"\x7fELF fake" and layer["bin/sh"] == "busybox"
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["config"]["Entrypoint"] == ["/pause"] and config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]


def test_archive_is_deterministic(tmp_path) -> None:
    assert oci_archive(spec(tmp_path)) == oci_archive(spec(tmp_path))
