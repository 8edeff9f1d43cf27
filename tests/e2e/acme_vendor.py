"""dralab's reference device plugin packaged as a vendor packages a driver: an image archive of
its own, built from the plugin's binary with `dralab image build` as docs/certify-your-driver.md
says (no Docker), its chart, and a profile written as the guide says (under its own resource
name and image reference, so it never meets the reference profile)."""

from __future__ import annotations

import shutil
from pathlib import Path

from clusters.provision import provision
from drivers_under_test.profile import PROFILES_DIR
from tests.e2e.test_lab_lifecycle import dralab

RESOURCE = "acme.example/gpu"
IMAGE = "registry.acme.example/gpu-plugin:1.0"
PLUGIN = "/usr/local/bin/fake-gpu-plugin"  # the chart's command
PROFILE = """# yaml-language-server: $schema=profile.schema.json
name: acme-gpu-plugin
description: dralab's reference device plugin, packaged as a vendor packages a driver
extendedResources: [RESOURCE]
capabilities: [device-plugin]
hardware: dgx-like
namespace: acme-gpu-plugin
images: [{archive: acme-gpu-plugin.tar}]
chart:
  path: chart
  values: {image: "IMAGE", resourceName: RESOURCE, hostSysfsRoot: "${HARDWARE_SYSFS_ROOT}"}
"""


def vendor_dir(work: Path) -> Path:
    """The vendor's directory: the image archive, the chart and the profile."""
    binary = provision(offline=True).drivers_under_test / "fake-gpu-plugin"
    built = dralab(
        "image", "build", "--tag", IMAGE, "--out", str(work / "acme-gpu-plugin.tar"), "--file", f"{binary}:{PLUGIN}", "--entrypoint", PLUGIN
    )
    assert built.returncode == 0, built.stdout + built.stderr
    shutil.copytree(PROFILES_DIR.parent / "charts" / "fake-gpu-plugin", work / "chart")
    (work / "profile.yaml").write_text(PROFILE.replace("RESOURCE", RESOURCE).replace("IMAGE", IMAGE))
    return work
