"""The CDI specs a node's container runtime reads, and what a CDI device ID resolves to in them:
what a driver's prepare answer (KP-03), its cleanup (KP-06) and a device plugin's CDI devices
(DP-04) are checked against."""

from __future__ import annotations

import contextlib
from typing import Any

import yaml

from suites.framework.node_files import NodeFiles


def on_node(files: NodeFiles, node: str) -> dict[str, dict[str, Any]]:
    """The node's CDI specs by path, in the directories its container runtime reads. A file that
    does not parse is left out, as the runtime leaves it out (it may be another driver's)."""
    specs = {}
    for directory in files.cdi_dirs(node).dirs:
        for path in files.glob(node, f"{directory}/*"):
            text = files.read(node, path) if path.endswith((".json", ".yaml", ".yml")) else None
            with contextlib.suppress(yaml.YAMLError):
                spec = yaml.safe_load(text) if text else None
                if isinstance(spec, dict):
                    specs[path] = spec
    return specs


def defining(specs: dict[str, dict[str, Any]], qualified: str) -> str | None:
    """The path of the spec that defines CDI device `vendor/class=name`, None if none does."""
    kind, _, name = qualified.partition("=")
    return next(
        (
            path
            for path, spec in specs.items()
            if spec.get("kind") == kind and any(d.get("name") == name for d in spec.get("devices") or [])
        ),
        None,
    )


def edits(specs: list[dict[str, Any]], qualified: str) -> list[dict[str, Any]] | None:
    """The container edits of CDI device `vendor/class=name`: its spec's and its own; None if no spec has it."""
    kind, _, name = qualified.partition("=")
    for spec in specs:
        if spec.get("kind") != kind:
            continue
        for device in spec.get("devices") or []:
            if device.get("name") == name:
                return [spec.get("containerEdits") or {}, device.get("containerEdits") or {}]
    return None
