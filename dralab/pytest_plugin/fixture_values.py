"""What a test's fixtures have given it so far, and which fixture raised the error its setup failed
with, learnt through pytest's fixture hooks. Before and during a test's setup its arguments are not
filled yet, while the fixtures it shares with earlier tests (the session's lab, the module's driver)
are up already: the lab's watch and the verdict's evidence need those too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generator

import pytest


@dataclass(frozen=True)
class _Up:
    """A fixture's value from its setup to its teardown, and where pytest would hand it out: the
    tests under `node` (its scope's) that see its definition at `baseid`."""

    name: str
    node: pytest.Item | pytest.Collector
    baseid: str
    value: Any


_up = pytest.StashKey[dict[pytest.FixtureDef[Any], _Up]]()
# The fixtures whose setup raised, until their teardown: the error, the fixture's name and scope.
_failed = pytest.StashKey[dict[pytest.FixtureDef[Any], tuple[BaseException, str, str]]]()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
    try:
        value = yield
    except BaseException as error:
        failed = request.config.stash.setdefault(_failed, {})
        # A fixture that needs a failed one raises its error too: the first to raise it failed.
        if not any(error is e for e, _, _ in failed.values()):
            failed[fixturedef] = (error, fixturedef.argname, fixturedef.scope)
        raise
    request.config.stash.setdefault(_up, {})[fixturedef] = _Up(fixturedef.argname, request.node, fixturedef.baseid, value)
    return value


def pytest_fixture_post_finalizer(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    request.config.stash.get(_up, {}).pop(fixturedef, None)
    request.config.stash.get(_failed, {}).pop(fixturedef, None)


def of(item: pytest.Item) -> dict[str, Any]:
    """The fixtures a test has set up so far, by name: those of its fixtures up now (set up for it,
    or for a test before it that shares them), and its arguments, which outlive their teardown."""
    chain = item.listchain()
    names = set(getattr(item, "fixturenames", ()))
    values = {}
    # Of two definitions of a name, the one closer to the test overrides (pytest's rule); one not
    # set up yet is unknown here (only pytest's internals say which a test gets): until it is, the
    # one up stands in for it.
    for up in sorted(item.config.stash.get(_up, {}).values(), key=lambda up: len(up.baseid)):
        if up.name in names and any(up.node is n for n in chain) and any(up.baseid == n.nodeid for n in chain):
            values[up.name] = up.value
    return values | (getattr(item, "funcargs", None) or {})  # funcargs: None once the test is done


def raised(item: pytest.Item, error: BaseException) -> tuple[str, str] | None:
    """The fixture (name, scope) whose setup raised `error`, None if none did: pytest raises a
    failed fixture's error again in each test that needs it, until the fixture's scope ends."""
    return next(((name, scope) for e, name, scope in item.config.stash.get(_failed, {}).values() if e is error), None)
