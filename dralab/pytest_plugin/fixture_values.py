"""What a test's fixtures have given it so far, and which fixture raised the error its setup failed with."""

from __future__ import annotations

from typing import Any

import pytest


def of(item: pytest.Item) -> dict[str, Any]:
    """The fixtures a test has set up so far, by name: its arguments, and those set up for them.
    A failing setup has filled no argument yet (funcargs), but the fixtures below the failing one,
    the driver under test among them, are cached in their definitions (pytest's own)."""
    values = dict(getattr(item, "funcargs", None) or {})  # None once torn down
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in info.name2fixturedefs.items() if info is not None else ():
        cached = defs[-1].cached_result
        if cached is not None and cached[2] is None:
            values.setdefault(name, cached[0])
    return values


def raised(item: pytest.Item, error: BaseException) -> tuple[str, str] | None:
    """The fixture of `item` (name, scope) whose setup raised `error`, None if none did."""
    defs = getattr(item, "_fixtureinfo").name2fixturedefs
    return next(
        (
            (name, d[-1].scope)
            for name, d in defs.items()
            if (cached := d[-1].cached_result) is not None and cached[2] is not None and cached[2][0] is error
        ),
        None,
    )
