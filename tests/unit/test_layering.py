"""The rooms import downward only (fake_hardware < clusters < drivers_under_test < suites < reports
< dralab, the composition on top) and no module imports itself back through others, lazily or not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Each room and the rooms above it, which it must not import.
ROOMS = ["fake_hardware", "clusters", "drivers_under_test", "suites", "reports", "dralab"]
# fake_hardware still borrows clusters' errors, profile loading, config and network helpers.
ALLOWED_UPWARD = {("fake_hardware", "clusters")}


def _modules() -> dict[str, Path]:
    found = {}
    for room in ROOMS:
        for path in (REPO / room).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Project modules `path` imports anywhere in its body (function-level imports too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else []
        )
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


GRAPH = {m: _imports(p, _modules()) - {m} for m, p in _modules().items()}


@pytest.mark.parametrize("room", ROOMS[:-1])
def test_room_imports_nothing_above_it(room: str) -> None:
    above = ROOMS[ROOMS.index(room) + 1 :]
    wrong = sorted(
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        if m.split(".")[0] == room
        for d in deps
        if d.split(".")[0] in above and (room, d.split(".")[0]) not in ALLOWED_UPWARD
    )
    assert not wrong, "\n".join(wrong)


def test_no_import_circles() -> None:
    def package_free(deps: set[str]) -> set[str]:  # a package's __init__ is not a circle partner
        return {d for d in deps if not (REPO / d.replace(".", "/") / "__init__.py").exists()}

    circles = set()
    for start in GRAPH:
        stack, seen = [(start, (start,))], set()
        while stack:
            mod, path = stack.pop()
            for dep in package_free(GRAPH.get(mod, set())):
                if dep == start:
                    circles.add(" -> ".join(sorted(path)))
                elif dep not in seen:
                    seen.add(dep)
                    stack.append((dep, (*path, dep)))
    assert not circles, "\n".join(sorted(circles))


def test_the_pytest_plugin_imports_no_suite() -> None:
    """Suites contribute through the plugin's hooks (dralab/pytest_plugin/hookspecs.py) or their own
    conftest.py; every module of the plugin's package, and the verdict rules it applies, use only the
    catalogue and the suites' shared framework."""
    package = [m for m in GRAPH if m == "dralab.pytest_plugin" or m.startswith("dralab.pytest_plugin.")]
    assert len(package) > 1, f"the plugin's package has no modules: {package}"
    suites = sorted(
        f"{m} imports {d}"
        for m in [*package, "dralab.verdicts"]
        for d in GRAPH[m]
        if d.startswith("suites.") and not d.startswith(("suites.framework", "suites.catalogue"))
    )
    assert not suites, "\n".join(suites)
