"""Public drivers built from their Go module (a profile's `module`): what a profile must say,
where the chart and the image's files come from, and the refusal naming a version the proxy
does not serve."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from basics.errors import BadInput, LabBroken
from clusters.provision import gobuild
from drivers_under_test import from_module
from drivers_under_test.profile import load_profile

PROFILE = """
name: public
description: a public driver built from its module
drivers: [gpu.public.example]
capabilities: []
hardware: none
namespace: public
module: {path: example.com/public/driver, version: v1.2.3}
images:
- build:
    tag: registry.example/public:v1.2.3
    binaries: {/usr/bin/plugin: cmd/plugin}
    files: {/usr/bin/start.sh: hack/start.sh}
chart: {path: deployments/chart, inModule: true}
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The module's source tree as the module cache holds it, with a chart and a script."""
    root = tmp_path / "mod" / "example.com" / "public" / "driver@v1.2.3"
    (root / "deployments" / "chart").mkdir(parents=True)
    (root / "deployments" / "chart" / "Chart.yaml").write_text("name: public\nversion: 1.2.3\n")
    (root / "hack").mkdir()
    (root / "hack" / "start.sh").write_text("#!/bin/sh\n")
    (root / "hack" / "start.sh").chmod(0o755)
    monkeypatch.setattr(gobuild, "download", lambda path, version: {"Dir": str(root), "GoMod": ""})
    return root


def write(tmp_path: Path, text: str = PROFILE) -> Path:
    path = tmp_path / "public.yaml"
    path.write_text(text)
    return path


def test_the_chart_is_the_modules(tmp_path: Path, module: Path) -> None:
    profile = load_profile(str(write(tmp_path)))
    assert profile.chart_path() == module / "deployments" / "chart"


def test_a_chart_path_not_in_the_module_is_refused(tmp_path: Path, module: Path) -> None:
    profile = load_profile(str(write(tmp_path, PROFILE.replace("deployments/chart", "charts/none"))))
    with pytest.raises(BadInput, match="chart charts/none is not a chart in module example.com/public/driver@v1.2.3"):
        profile.chart_path()


def test_a_version_the_proxy_refuses_names_the_module_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(path: str, version: str) -> dict[str, str]:
        raise LabBroken(f"cannot download {path}@{version}: 403 Forbidden")

    monkeypatch.setattr(gobuild, "download", refused)
    profile = load_profile(str(write(tmp_path)))
    with pytest.raises(BadInput, match=r"module example.com/public/driver@v1.2.3: .*403.*pin a version it serves"):
        profile.chart_path()


@pytest.mark.parametrize(
    "change, message",
    [
        (("module: {path: example.com/public/driver, version: v1.2.3}\n", ""), "give module"),
        (("version: v1.2.3}", "version: main}"), "module.version"),
        (("tag: registry.example/public:v1.2.3", "tag: public"), "images.0.build.tag"),
        (("binaries: {/usr/bin/plugin: cmd/plugin}", "binaries: {}"), "images.0.build.binaries"),
    ],
)
def test_profile_mistakes_are_refused(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    with pytest.raises(BadInput, match=message):
        load_profile(str(write(tmp_path, PROFILE.replace(*change))))


def test_the_image_holds_the_built_binaries_and_the_modules_files(tmp_path: Path, module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = tmp_path / "built"
    built.mkdir()
    (built / "plugin").write_bytes(b"\x7fELF plugin")
    recipes: list[gobuild.GoRecipe] = []
    monkeypatch.setattr(from_module, "ensure_go", lambda recipe, offline: recipes.append(recipe) or built)
    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path / "cache"))
    profile = load_profile(str(write(tmp_path)))
    assert profile.images[0].build is not None
    archive = from_module.image_archive(profile.name, profile.module, profile.images[0].build)  # type: ignore[arg-type]  # profile.module is set: the profile file names one

    assert recipes[0].requires == {"example.com/public/driver": "v1.2.3"}
    assert recipes[0].binaries == {"plugin": "example.com/public/driver/cmd/plugin"}
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))  # type: ignore[arg-type]  # the archive has the member: extractfile answers a file
        assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == "registry.example/public:v1.2.3"
        manifest = json.load(outer.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'][7:]}"))  # type: ignore[arg-type]  # the archive has the member: extractfile answers a file
        layer = outer.extractfile(f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}").read()
    with tarfile.open(fileobj=io.BytesIO(layer)) as files:
        assert files.extractfile("usr/bin/plugin").read() == b"\x7fELF plugin"
        assert files.getmember("usr/bin/start.sh").mode == 0o755
