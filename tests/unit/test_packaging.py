"""The wheel's package-data patterns take every file the code opens from its own tree (the e2e
test tests/e2e/test_wheel.py builds and installs the wheel itself)."""

from __future__ import annotations

from tests.package_files import data_files, unshipped


def test_every_data_file_of_the_packages_is_package_data() -> None:
    files = data_files()
    for room in ("fake_hardware", "clusters", "drivers_under_test", "suites"):
        assert f"{room}/go.sum" in files, f"{room}'s Go module's go.sum is not found at all"
    missing = unshipped(files)
    assert not missing, f"{missing} would not be in the wheel: add their pattern to [tool.setuptools.package-data] in pyproject.toml"
