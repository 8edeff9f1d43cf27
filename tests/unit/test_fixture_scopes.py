"""No fixture of the suites or of the plugin asks for a fixture of a narrower scope: pytest finds
that only when the fixture is set up, on a lab, as a ScopeMismatch ERROR (a module-scoped
generated run once took the per-test `host_access`, and CI's lab run ERRORed on it)."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RANK = {"function": 0, "class": 1, "module": 2, "package": 3, "session": 4}
# pytest's own fixtures these modules take, with their scopes; `request` fits every scope.
BUILTIN = {"tmp_path": "function", "monkeypatch": "function", "capsys": "function", "caplog": "function", "tmp_path_factory": "session"}


@dataclass(frozen=True)
class Fixture:
    path: Path
    name: str
    scope: str
    params: tuple[str, ...]


def _scope(decorator: ast.expr) -> str | None:
    """The scope a `@pytest.fixture` decorator gives, None for any other decorator."""
    call = decorator if isinstance(decorator, ast.Call) else None
    target = call.func if call else decorator
    if not (isinstance(target, ast.Attribute) and target.attr == "fixture"):
        return None
    for keyword in call.keywords if call else []:
        if keyword.arg == "scope" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    return "function"


def _fixtures(path: Path) -> list[Fixture]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                scope = _scope(decorator)
                if scope:
                    params = tuple(a.arg for a in node.args.args if a.arg not in ("self", "request"))
                    out.append(Fixture(path, node.name, scope, params))
    return out


@functools.cache
def _all() -> list[Fixture]:
    paths = [*(REPO / "dralab" / "pytest_plugin").glob("*.py"), *(REPO / "suites").rglob("*.py")]
    return [f for p in sorted(paths) for f in _fixtures(p)]


def _resolve(fixture: Fixture, name: str, every: list[Fixture]) -> str | None:
    """The scope of the fixture `name` as pytest resolves it for `fixture`: its own module first (a
    fixture of the same name there is the one it overrides, so not itself), then the conftests from
    its folder up, then the plugin's."""
    own = fixture.path
    candidates = [own] + [d / "conftest.py" for d in own.parents if d == REPO / "suites" or REPO / "suites" in d.parents]
    for path in candidates:
        for other in every:
            if other.path == path and other.name == name and other != fixture:
                return other.scope
    plugin = [f for f in every if f.name == name and f.path.parent == REPO / "dralab" / "pytest_plugin"]
    return plugin[0].scope if plugin else BUILTIN.get(name)


def test_the_scan_finds_the_fixtures() -> None:
    names = {(f.name, f.scope) for f in _all()}
    assert ("lab", "session") in names and ("host_access", "function") in names


def test_the_scan_sees_a_mismatch() -> None:
    """The rule, proven on the fault CI met."""
    every = _all()
    broken = Fixture(REPO / "suites" / "device_plugin" / "test_device_plugin.py", "generated_run", "module", ("host_access",))
    assert _resolve(broken, "host_access", every) == "function"


@pytest.mark.parametrize("fixture", [f for f in _all() if RANK[f.scope] > 0], ids=lambda f: f"{f.path.relative_to(REPO)}::{f.name}")
def test_no_fixture_asks_for_a_narrower_one(fixture: Fixture) -> None:
    every = _all()
    narrower = {name: scope for name in fixture.params if (scope := _resolve(fixture, name, every)) and RANK[scope] < RANK[fixture.scope]}
    assert not narrower, f"the {fixture.scope}-scoped fixture {fixture.name} asks for {narrower}: pytest ERRORs it (ScopeMismatch)"
