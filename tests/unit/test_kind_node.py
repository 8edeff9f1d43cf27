"""A kind node's files are read from the host under its container's root (/proc/<pid>/root):
symlinks in it are followed inside that root, never into the host's own files."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from clusters.kind.node import resolve_in_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A node's root with /var/run -> /run (absolute, as in Debian) and a relative link."""
    (tmp_path / "run" / "cdi").mkdir(parents=True)
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "run").symlink_to("/run")
    (tmp_path / "var" / "lib").mkdir()
    (tmp_path / "var" / "lib" / "k").symlink_to("../run")
    return tmp_path


def test_an_absolute_link_is_followed_inside_the_root(root: Path) -> None:
    assert resolve_in_root(root, "/var/run/cdi/spec.json") == root / "run" / "cdi" / "spec.json"


def test_relative_links_and_dotdot_stay_inside_the_root(root: Path) -> None:
    assert resolve_in_root(root, "/var/lib/k/cdi") == root / "run" / "cdi"  # ../run is /var/run, a link to /run
    assert resolve_in_root(root, "/../../etc/x") == root / "etc" / "x"


def test_a_link_loop_is_an_error(root: Path) -> None:
    (root / "loop").symlink_to("/loop")
    with pytest.raises(OSError) as e:
        resolve_in_root(root, "/loop/x")
    assert e.value.errno == errno.ELOOP
