"""What MD-18 compares across a restart and how it reads the runtime's refusal to start a
container whose CDI devices have no spec (kubernetes#141433)."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from suites.framework.metadata_file import parse_stream

# What each case restarts, as the messages name it.
RESTARTS = {"kubelet": "kubelet restart", "containerd": "containerd restart", "node": "node reboot"}
# containerd's words when a container is given a CDI device no spec defines.
UNRESOLVABLE = "unresolvable CDI devices"


def without_generation(text: str | None) -> dict[str, Any] | None:
    """A metadata file's content apart from the generation, which a re-prepare resets to 1."""
    if text is None:
        return None
    obj = parse_stream(text).first_known()
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "generation"}}


def comparable(what: str, text: str | None) -> object:
    """An observation as compared across a restart: the CDI spec as JSON, metadata files apart
    from their generation."""
    if what == "CDI spec":
        return json.loads(text) if text is not None else None
    return without_generation(text)


def unresolved_cdi(status: client.V1ContainerStatus | None, events: list[client.CoreV1Event]) -> str | None:
    """What the runtime said when it found no CDI spec for a device the container was given,
    from the container's waiting state or else the pod's newest warning that says so."""
    said = [status.state.waiting.message] if status and status.state and status.state.waiting else []
    said += [e.message for e in reversed(events) if e.type == "Warning"]
    return next((m for m in said if m and UNRESOLVABLE in m), None)
