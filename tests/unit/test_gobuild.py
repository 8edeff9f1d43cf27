from pathlib import Path

from clusters.provision import gobuild
from clusters.provision.components import DRIVERS_UNDER_TEST, DRIVERS_WITH_CGO, KUBERNETES, REPO
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
    builds: list[tuple[list[str], str, Path]] = []
    monkeypatch.setattr(gobuild, "run_logged", lambda cmd, log, env, cwd, **kw: builds.append((cmd, env["CGO_ENABLED"], cwd)))
    gobuild.build(DRIVERS_WITH_CGO, tmp_path / "cgo", tmp_path / "work", tmp_path / "log")
    gobuild.build(DRIVERS_UNDER_TEST, tmp_path / "drivers", tmp_path / "work", tmp_path / "log")
    (library, cgo, hardware), (smi, smi_cgo, _), (gpu_driver, gpu_cgo, drivers_module), *drivers = builds
    assert "-buildmode=c-shared" in library and library[-1] == "./cmd/libnvidia-ml" and cgo == "1" and hardware == REPO / "fake_hardware"
    assert "-extldflags=-Wl,-soname,libnvidia-ml.so.1" in library[library.index("-ldflags") + 1]
    assert "-buildmode=c-shared" not in smi and smi[-1] == "./cmd/nvidia-smi" and smi_cgo == "1"
    assert "-buildmode=c-shared" not in gpu_driver and gpu_driver[-1] == "./cmd/gpu-dra-driver" and gpu_cgo == "1"
    assert drivers_module == REPO / "drivers_under_test"
    assert all("-buildmode=c-shared" not in cmd and cgo == "0" for cmd, cgo, _ in drivers)


def test_a_recipes_test_suite_is_part_of_its_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "go_version", lambda: "go1.26.8")
    (tmp_path / "suite_test.go").write_text("package suite\n")
    suite = GoRecipe(name="s", version="v1", recipe_dir=tmp_path, tests={"s.test": "."})
    key = suite.key()
    (tmp_path / "suite_test.go").write_text("package suite // changed\n")
    assert suite.key() != key


def _tree(root: Path) -> GoRecipe:
    """A tree of two rooms' modules, the probe's importing the driver's through a replace directive."""
    files = {
        "drivers/go.mod": "module ex.dev/drivers\n\ngo 1.26\n",
        "drivers/lib/lib.go": "package lib\n",
        "drivers/lib/lib_test.go": "package lib\n",
        "drivers/deploy.py": "",
        "drivers/testdata/x.go": "package x\n",
        "probes/go.mod": "module ex.dev/probes\n\ngo 1.26\n\nignore ./recipes\n\nreplace ex.dev/drivers => ../drivers\n",
        "probes/cmd/probe/main.go": "package main\n",
        "probes/recipes/kube/main.go": "package main\n",
        "probes/checks.py": "",
        "other/go.mod": "module ex.dev/other\n\ngo 1.26\n",
        "other/main.go": "package main\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return GoRecipe(name="t", version="local", local_root=root, binaries={"probe": "probes/cmd/probe"})


def test_a_local_programs_key_covers_its_modules_go_sources_and_nothing_else(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gobuild, "go_version", lambda: "go1.26.8")
    recipe = _tree(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in recipe.source_files()] == [
        "drivers/go.mod",
        "drivers/lib/lib.go",
        "probes/cmd/probe/main.go",
        "probes/go.mod",
    ]
    key = recipe.key()
    for unrelated in ("drivers/deploy.py", "probes/checks.py", "drivers/lib/lib_test.go", "probes/recipes/kube/main.go", "other/main.go"):
        (tmp_path / unrelated).write_text("# changed\n")
        assert recipe.key() == key, unrelated
    (tmp_path / "drivers/lib/lib.go").write_text("package lib // changed\n")
    assert recipe.key() != key, "a package the probe's module replaces with the tree's"
    key = recipe.key()
    (tmp_path / "probes/cmd/probe/main.go").rename(tmp_path / "probes/cmd/main.go")
    assert recipe.key() != key, "a file moved to another package"


def test_a_local_program_is_built_in_its_own_module_without_the_workspace(tmp_path: Path, monkeypatch) -> None:
    builds: list[tuple[list[str], Path, str]] = []
    monkeypatch.setattr(gobuild, "run_logged", lambda cmd, log, env, cwd, **kw: builds.append((cmd, cwd, env["GOWORK"])))
    gobuild.build(_tree(tmp_path), tmp_path / "out", tmp_path / "work", tmp_path / "log")
    [(cmd, cwd, gowork)] = builds
    assert (cmd[-1], cwd, gowork) == ("./cmd/probe", tmp_path / "probes", "off")
    assert not (tmp_path / "work").exists(), "no wrapper module for the tree's own programs"
