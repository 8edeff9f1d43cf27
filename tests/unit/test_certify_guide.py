"""docs/certify-your-driver.md and the CI templates under docs/ci stay true to dralab: the guide's
profile is valid against the shipped schema, and every `dralab` command line they show names
commands and options that exist. (The steps themselves run on a lab: tests/e2e/test_certify_guide.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import jsonschema
import pytest
import yaml

from dralab.cli import main
from drivers_under_test.schema import shipped

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "certify-your-driver.md"
DOCUMENTS = [GUIDE, *sorted((DOCS / "ci").glob("*.yml"))]
# How the documents invoke dralab: from the virtualenv, through a variable, or quoted in prose.
INVOCATION = re.compile(r'(?:\bbin/dralab|\$DRALAB"?|`dralab)\s+(?=[a-z])')


def invocations(text: str) -> list[list[str]]:
    """The words after each `dralab` on a line, up to a shell operator or comment."""
    found = []
    for line in text.splitlines():
        for match in INVOCATION.finditer(line):
            rest = re.split(r"\s(?:\||&&|;|#|>|\()|`|\)", line[match.end():])[0]
            found.append(rest.replace('"', "").split())
    return found


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name (group by group) and the options given to it."""
    command: click.Command = main
    rest = list(words)
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, [w.split("=")[0] for w in rest if w.startswith("--")]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_command_line_exists(document: Path) -> None:
    lines = invocations(document.read_text())
    assert lines, f"{document} shows no dralab command"
    for words in lines:
        command, options = resolve(words)
        assert not isinstance(command, click.Group), f"{document}: `dralab {' '.join(words)}` names no command"
        known = {o for p in command.params for o in p.opts}
        assert set(options) <= known, f"{document}: `dralab {' '.join(words)}`: no option {set(options) - known}"


def test_the_guides_profile_is_valid_against_the_schema() -> None:
    block = re.search(r"```yaml\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert block, "the guide shows no profile"
    validator = jsonschema.Draft202012Validator(json.loads(shipped()))
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(yaml.safe_load(block[1]))]
    assert not errors, errors
