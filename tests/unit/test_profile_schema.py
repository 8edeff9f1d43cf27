"""The shipped JSON Schema of driver profiles is the pydantic model's, it takes every shipped
profile (a schema that refused them would mislead every editor using it) and refuses what the
model refuses."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from basics.yaml_profiles import load_yaml
from dralab.cli import main
from drivers_under_test.profile import PROFILES_DIR
from drivers_under_test.schema import SCHEMA_FILE, generate, shipped


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(shipped())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_shipped_schema_is_the_models() -> None:
    assert shipped() == generate(), (
        f"{SCHEMA_FILE} is stale: the driver profile model changed; write it again "
        "with `.venv/bin/python -m drivers_under_test.schema` and commit it"
    )


def test_schema_command_prints_the_shipped_schema() -> None:
    out = CliRunner().invoke(main, ["driver", "schema"])
    assert out.exit_code == 0, out.output
    assert out.output == shipped()


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_profiles_are_valid(validator: jsonschema.Draft202012Validator, path) -> None:
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(load_yaml(path, "profile"))]
    assert not errors, f"{path}: {errors}"


def test_unknown_field_and_capability_are_refused(validator: jsonschema.Draft202012Validator) -> None:
    profile = load_yaml(PROFILES_DIR / "gpu.yaml", "profile")
    assert isinstance(profile, dict)
    wrong = {**profile, "hardwares": "dgx-like", "capabilities": ["metadata", "telepathy"]}
    found = sorted(e.message for e in validator.iter_errors(wrong))
    assert any("hardwares" in m for m in found) and any("telepathy" in m for m in found), found
