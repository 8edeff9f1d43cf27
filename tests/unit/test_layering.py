"""The rooms import downward only, with no exception (basics, the ground floor, < fake_hardware <
clusters < drivers_under_test < suites < reports < dralab, the composition on top), and neither a
module nor a package imports itself back through others, lazily or not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Each room and the rooms above it, which it must not import.
ROOMS = ["basics", "fake_hardware", "clusters", "drivers_under_test", "suites", "reports", "dralab"]


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


def _is_package(module: str) -> bool:
    return (REPO / module.replace(".", "/") / "__init__.py").exists()


def _holders(module: str) -> list[str]:
    """The packages that hold `module`: itself if it is one, and each package above it."""
    return [p for p in PACKAGES if module == p or module.startswith(f"{p}.")]


def _package_graph() -> dict[str, set[str]]:
    """A package imports another when a module it holds imports one the other holds. A package and
    the packages under it are one whole (clusters.providers uses clusters.local, which uses
    clusters.config): only packages neither of which holds the other are compared."""
    graph: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for m, deps in GRAPH.items():
        for d in deps:
            for a in _holders(m):
                graph[a] |= {b for b in _holders(d) if b not in _holders(a) and a not in _holders(b)}
    return graph


MODULES = _modules()
GRAPH = {m: _imports(p, MODULES) - {m} for m, p in MODULES.items()}
PACKAGES = sorted(m for m in MODULES if _is_package(m))
PACKAGE_GRAPH = _package_graph()


def _upward(graph: dict[str, set[str]], room: str) -> list[str]:
    above = ROOMS[ROOMS.index(room) + 1 :]
    return sorted(f"{m} imports {d}" for m, deps in graph.items() if m.split(".")[0] == room for d in deps if d.split(".")[0] in above)


def _circles(graph: dict[str, set[str]]) -> set[str]:
    """A circle through each node that has one, written from its first name in sorted order."""
    circles = set()
    for start in graph:
        stack, seen = [(start, (start,))], set()
        while stack:
            node, path = stack.pop()
            for dep in graph.get(node, set()):
                if dep == start:
                    first = path.index(min(path))
                    circles.add(" -> ".join(path[first:] + path[:first] + (path[first],)))
                elif dep not in seen:
                    seen.add(dep)
                    stack.append((dep, (*path, dep)))
    return circles


@pytest.mark.parametrize("room", ROOMS[:-1])
def test_room_imports_nothing_above_it(room: str) -> None:
    wrong = _upward(GRAPH, room)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("room", ROOMS[:-1])
def test_no_package_of_a_room_imports_a_package_above_it(room: str) -> None:
    wrong = _upward(PACKAGE_GRAPH, room)
    assert not wrong, "\n".join(wrong)


def test_no_import_circles() -> None:
    # A package's __init__ is not a circle partner of the modules under it.
    circles = _circles({m: {d for d in deps if not _is_package(d)} for m, deps in GRAPH.items()})
    assert not circles, "\n".join(sorted(circles))


def test_no_import_circles_between_packages() -> None:
    assert {"suites.kubelet_plugin", "suites.device_metadata", "clusters.local"} <= set(PACKAGES)
    circles = _circles(PACKAGE_GRAPH)
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
