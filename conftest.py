"""dralab's pytest plugin lives in clusters/pytest_plugin.py; this file loads it for every run."""

pytest_plugins = ["clusters.pytest_plugin"]
