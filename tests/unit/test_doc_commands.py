"""Every command the README, docs/ and docs/ci's templates give is one dralab has, and is run by a
test (issue 53): found as tests/unit/doc_commands.py finds them (code blocks, `$ ` prompts, inline
`dralab ...` and `make ...`), each is

- a dralab command whose subcommand, options and values click takes as given (its `make_context`,
  nothing invoked) and whose values name profiles, variants, hardware and requirement IDs dralab
  has; a `make` target the Makefile has, its recipe's commands checked in turn; a pytest run whose
  paths and options exist; or another program listed in doc_command_runs.OTHER_PROGRAMS;
- and, if it starts no lab (`dralab driver validate`, `selfcheck --list`, `matrix --plan`, ...),
  run here, exit 0; else run by the test doc_command_runs.RUNS names for its exact words, or listed
  in doc_command_runs.UNRUN (an expected failure) with why nothing runs it yet.

A page's command in neither fails naming its page and line."""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.unit.doc_commands import (
    LAB,
    MAKE,
    OTHER,
    PAGES,
    REPO,
    RUN_HERE,
    TEMPLATES,
    TEST_RUN,
    Checked,
    Command,
    Makefile,
    _test_file,
    all_commands,
    check,
    node_problem,
    resolve,
)
from tests.unit.doc_command_runs import OTHER_PROGRAMS, RUNS, UNRUN

MAKEFILE = Makefile()


def _everything() -> list[Checked]:
    """The pages' commands and what the make targets among them run (unless a test runs the make
    command itself), each checked once per place it is given."""
    found: list[Checked] = []
    seen: set[tuple[str, str]] = set()
    work = [(c, "") for c in all_commands()]
    while work:
        command, via = work.pop(0)
        if via:
            command = dataclasses.replace(command, via=via)
        if (command.where, command.argv) in seen:
            continue
        seen.add((command.where, command.argv))
        checked = check(command, MAKEFILE)
        found.append(checked)
        if checked.kind == MAKE and command.argv not in RUNS:
            origin = via or f"{command.page}:{command.line}"
            work += [(d, origin) for d in checked.derived]
    return found


CHECKED = _everything()


def _by_argv(kind: str) -> dict[str, list[Checked]]:
    grouped: dict[str, list[Checked]] = {}
    for checked in CHECKED:
        if checked.kind == kind:
            grouped.setdefault(checked.command.argv, []).append(checked)
    return grouped


def _where(checked: list[Checked]) -> str:
    return ", ".join(c.command.where for c in checked)


def _id(command: Command) -> str:
    return f"{command.where} {command.argv[:70]}"


def test_the_pages_give_commands() -> None:
    pages = {c.command.page for c in CHECKED}
    for page in [*PAGES, *TEMPLATES]:
        if "```sh" in page.read_text() or page.suffix == ".yml":
            assert str(page.relative_to(REPO)) in pages, f"{page}: no command found in its code blocks"
    assert len([c for c in CHECKED if c.command.page != "Makefile"]) > 150


@pytest.mark.parametrize("checked", CHECKED, ids=lambda c: _id(c.command))
def test_the_command_exists_as_given(checked: Checked) -> None:
    command = checked.command
    assert not checked.problems, f"{command.where}: `{command.text}`:\n" + "\n".join(checked.problems)
    if checked.kind == OTHER:
        assert command.program in OTHER_PROGRAMS, (
            f"{command.where}: `{command.text}` runs {command.program}, which is not dralab, make or pytest: "
            "give a dralab command, or list the program in doc_command_runs.OTHER_PROGRAMS with why"
        )


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkout as the current directory (the pages' relative paths are its), outputs and the
    samples' files under tmp_path."""
    program = tmp_path / "program"
    program.write_text("#!/bin/sh\necho program\n")
    program.chmod(0o755)
    monkeypatch.chdir(REPO)
    return tmp_path


RUN_HERE_COMMANDS = _by_argv(RUN_HERE)


@pytest.mark.parametrize("argv", sorted(RUN_HERE_COMMANDS))
def test_a_command_that_starts_no_lab_runs_here(argv: str, run_dir: Path) -> None:
    checked = RUN_HERE_COMMANDS[argv][0]
    for words in checked.runs:
        words = [w.replace("{tmp}", str(run_dir)) for w in words]
        if checked.command.program == "dralab":
            from dralab.cli import main

            result = CliRunner().invoke(main, words)
            output = result.output + (result.stderr if result.stderr_bytes else "")
            where = _where(RUN_HERE_COMMANDS[argv])
            assert result.exit_code == 0, f"{where}: `dralab {' '.join(words)}` exited {result.exit_code}:\n{output}"
        else:
            import importlib

            module = importlib.import_module(checked.command.program.removeprefix("python -m "))
            assert module.main(words) in (None, 0), f"{_where(RUN_HERE_COMMANDS[argv])}: `{argv}` failed"


LAB_COMMANDS = {**_by_argv(LAB), **{a: c for a, c in _by_argv(MAKE).items() if a in RUNS}}


def _lab_params() -> list[object]:
    params = []
    for argv in sorted(LAB_COMMANDS):
        marks = [pytest.mark.xfail(strict=True, reason=f"UNRUN: {UNRUN[argv]}")] if argv in UNRUN and argv not in RUNS else []
        params.append(pytest.param(argv, marks=marks, id=argv[:90]))
    return params


@pytest.mark.parametrize("argv", _lab_params())
def test_a_lab_command_is_run_by_a_test(argv: str) -> None:
    assert argv in RUNS, (
        f"{_where(LAB_COMMANDS[argv])}: `{argv}` starts a lab (or builds, or needs root) and no test runs it: "
        "give it in doc_command_runs.RUNS with the test that runs these words (how it differs in `how`), "
        "or give the page a command a test runs"
    )


def _literals(path: Path, seen: set[Path] | None = None) -> set[str]:
    """The string literals of a test module and of the tests' modules it imports (the helper that
    runs the command may be one of them)."""
    seen = set() if seen is None else seen
    if path in seen or not path.exists():
        return set()
    seen.add(path)
    tree = ast.parse(path.read_text())
    found = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
            found |= _literals(REPO / (node.module.replace(".", os.sep) + ".py"), seen)
    return found


@pytest.mark.parametrize("argv", sorted(RUNS))
def test_the_tests_named_run_the_command(argv: str) -> None:
    """Each test RUNS names exists, and gives the command's subcommand words (or make target) as
    string literals, or runs the template the command is from."""
    assert argv in LAB_COMMANDS, f"RUNS names `{argv}`, which no page or Makefile recipe gives as a lab command (any more)"
    command = LAB_COMMANDS[argv][0].command
    if command.program == "dralab":
        path, _, _ = resolve(list(command.words))
        words = path
    elif command.program == "make":
        words = ["make", *command.words]
    else:
        words = []
    for node in RUNS[argv].tests:
        assert node_problem(node) is None, f"RUNS[{argv!r}]: {node_problem(node)}"
        file, _ = _test_file(node)
        literals = _literals(file)
        runs_template = any(Path(c.command.page).name in file.read_text() for c in LAB_COMMANDS[argv])
        missing = [w for w in words if w not in literals]
        assert not missing or runs_template, f"RUNS[{argv!r}]: {node} gives no {missing} (is it the test that runs `{argv}`?)"


def test_unrun_and_runs_name_lab_commands_the_pages_give() -> None:
    stale = sorted(set(UNRUN) - set(LAB_COMMANDS))
    assert not stale, f"doc_command_runs.UNRUN names commands no page gives any more: {stale}"
    both = sorted(set(UNRUN) & set(RUNS))
    assert not both, f"in RUNS and UNRUN: {both}"
    unused = sorted(set(OTHER_PROGRAMS) - {c.command.program for c in CHECKED if c.kind == OTHER})
    assert not unused, f"doc_command_runs.OTHER_PROGRAMS names programs no page gives: {unused}"


def test_the_makefiles_test_runs_name_tests_that_exist() -> None:
    runs = [c for c in CHECKED if c.kind == TEST_RUN]
    assert any(c.command.program == "pytest" for c in runs), "no make target runs pytest"
    assert all(not c.problems for c in runs), [p for c in runs for p in c.problems]
