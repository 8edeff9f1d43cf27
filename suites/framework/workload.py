"""The image the suites' pods run (workloads and node observers), set with `--workload-image`.

The lab's own image is imported into every node and exists in no registry: it is never pulled.
Another image (a cluster that is not ours) is pulled when the node lacks it. Whatever it is, it
needs a POSIX shell with cat, find, stat, sleep, ip and busybox-like coreutils, and
`incluster-whoami` for the checks that act with the pod's identity.
"""

from __future__ import annotations

from clusters import versions

_image = versions.WORKLOAD_IMAGE


def image() -> str:
    return _image


def pull_policy(of: str) -> str:
    """Only a workload image given on the command line is pulled; the lab imported the others."""
    return "IfNotPresent" if of == _image != versions.WORKLOAD_IMAGE else "Never"


def container_image(of: str | None = None) -> dict[str, str]:
    """A container's image and pull policy: the workload image unless `of` names another."""
    chosen = of or _image
    return {"image": chosen, "imagePullPolicy": pull_policy(chosen)}


def use(given: str | None) -> None:
    """The image --workload-image names, or the lab's."""
    global _image
    _image = given or versions.WORKLOAD_IMAGE
