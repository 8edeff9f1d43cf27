"""dralab's reference device plugin packaged as a vendor packages a driver: an image archive of
its own, its chart, and a profile written as docs/certify-your-driver.md says (under its own
resource name, so it never meets the reference profile)."""

from __future__ import annotations

import shutil
from pathlib import Path

from clusters.provision import provision
from drivers_under_test.profile import PROFILES_DIR

RESOURCE = "acme.example/gpu"
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
    image = provision(offline=True).drivers_image
    shutil.copy(image.archive, work / "acme-gpu-plugin.tar")
    shutil.copytree(PROFILES_DIR.parent / "charts" / "fake-gpu-plugin", work / "chart")
    (work / "profile.yaml").write_text(PROFILE.replace("RESOURCE", RESOURCE).replace("IMAGE", image.ref))
    return work
