"""A report's runs across invocations: a JSON list in a file beside it (the matrix's and the
mutation report's history.json), oldest first, each run appended as one entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RunHistory:
    """The runs recorded in `path` (none while it does not exist), and the next one appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs: list[dict[str, Any]] = json.loads(path.read_text()) if path.exists() else []

    def append(self, run: dict[str, Any]) -> None:
        """`run` after the others, and the file written again with it."""
        self.runs.append(run)
        self.path.write_text(json.dumps(self.runs, indent=2))
