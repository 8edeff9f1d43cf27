"""docs/certify-your-driver.md and the CI templates under docs/ci stay true to dralab: the guide's
profiles are valid against the shipped schema and the model, and every `dralab` command line they
show names commands and options that exist. (The steps themselves run on a lab:
tests/e2e/test_certify_guide.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml

from dralab.cli import main
from drivers_under_test.profile import DriverProfile
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
            rest = re.split(r"\s(?:\||&&|;|#|>|\()|`|\)", line[match.end() :])[0]
            found.append(rest.replace('"', "").split())
    return found


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name (group by group) and the words given to it."""
    command: click.Command = main
    rest = list(words)
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_command_line_exists(document: Path) -> None:
    lines = invocations(document.read_text())
    assert lines, f"{document} shows no dralab command"
    for words in lines:
        command, rest = resolve(words)
        options = [w.split("=")[0] for w in rest if w.startswith("--")]
        runs_alone = not isinstance(command, click.Group) or command.invoke_without_command  # dralab matrix
        assert runs_alone, f"{document}: `dralab {' '.join(words)}` names no command"
        known = {o for p in command.params for o in p.opts}
        assert set(options) <= known, f"{document}: `dralab {' '.join(words)}`: no option {set(options) - known}"


def profile_blocks() -> list[dict[str, Any]]:
    """The guide's YAML blocks, each over the guide's first, its profile: a later block shows
    fields to add to it (or to replace), so it is checked as the profile it makes."""
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), re.DOTALL)]
    assert blocks, "the guide shows no profile"
    return [blocks[0], *({**blocks[0], **b} for b in blocks[1:])]


def test_the_guides_profiles_are_valid_against_the_schema_and_the_model() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(shipped()))
    for profile in profile_blocks():
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(profile)]
        assert not errors, errors
        DriverProfile.model_validate(profile)  # what the schema cannot say: the fields' relations


def test_the_guide_shows_container_settings_and_a_variants_chart_values() -> None:
    profiles = [DriverProfile.model_validate(p) for p in profile_blocks()]
    variants = [v for p in profiles for v in p.variants.values()]
    assert any(p.containers for p in profiles) and any(v.containers for v in variants)
    assert any(v.chart_values for v in variants)


def test_the_guide_gives_a_chart_the_kubelet_dirs_it_takes_apart() -> None:
    values = [json.dumps(p["chart"]["values"]) for p in profile_blocks() if "chart" in p]
    assert any("${KUBELET_ROOT_DIR}/plugins_registry" in v and '${KUBELET_ROOT_DIR}/plugins"' in v for v in values)
