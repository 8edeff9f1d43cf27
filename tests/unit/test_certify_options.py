"""`dralab certify` refuses bad input before any lab starts, with exit code 2 (RP-04)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dralab.cli import main
from basics.errors import BadInput
from reports.certify import selection


def test_only_maps_prefixes_to_suites_and_ids_to_their_tests() -> None:
    assert selection(None) == (["suites"], [])
    # DEP-01 comes with every selection: the driver must come up first.
    dep = "suites/deployment"
    assert selection("md, DA,md") == ([dep, "suites/device_metadata", "suites/derived_attributes"], [])
    assert selection("md-01,DA-04,DA") == ([dep, "suites/device_metadata", "suites/derived_attributes"], ["DA", "MD-01"])
    for bad in ("MD,XX", "QQ-01", "MD-x"):
        with pytest.raises(BadInput, match="unknown suite.*choose from DEP, KP, LAB, MD, ST, DA, DP"):
            selection(bad)


@pytest.mark.parametrize(
    "args,named",
    [
        (["--only", "QQ"], "QQ"),
        (["--driver", "no-such-driver"], "no-such-driver"),
        (["--hardware", "no-such-hardware"], "no-such-hardware"),
        (["--cluster", "kubeconfig"], "--kubeconfig"),
        (["--driver", "gpu", "--variant", "no-such-variant"], "wrong-path"),
        (["--variant", "wrong-path"], "--driver"),
    ],
)
def test_bad_input_exits_2_naming_it(tmp_path, args: list[str], named: str) -> None:
    result = CliRunner().invoke(main, ["certify", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written


def _profile(tmp_path, **changes: object) -> str:
    """A copy of the gpu profile beside its manifests, with fields replaced."""
    import yaml

    from drivers_under_test.profile import PROFILES_DIR

    data = yaml.safe_load((PROFILES_DIR / "gpu.yaml").read_text())
    data["manifests"] = [str(PROFILES_DIR / m) for m in data["manifests"]]
    for variant in data["variants"].values():
        variant["manifests"] = [str(PROFILES_DIR / m) for m in variant.get("manifests", [])]
    path = tmp_path / "vendor.yaml"
    path.write_text(yaml.safe_dump({**data, **changes}))
    return str(path)


def test_undefined_template_parameter_exits_2_before_anything_starts(tmp_path) -> None:
    """DEP-02: named with its manifest, and every problem at once (here also a bad variant name)."""
    manifest = tmp_path / "extra.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ${NAMESPACE}}\ndata: {image: ${IMAGE}}\n")
    profile = _profile(tmp_path, manifests=[str(manifest)], variants={"Leave_Files": {"args": ["--break=leave-files"]}})
    result = CliRunner().invoke(main, ["certify", "--driver", profile, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "IMAGE" in result.output and "extra.yaml" in result.output and "Leave_Files" in result.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written


def test_a_profile_with_no_dra_driver_claiming_nothing_is_nothing_to_certify(tmp_path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "certify",
            "--driver",
            _profile(tmp_path, capabilities=[], drivers=[], extendedResources=["vendor.example/gpu"]),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 4, result.output
    assert result.output.strip().splitlines()[-1].startswith("NOTHING TO CERTIFY")


def test_a_dra_driver_claiming_no_capability_is_certified_on_the_kubelet_plugin_contract(tmp_path) -> None:
    from drivers_under_test.profile import load_profile
    from reports.certify import certifiable

    ids = certifiable(load_profile(_profile(tmp_path, capabilities=[])))
    assert ids and all(i.startswith("KP-") for i in ids), ids


def test_an_image_archive_without_platform_exits_2_before_anything_starts(tmp_path) -> None:
    """DEP-02: an image config without os/architecture, which containerd and the kubelet refuse."""
    import hashlib
    import io
    import json
    import tarfile

    def blob(tar: tarfile.TarFile, data: bytes) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        info = tarfile.TarInfo(f"blobs/sha256/{digest}")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        return {"digest": f"sha256:{digest}", "size": len(data)}

    archive = tmp_path / "driver.tar"
    with tarfile.open(archive, "w") as tar:
        config = blob(tar, json.dumps({"config": {}, "rootfs": {"type": "layers", "diff_ids": []}}).encode())
        manifest = blob(tar, json.dumps({"schemaVersion": 2, "config": config, "layers": []}).encode())
        index = json.dumps(
            {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", **manifest}]}
        ).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index))
    result = CliRunner().invoke(
        main, ["certify", "--driver", _profile(tmp_path, images=[{"archive": str(archive)}]), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert "driver.tar" in result.output and "architecture" in result.output
    assert not (tmp_path / "out").exists()


def test_a_suite_run_without_hardware_gets_what_its_drivers_expect() -> None:
    from pathlib import Path

    from drivers_under_test.profile import load_profile
    from reports import certify

    assert certify.SuiteRun(Path("/o"), [], [], drivers=[load_profile("dra-driver-cpu")]).hardware == "cpu-pair"
    assert certify.SuiteRun(Path("/o"), [], [], drivers=[load_profile("dra-example-driver")]).hardware == "none"
    assert certify.SuiteRun(Path("/o"), [], []).hardware is None  # the reference drivers' default lab
    assert certify.SuiteRun(Path("/o"), [], [], drivers=[load_profile("nvidia-gpu")], hardware="dgx-like").hardware == "dgx-like"
