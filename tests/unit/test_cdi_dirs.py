"""Where a node's containerd reads CDI specs, from recorded configuration files: containerd 2.x's
version 3 layout, the version 2 layout containerd 1.7 writes (migrated by 2.x on load), drop-ins
and containerd's defaults when nothing sets the key."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from suites.framework.cdi_dirs import DEFAULT_DIRS, config_flag, from_configs, imports, read_configs

# A local lab node's file (clusters/local/configs.py), as written.
LAB_V3 = """version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "registry.k8s.io/pause:3.10.2"

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  disable_hugetlb_controller = true

[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = "/var/run/nri/nri.sock"
"""

# containerd 1.7's layout (`containerd config default` of 1.7 with a vendor's dir added).
V2 = """version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    enable_cdi = true
    cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi", "/opt/vendor/cdi/"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
"""

NO_CDI_KEYS = """version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"
"""


def test_version_3_names_its_dirs() -> None:
    found = from_configs([("/etc/containerd/config.toml", LAB_V3)])
    assert found.dirs == ("/etc/cdi", "/var/run/cdi") and found.enabled
    assert found.source == "cdi_spec_dirs in /etc/containerd/config.toml"


def test_version_2_is_read_from_the_old_cri_section() -> None:
    found = from_configs([("/etc/containerd/config.toml", V2)])
    assert found.dirs == ("/etc/cdi", "/var/run/cdi", "/opt/vendor/cdi")


def test_version_1_short_plugin_name() -> None:
    found = from_configs([("/c.toml", '[plugins.cri]\n  cdi_spec_dirs = ["/v1/cdi"]\n')])
    assert found.dirs == ("/v1/cdi",)


def test_in_one_old_file_the_new_section_wins_over_the_old() -> None:
    # kind patches the runtime section into its version 2 file: the migration keeps what is set there.
    both = V2 + '\n[plugins."io.containerd.cri.v1.runtime"]\n  cdi_spec_dirs = ["/new"]\n'
    assert from_configs([("/c.toml", both)]).dirs == ("/new",)


def test_defaults_when_nothing_sets_the_key_and_the_observation_says_so() -> None:
    found = from_configs([("/etc/containerd/config.toml", NO_CDI_KEYS)])
    assert found.dirs == DEFAULT_DIRS == ("/etc/cdi", "/var/run/cdi") and found.enabled
    assert found.source == "containerd's defaults: no cdi_spec_dirs in /etc/containerd/config.toml"
    absent = from_configs([], "/etc/containerd/config.toml")
    assert absent.dirs == DEFAULT_DIRS and "no /etc/containerd/config.toml on the node" in absent.source


def test_a_later_drop_in_replaces_the_list_each_file_migrated_on_its_own() -> None:
    drop_in = '[plugins."io.containerd.grpc.v1.cri"]\n  cdi_spec_dirs = ["/dropin/cdi"]\n'  # version 1 (none given)
    found = from_configs([("/etc/containerd/config.toml", LAB_V3), ("/etc/containerd/conf.d/99-cdi.toml", drop_in)])
    assert found.dirs == ("/dropin/cdi",) and found.source == "cdi_spec_dirs in /etc/containerd/conf.d/99-cdi.toml"
    # A drop-in that sets something else leaves the main file's dirs.
    other = "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  disable_apparmor = true\n"
    assert from_configs([("/main.toml", V2), ("/other.toml", other)]).dirs[-1] == "/opt/vendor/cdi"


def test_cdi_disabled_is_reported() -> None:
    found = from_configs([("/c.toml", "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n")])
    assert not found.enabled and "enable_cdi = false in /c.toml" in found.source


def test_imports_resolve_relative_to_the_importing_file() -> None:
    doc = {"imports": ["/etc/containerd/conf.d/*.toml", "extra.toml", "sub/more.toml"]}
    assert imports(doc, "/srv/lab/conf/containerd.toml") == [
        "/etc/containerd/conf.d/*.toml",
        "/srv/lab/conf/extra.toml",
        "/srv/lab/conf/sub/more.toml",
    ]


@pytest.mark.parametrize(
    "argv,want",
    [
        (
            ["/cache/containerd", "--config=/srv/dralab/labs/e2e/nodes/node-1/conf/containerd.toml"],
            "/srv/dralab/labs/e2e/nodes/node-1/conf/containerd.toml",
        ),
        (["containerd", "--config", "/a.toml"], "/a.toml"),
        (["containerd", "-c", "/b.toml", "--log-level", "debug"], "/b.toml"),
        (["containerd"], "/etc/containerd/config.toml"),
    ],
)
def test_config_file_from_the_command_line(argv: list[str], want: str) -> None:
    assert config_flag(argv) == want


@dataclass
class FakeFiles:
    """NodeFiles over a dict of node paths."""

    files: dict[str, str]
    globbed: list[str] = field(default_factory=list)

    def read(self, node: str, path: str) -> str | None:
        return self.files.get(path)

    def glob(self, node: str, pattern: str) -> list[str]:
        self.globbed.append(pattern)
        prefix = pattern.split("*")[0]
        return [p for p in reversed(list(self.files)) if p.startswith(prefix) and p.endswith(".toml")]


def test_read_configs_follows_imports_breadth_first_globs_sorted_each_file_once() -> None:
    files = FakeFiles(
        {
            "/etc/containerd/config.toml": 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml", "local.toml"]\n',
            "/etc/containerd/conf.d/10-a.toml": 'imports = ["/etc/containerd/config.toml"]\n',  # a circle: read once
            "/etc/containerd/conf.d/20-b.toml": "version = 3\n",
            "/etc/containerd/local.toml": "version = 3\n",
        }
    )
    loaded = [p for p, _ in read_configs(files, "node-1", "/etc/containerd/config.toml")]  # type: ignore[arg-type]  # a FakeFiles stands in for the NodeFiles
    assert loaded == [
        "/etc/containerd/config.toml",
        "/etc/containerd/conf.d/10-a.toml",
        "/etc/containerd/conf.d/20-b.toml",
        "/etc/containerd/local.toml",
    ]
    assert read_configs(FakeFiles({}), "node-1", "/etc/containerd/config.toml") == []  # type: ignore[arg-type]  # a FakeFiles stands in for the NodeFiles
