"""Composition: the `dralab` command and the pytest plugin, on top of the rooms they wire together."""
