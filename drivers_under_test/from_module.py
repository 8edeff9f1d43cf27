"""Public drivers built from their Go module at a pinned version (a profile's `module`), as
provision builds kind, helm and kwok: downloaded through the Go module proxy, binaries built by
the same wrapper-module recipe, images assembled by the lab's image code, all cached by key.
Nothing of theirs is copied into this repository or patched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from basics.errors import BadInput, LabBroken
from basics.progress import step
from clusters.provision import c_library_files, ensure_go, gobuild, images, static_tools, store_image

GO_MODULE_PATH = re.compile(r"^[a-z0-9][-a-z0-9.]*\.[a-z]+(/[\w.~-]+)+$")
GO_VERSION = re.compile(r"^v\d+\.\d+\.\d+(-[\w.-]+)?(\+incompatible)?$")
# A package path of another module: its first element is a host (github.com/NVIDIA/...).
GO_PACKAGE = re.compile(r"^[a-z0-9][-a-z0-9.]*\.[a-z]+(/[\w.~-]+)+$")
Tool = Literal["busybox", "bash"]
# A reference with a registry host and a tag, as a chart's image values name it.
IMAGE_REFERENCE = re.compile(r"^[a-z0-9][-a-z0-9.]*(:\d+)?/[a-z0-9._/-]+:[\w][\w.-]{0,127}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class GoModule(_Model):
    """A public driver's Go module at a pinned version, fetched through the Go module proxy as
    dralab fetches kind, helm and kwok: its binaries are built into the profile's `build` images
    and its chart taken from it (chart.inModule)."""

    path: str = Field(pattern=GO_MODULE_PATH.pattern, description="the module path, as in its go.mod: sigs.k8s.io/dra-example-driver")
    version: str = Field(
        pattern=GO_VERSION.pattern,
        description="a version the Go module proxy serves: a tag "
        "(v0.4.0) or a pseudo-version; never a branch, so that a verdict can be reproduced",
    )


class BuiltImage(_Model):
    """An image dralab assembles (no Docker, no base image) from binaries it builds from the
    profile's module; a cgo binary brings the C libraries ldd finds for it."""

    tag: str = Field(
        pattern=IMAGE_REFERENCE.pattern,
        description="the reference the chart's pods use, with its tag: registry.example/dra-example-driver:v0.4.0",
    )
    binaries: dict[Annotated[str, Field(pattern=r"^/")], Annotated[str, Field(pattern=r"^[\w.-]+(/[\w.-]+)*$")]] = Field(
        min_length=1,
        description="path in the image -> main package, relative to the module root: "
        "{/usr/bin/dra-example-kubeletplugin: cmd/dra-example-kubeletplugin}",
    )
    files: dict[Annotated[str, Field(pattern=r"^/")], str] = Field(
        default_factory=dict,
        description=("path in the image -> a file of the module (relative to its root), mode kept: a script the chart runs"),
    )
    dependency_binaries: dict[Annotated[str, Field(pattern=r"^/")], Annotated[str, Field(pattern=GO_PACKAGE.pattern)]] = Field(
        default_factory=dict,
        alias="dependencyBinaries",
        description=(
            "path in the image -> main package of a module the driver's go.mod requires, built at the version "
            "it requires: {/usr/bin/nvidia-cdi-hook: github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook}"
        ),
    )
    tools: list[Tool] = Field(
        default_factory=list,
        description=(
            "Debian's static builds of tools the chart's commands run: busybox (its applets in /bin, as a "
            "distroless debug image has), bash (/bin/bash)"
        ),
    )
    cgo: bool = Field(default=False, description="build with cgo (a driver that loads C libraries such as NVML)")


def module_dir(path: str, version: str) -> Path:
    """The module's source tree (read-only, in the Go module cache)."""
    try:
        return Path(gobuild.download(path, version)["Dir"])
    except LabBroken as e:
        raise BadInput(
            f"module {path}@{version}: the Go module proxy does not give it ({e}): pin a version it "
            "serves, a tag or a pseudo-version (`go list -m -versions` lists the tags)"
        ) from None


def recipe(name: str, module: GoModule, image: BuiltImage) -> gobuild.GoRecipe:
    return gobuild.GoRecipe(
        name=name,
        version=module.version,
        requires={module.path: module.version},
        binaries={
            **{Path(dest).name: f"{module.path}/{package}" for dest, package in image.binaries.items()},
            **{Path(dest).name: package for dest, package in image.dependency_binaries.items()},
        },
        cgo=image.cgo,
    )


def image_archive(name: str, module: GoModule, image: BuiltImage) -> Path:
    """The archive of driver `name`'s image, built first when the cache does not have it."""
    with step(f"Image {image.tag} of {name}: {module.path}@{module.version}"):
        built = ensure_go(recipe(name, module, image), offline=False)
        source = module_dir(module.path, module.version)
        binaries = {dest: built / Path(dest).name for dest in {**image.binaries, **image.dependency_binaries}}
        files = {dest: source / relative for dest, relative in image.files.items()}
        missing = [f"{dest}: {src}" for dest, src in files.items() if not src.is_file()]
        if missing:
            raise BadInput(
                f"driver profile {name}: files of image {image.tag} are not in module "
                f"{module.path}@{module.version}: {', '.join(missing)}; give paths relative to the "
                "module's root"
            )
        libraries = c_library_files(binaries.values()) if image.cgo else {}
        tools, links = static_tools(image.tools)
        contents = {**libraries, **tools, **binaries, **files}
        dirs, texts = images.base(set(contents))
        spec = images.ImageSpec(ref=image.tag, files=contents, dirs=dirs, texts=texts, symlinks=links)
        return store_image(spec).archive
