"""dralab's pytest plugin (options, fixtures, markers, verdicts) is dralab/pytest_plugin.py; this loads it for every run."""

pytest_plugins = ["dralab.pytest_plugin"]
