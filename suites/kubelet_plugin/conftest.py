"""The KP suite's collection: the checks that ask for the generated workloads draw --budget shapes
for each of --seeds seeds before they run, so their time limit grows with the shapes drawn."""

from __future__ import annotations

import pytest

# A bound for one shape (its pods started and waited for, a driver restart, removal): what cuts a
# hung run short, not an expectation of speed (a shape takes about 6 s).
SECONDS_A_SHAPE = 60


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    limit = float(config.getini("timeout") or 0) + SECONDS_A_SHAPE * config.getoption("--budget") * config.getoption("--seeds")
    for item in items:
        if "generated_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(limit))
