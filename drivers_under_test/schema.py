"""The driver profile's JSON Schema, generated from the pydantic model and shipped next to it
(profile.schema.json), so editors complete and check a vendor's profile as it is written and CI
can validate it without dralab. `dralab driver schema` prints the shipped file; after a change
to the model, `python -m drivers_under_test.schema` writes it again (a unit test fails while the
shipped file is stale). The schema checks the shape only: `dralab driver validate` also checks
files, parameters and image archives (DEP-02)."""

from __future__ import annotations

import json
from pathlib import Path

from drivers_under_test.profile import DriverProfile

SCHEMA_FILE = Path(__file__).with_name("profile.schema.json")
DESCRIPTION = (
    "A dralab driver profile: how dralab deploys a driver and what it claims. Paths are relative to the "
    "profile file. `dralab driver validate PROFILE` checks everything this schema cannot."
)


def generate() -> str:
    schema = DriverProfile.model_json_schema(by_alias=True)
    # Set by load_profile to the file's own location, never written in a profile.
    schema["properties"].pop("source", None)
    schema.update(title="dralab driver profile", description=DESCRIPTION)
    return json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}, indent=2) + "\n"


def shipped() -> str:
    return SCHEMA_FILE.read_text()


if __name__ == "__main__":
    SCHEMA_FILE.write_text(generate())
    print(f"wrote {SCHEMA_FILE}")
