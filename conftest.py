"""dralab's pytest plugin (options, fixtures, markers, verdicts) is the package dralab/pytest_plugin,
which pytest loads through its `pytest11` entry point (pyproject.toml) wherever dralab is installed:
in a checkout, `make packages` installs it again once pyproject.toml changes."""
