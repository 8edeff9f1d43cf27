"""Kubernetes' own DRA e2e suite for `dralab qualify`: its test binary and ginkgo built from the
k8s.io/kubernetes module at the lab's version (components.e2e_dra_recipe), and the images its
specs run, made here from files under the exact names upstream's code asks for (no registry):
busybox, the hostpathplugin whose proxy mode the test driver's kubelet sockets go through (our
socket-proxy), upstream's sample device plugin, and the pause image when its name differs.
Built on demand, not by `dralab provision`: the build takes about 9 minutes on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from basics.errors import LabBroken
from clusters import versions
from clusters.provision import Image, Toolchain, busybox_image, ensure_go, pause_binary, store_image
from clusters.provision.components import e2e_dra_recipe
from clusters.provision.images import ImageSpec

TEST_BINARY = "e2e-dra.test"


@dataclass(frozen=True)
class E2ESuite:
    kubernetes_version: str
    dir: Path
    images: tuple[Image, ...]
    gate_defaults: dict[str, bool]  # each feature gate's default at this version, from the suite's own binary

    @property
    def test_binary(self) -> Path:
        return self.dir / TEST_BINARY

    @property
    def ginkgo(self) -> Path:
        return self.dir / "ginkgo"


def describe(test_binary: Path) -> dict:
    """The suite's own account (its --dralab-describe): `images`, role -> reference, as upstream's
    code resolves them, and `gate_defaults`, each feature gate's default at its version."""
    out = subprocess.run([str(test_binary), "--dralab-describe"], capture_output=True, text=True)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise LabBroken(f"{test_binary} --dralab-describe: exit {out.returncode}: {out.stderr.strip()[-2000:]}") from None


def image_specs(names: dict[str, str], suite_dir: Path, tools: Toolchain) -> list[ImageSpec]:
    specs = [
        busybox_image(names["busybox"]),
        busybox_image(names["hostpathplugin"], {"/hostpathplugin": tools.drivers_under_test / "socket-proxy"}),
        busybox_image(
            names["sample-device-plugin"],
            {"/sampledeviceplugin": suite_dir / "sampledeviceplugin"},
            entrypoint=["/sampledeviceplugin", "-alsologtostderr"],
        ),
    ]
    if names["pause"] != versions.PAUSE_IMAGE:
        specs.append(ImageSpec(ref=names["pause"], files={"/pause": pause_binary(offline=True)}, entrypoint=["/pause"]))
    return specs


def ensure_e2e_suite(tools: Toolchain, offline: bool = False) -> E2ESuite:
    """The suite at the toolchain's Kubernetes version, built once and cached, with its images."""
    suite_dir = ensure_go(e2e_dra_recipe(tools.kubernetes_version), offline)
    description = describe(suite_dir / TEST_BINARY)
    images = tuple(store_image(spec) for spec in image_specs(description["images"], suite_dir, tools))
    return E2ESuite(tools.kubernetes_version, suite_dir, images, description["gate_defaults"])
