from pathlib import Path

from clusters.provision import gobuild
from clusters.provision.components import DRIVERS_UNDER_TEST, DRIVERS_WITH_CGO, KUBERNETES
from clusters.provision.gobuild import GoRecipe

KUBERNETES_GOMOD = """module k8s.io/kubernetes

require (
	github.com/spf13/cobra v1.10.2
	k8s.io/api v0.0.0
	k8s.io/cri-streaming v0.0.0
)
"""


def test_wrapper_module_replaces_every_unversioned_staging_module(monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "module_gomod", lambda module, version: KUBERNETES_GOMOD)
    gomod = KUBERNETES.go_mod("1.26")
    assert "require k8s.io/kubernetes v1.37.1" in gomod
    assert "replace k8s.io/api => k8s.io/api v0.37.1" in gomod
    assert "replace k8s.io/cri-streaming => k8s.io/cri-streaming v0.37.1" in gomod
    assert "cobra" not in gomod


def test_dependency_packages_become_tool_directives() -> None:
    recipe = GoRecipe(
        name="x", version="v1", requires={"example.com/m": "v1"}, binaries={"a": "example.com/m/cmd/a", "b": "example.com/m/cmd/b"}
    )
    gomod = recipe.go_mod("1.26")
    assert "tool example.com/m/cmd/a" in gomod and "tool example.com/m/cmd/b" in gomod


def test_cache_key_changes_with_version_and_recipe_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "go_version", lambda: "go1.26.8")
    (tmp_path / "main.go").write_text("package main\n")
    base = GoRecipe(name="x", version="v1", recipe_dir=tmp_path, binaries={"x": "."})
    key = base.key()
    assert GoRecipe(name="x", version="v2", recipe_dir=tmp_path, binaries={"x": "."}).key() != key
    (tmp_path / "main.go").write_text("package main // changed\n")
    assert base.key() != key


def test_a_binary_named_as_a_shared_library_is_built_as_one_with_cgo(tmp_path: Path, monkeypatch) -> None:
    builds: list[tuple[list[str], str]] = []
    monkeypatch.setattr(gobuild, "run_logged", lambda cmd, log, env, **kw: builds.append((cmd, env["CGO_ENABLED"])))
    gobuild.build(DRIVERS_WITH_CGO, tmp_path / "cgo", tmp_path / "work", tmp_path / "log")
    gobuild.build(DRIVERS_UNDER_TEST, tmp_path / "drivers", tmp_path / "work", tmp_path / "log")
    (library, cgo), (smi, smi_cgo), (gpu_driver, gpu_cgo), *drivers = builds
    assert "-buildmode=c-shared" in library and library[-1] == "./cmd/libnvidia-ml" and cgo == "1"
    assert "-extldflags=-Wl,-soname,libnvidia-ml.so.1" in library[library.index("-ldflags") + 1]
    assert "-buildmode=c-shared" not in smi and smi[-1] == "./cmd/nvidia-smi" and smi_cgo == "1"
    assert "-buildmode=c-shared" not in gpu_driver and gpu_driver[-1] == "./cmd/gpu-dra-driver" and gpu_cgo == "1"
    assert all("-buildmode=c-shared" not in cmd and cgo == "0" for cmd, cgo in drivers)


def test_a_recipes_test_suite_is_part_of_its_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "go_version", lambda: "go1.26.8")
    (tmp_path / "suite_test.go").write_text("package suite\n")
    suite = GoRecipe(name="s", version="v1", recipe_dir=tmp_path, tests={"s.test": "."})
    key = suite.key()
    (tmp_path / "suite_test.go").write_text("package suite // changed\n")
    assert suite.key() != key
