"""dralab's pytest plugin: cluster options, the session `lab`, extra labs, the drivers under test,
and each test's verdict with its evidence (docs/verdicts.md; LAB-07).

Each module holds one concern and is a plugin of its own, registered with this one (and so
turned off with it), once per run."""

pytest_plugins = [
    "dralab.pytest_plugin.options",
    "dralab.pytest_plugin.fixture_values",
    "dralab.pytest_plugin.labs",
    "dralab.pytest_plugin.selection",
    "dralab.pytest_plugin.lab_health",
    "dralab.pytest_plugin.fixtures",
    "dralab.pytest_plugin.judging",
]
