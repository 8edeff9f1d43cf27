"""`dralab certify` refuses bad input before any lab starts, with exit code 2 (RP-04)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from clusters.cli import main
from clusters.errors import BadInput
from reports.certify import suite_paths


def test_only_maps_prefixes_to_suites() -> None:
    assert suite_paths(None) == ["suites"]
    assert suite_paths("md, DA,md") == ["suites/device_metadata", "suites/derived_attributes"]
    with pytest.raises(BadInput, match="unknown suite.*XX.*choose from LAB, MD, ST, DA, DP"):
        suite_paths("MD,XX")


@pytest.mark.parametrize("args,named", [(["--only", "QQ"], "QQ"), (["--driver", "no-such-driver"], "no-such-driver")])
def test_bad_input_exits_2_naming_it(tmp_path, args: list[str], named: str) -> None:
    result = CliRunner().invoke(main, ["certify", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
