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
    return ImageSpec(ref="registry.k8s.io/pause:3.10.2", files={"/pause": binary}, symlinks={"/bin/sh": "busybox"}, entrypoint=["/pause"])


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


def test_files_keep_their_modes_and_the_spec_sets_platform_env_and_workdir(tmp_path) -> None:
    tool, conf = tmp_path / "tool", tmp_path / "conf"
    tool.write_bytes(b"\x7fELF fake")
    tool.chmod(0o750)
    conf.write_text("x")
    conf.chmod(0o644)
    archive, digest = oci_archive(
        ImageSpec(
            ref="registry.acme.example/gpu:1.0",
            files={"/bin/tool": tool, "/etc/conf": conf},
            env=["PATH=/bin", "LOG=1"],
            workdir="/work",
            architecture="arm64",
        )
    )
    files = members(archive)
    manifest = json.loads(files[f"blobs/sha256/{digest[7:]}"])
    with tarfile.open(fileobj=io.BytesIO(files[f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"])) as tar:
        assert {m.name: m.mode for m in tar.getmembers() if m.isfile()} == {"bin/tool": 0o750, "etc/conf": 0o644}
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert (config["os"], config["architecture"]) == ("linux", "arm64")
    assert config["config"]["Env"] == ["PATH=/bin", "LOG=1"] and config["config"]["WorkingDir"] == "/work"
    assert json.loads(files["index.json"])["manifests"][0]["platform"] == {"architecture": "arm64", "os": "linux"}
