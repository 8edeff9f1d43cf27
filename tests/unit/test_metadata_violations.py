"""The MD checks on what the reference GPU driver's metadata variants leave (MUT-01), without a
lab: each check PASSes on what the correct driver writes and FAILs on what the variant writes,
with a message whose first line matches the violation the profile declares for it (what
`dralab selfcheck` demands of the live run). The files are shaped as the upstream framework
writes them (the Go tests in drivers_under_test/dradriver check the variants there)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from drivers_under_test.profile import load_profile
from suites.device_metadata import checks
from suites.device_metadata.scenario import Request, Scenario
from suites.framework import metadata_paths
from suites.framework.evidence import Evidence
from suites.framework.metadata_file import V1ALPHA1, V1BETA1
from suites.framework.node_files import Entry

GPU = "gpu.dralab.dev"
NODE, NAMESPACE, ROOT = "node-1", "md", "/var/lib/kubelet"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
TWO = (Request("req0", 1, "c0"), Request("req1", 1, "c1"))


class FakeNodeFiles:
    """A node's files (host path -> content) as NodeFiles shows them."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def listing(self, node: str, path: str) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for name in self.files:
            if name.startswith(path + "/"):
                out[name] = Entry("644", "regular file")
                parent = name.rpartition("/")[0]
                while parent.startswith(path):
                    out[parent] = Entry("755", "directory")
                    parent = parent.rpartition("/")[0]
        return out

    def find(self, node: str, dirs: tuple[str, ...], name: str) -> tuple[str, str] | None:
        return next(((f"{d}/{name}", self.files[f"{d}/{name}"]) for d in dirs if f"{d}/{name}" in self.files), None)

    def cdi_dirs(self, node: str) -> SimpleNamespace:
        return SimpleNamespace(enabled=True, dirs=CDI_DIRS, source="config", describe=lambda: ", ".join(CDI_DIRS))


@dataclass
class Observed(Scenario):
    """A metadata reader whose containers hold `container_files` (container -> path -> content)."""

    container_files: dict[str, dict[str, str]] = field(default_factory=dict)

    def listed_in(self, container_name: str, *roots: str, only_files: bool = False) -> list[str]:
        return sorted(p for p in self.container_files.get(container_name, {}) if p.startswith(roots))

    def read_in(self, container_name: str, path: str) -> str | None:
        return self.container_files.get(container_name, {}).get(path)


def observed(
    uid: str, requests: tuple[Request, ...], node_files: dict[str, str], container_files: dict[str, dict[str, str]] | None = None
) -> Observed:
    lab = SimpleNamespace(node=lambda name: SimpleNamespace(kubelet_root_dir=ROOT))
    claim_name = "reader-" + "-".join(str(r.count) for r in requests)
    claim = {"metadata": {"name": claim_name, "namespace": NAMESPACE, "uid": uid}}
    return Observed(
        lab,
        None,
        FakeNodeFiles(node_files),
        SimpleNamespace(name=GPU),
        NAMESPACE,
        claim_name,
        claim_name,
        node=NODE,
        claim=claim,
        requests=requests,
        container_files=container_files or {},
    )


def metadata(uid: str, claim_name: str, request: str, attributes: int) -> str:
    """A request's file as the framework writes it: the same object once per version."""
    attrs = {"index": {"int": 0}, "uuid": {"string": "GPU-0"}, "driverVersion": {"version": "1.37.0"}}
    attrs.update({f"firmware{i}Version": {"version": f"1.{i}.0"} for i in range(attributes - len(attrs))})
    obj = {
        "kind": "DeviceMetadata",
        "metadata": {"name": claim_name, "namespace": NAMESPACE, "uid": uid, "generation": 1},
        "requests": [{"name": request, "devices": [{"driver": GPU, "pool": NODE, "name": "gpu-0", "attributes": attrs}]}],
    }
    return "".join(json.dumps({"apiVersion": v, **obj}, indent=2) + "\n" for v in (V1BETA1, V1ALPHA1))


def cdi_spec(s: Scenario, request: str, version: str) -> str:
    mount = {
        "hostPath": s.host_file(request),
        "containerPath": metadata_paths.in_container(s.claim_name, request, GPU),
        "options": ["ro", "bind"],
    }
    return json.dumps(
        {
            "cdiVersion": version,
            "kind": f"{GPU}/metadata",
            "devices": [{"name": f"{s.uid}_{request}", "containerEdits": {"mounts": [mount]}}],
        },
        indent=2,
    )


def with_specs(s: Observed, version: Callable[[str], str]) -> Observed:
    s.files.files.update(
        {f"/var/run/cdi/{metadata_paths.cdi_spec_name(GPU, s.uid, r.name)}": cdi_spec(s, r.name, version(s.uid)) for r in s.requests}
    )
    return s


def minimum(uid: str) -> str:
    return "0.5.0" if uid[0].isdigit() else "0.3.0"


def host_files(s: Observed, attributes: int = 3) -> dict[str, str]:
    return {s.host_file(r.name): metadata(s.uid, s.claim_name, r.name, attributes) for r in s.requests}


def in_containers(s: Observed, merged: bool = False) -> dict[str, dict[str, str]]:
    """Each request's container sees its file, the sidecar every file (one-file-per-claim: only req0's)."""
    files = {
        metadata_paths.in_container(s.claim_name, r.name, GPU): s.files.files[s.host_file(r.name)]
        for r in s.requests
        if not merged or r.name == "req0"
    }
    return {"sidecar": files, **{r.container: {p: t for p, t in files.items() if f"/{r.name}/" in p} for r in s.requests}}


def reader(uid: str = "3f2a-uid", attributes: int = 3, merged: bool = False) -> Observed:
    s = observed(uid, TWO, {})
    s.files.files.update(host_files(s, attributes))
    s.container_files = in_containers(s, merged)
    return with_specs(s, minimum)


def other_host_dir() -> Observed:
    s = observed("3f2a-uid", TWO, {})
    moved = {p.replace("/dra-device-metadata/", "/device-metadata/"): t for p, t in host_files(s).items()}
    s.files.files.update(moved)
    return s


# variant -> (the ID it breaks, the check, the correct driver's observation, the variant's)
CASES: dict[str, tuple[str, Callable[[Any, Evidence], Any], Callable[[], Observed], Callable[[], Observed]]] = {
    "fixed-cdi-version": ("MD-13", checks.cdi_spec, reader, lambda: with_specs(reader(), lambda uid: "0.6.0")),
    "fixed-cdi-version (UID starting with a letter)": (
        "MD-13",
        checks.cdi_spec,
        lambda: reader("af2a-uid"),
        lambda: with_specs(reader("af2a-uid"), lambda uid: "0.6.0"),
    ),
    "too-many-attributes": ("MD-19", checks.valid_v1beta1, lambda: reader(attributes=32), lambda: reader(attributes=33)),
    "one-file-per-claim": ("MD-05", checks.separate_directories, reader, lambda: reader(merged=True)),
    "other-host-dir": ("MD-12", checks.host_layout, reader, other_host_dir),
}


@pytest.mark.parametrize("variant", CASES)
def test_the_check_passes_the_correct_driver_and_names_the_variants_violation(variant: str) -> None:
    rid, check, correct, broken = CASES[variant]
    check(correct(), Evidence())
    with pytest.raises(AssertionError) as failed:
        check(broken(), Evidence())
    first_line = f"AssertionError: {failed.value}".splitlines()[0]  # what the report keeps of a FAIL
    violation = load_profile("gpu").variants[variant.split(" ")[0]].violations[rid]
    assert re.search(violation, first_line), f"{violation!r} does not match {first_line!r}"
