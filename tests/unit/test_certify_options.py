"""`dralab certify` refuses bad input before any lab starts, with exit code 2 (RP-04)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dralab.cli import main
from clusters.errors import BadInput
from reports.certify import selection


def test_only_maps_prefixes_to_suites_and_ids_to_their_tests() -> None:
    assert selection(None) == (["suites"], [])
    assert selection("md, DA,md") == (["suites/device_metadata", "suites/derived_attributes"], [])
    assert selection("md-01,DA-04,DA") == (["suites/device_metadata", "suites/derived_attributes"], ["DA", "MD-01"])
    for bad in ("MD,XX", "QQ-01", "MD-x"):
        with pytest.raises(BadInput, match="unknown suite.*choose from LAB, MD, ST, DA, DP"):
            selection(bad)


@pytest.mark.parametrize("args,named", [
    (["--only", "QQ"], "QQ"), (["--driver", "no-such-driver"], "no-such-driver"),
    (["--hardware", "no-such-hardware"], "no-such-hardware"), (["--cluster", "kubeconfig"], "--kubeconfig"),
    (["--driver", "gpu", "--variant", "no-such-variant"], "wrong-path"), (["--variant", "wrong-path"], "--driver"),
])
def test_bad_input_exits_2_naming_it(tmp_path, args: list[str], named: str) -> None:
    result = CliRunner().invoke(main, ["certify", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
