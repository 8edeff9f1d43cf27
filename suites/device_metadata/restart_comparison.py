"""What MD-18 compares across a restart: the metadata CDI spec and files, generation aside."""

from __future__ import annotations

import json
from typing import Any

from suites.framework.metadata_file import parse_stream


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
