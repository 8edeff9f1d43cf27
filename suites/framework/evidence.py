"""What a check saw, kept for the report: attached as evidence when the check fails, and what it
`observe`s (the allocation the scheduler made, say) whatever the verdict, and the SHOULDs it
found unmet (`warn`: a WARNING, never a FAIL)."""

from __future__ import annotations

import json


class Evidence:
    """What a check saw (file contents, listings, CDI specs, events): attached to its report if it
    fails. What it `observe`s (e.g. the allocation the scheduler made) is also kept when it passes."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.observed: list[tuple[str, str]] = []
        self.warnings: list[str] = []

    def add(self, label: str, content: object) -> None:
        text = content if isinstance(content, str) else json.dumps(content, indent=2, default=str)
        self.items.append((label, text))

    def observe(self, label: str, content: object) -> None:
        self.add(label, content)
        self.observed.append(self.items[-1])

    def warn(self, message: str) -> None:
        """A SHOULD of the requirement is not met: the check goes on and its verdict is WARNING."""
        self.warnings.append(message)
