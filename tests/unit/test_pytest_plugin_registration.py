"""The plugin as pytest finds it: through dralab's `pytest11` entry point, the package and each of its
modules registered once, in any pytest run of the environment; `-p no:dralab` turns all of it off."""

from __future__ import annotations

import importlib.metadata

import pytest

import dralab.pytest_plugin as plugin


def _registered(config: pytest.Config) -> list[str]:
    """The names the plugin's modules are registered under."""
    return sorted(
        name for name, module in config.pluginmanager.list_name_plugin() if getattr(module, "__name__", "").startswith(plugin.__name__)
    )


def test_the_entry_point_names_the_package() -> None:
    (entry,) = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "dralab"]
    assert entry.value == plugin.__name__


def test_each_module_registers_once_by_the_entry_point_and_by_its_name(pytester: pytest.Pytester) -> None:
    every = sorted(["dralab", *plugin.pytest_plugins])
    assert _registered(pytester.parseconfigure()) == every
    # Named on the command line as certify names it, it is the same one registration.
    assert _registered(pytester.parseconfigure("-p", "dralab")) == every


def test_no_dralab_turns_the_whole_plugin_off(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure("-p", "no:dralab")
    assert _registered(config) == []
    assert config.pluginmanager.hasplugin("dralab") is False
