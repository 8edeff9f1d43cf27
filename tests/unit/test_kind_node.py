"""A kind node's files are read from the host under its container's root (/proc/<pid>/root):
symlinks in it are followed inside that root, never into the host's own files; its kubelet's
credentials are made from them."""

from __future__ import annotations

import base64
import errno
from pathlib import Path

import pytest
import yaml

from clusters.kind.node import KindNode, resolve_in_root


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


def test_the_kubelets_credentials_are_its_kubeconfig_with_the_rotated_certificate_inlined(
    root: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = root / "var" / "lib" / "kubelet" / "pki"
    pki.mkdir(parents=True)
    (pki / "kubelet-client-2026.pem").write_text("CERT AND KEY")
    (pki / "kubelet-client-current.pem").symlink_to("/var/lib/kubelet/pki/kubelet-client-2026.pem")
    (root / "etc" / "kubernetes").mkdir(parents=True)
    current = "/var/lib/kubelet/pki/kubelet-client-current.pem"
    (root / "etc" / "kubernetes" / "kubelet.conf").write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": "kind", "cluster": {"server": "https://kind-control-plane:6443", "certificate-authority-data": "Q0E="}}
                ],
                "users": [{"name": "default-auth", "user": {"client-certificate": current, "client-key": current}}],
            }
        )
    )
    monkeypatch.setattr(KindNode, "host_path", lambda self, path: resolve_in_root(root, path))
    state = tmp_path_factory.mktemp("state")
    node = KindNode("node-1", "c", "docker", state / "logs", state, "https://127.0.0.1:40001")
    conf = yaml.safe_load(node.kubelet_kubeconfig.read_text())
    assert conf["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:40001", "certificate-authority-data": "Q0E="}
    inlined = base64.b64encode(b"CERT AND KEY").decode()
    assert conf["users"][0]["user"] == {"client-certificate-data": inlined, "client-key-data": inlined}
    assert node.kubelet_kubeconfig.parent == state  # not in the logs, which go into the results
