"""The hooks through which suites contribute to what the plugin does, so that the plugin imports no
suite (a suite implements them in its conftest.py)."""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_dralab_fail_attachments(item: pytest.Item, message: str) -> list[tuple[str, str]]:
    """(title, text) sections to attach to a FAIL of `item` whose message is `message`: what a suite
    knows that makes the failure reproducible (the generated case it names, say)."""
    return []
