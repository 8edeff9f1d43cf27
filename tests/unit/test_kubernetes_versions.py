"""Labs on other Kubernetes versions (--kubernetes-version): each version built apart, lab
configurations without the gates a version lacks, and the requirements needing them not applying."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clusters import versions
from clusters.config import ClusterConfig
from clusters.lab_configurations import SCHEDULER_GATE_OFF, SESSION_LAB, at_version
from clusters.provision.components import KUBERNETES, kubernetes_recipe
from suites import catalogue

# What kube-apiserver v1.36.3 --help lists among DRA gates (no DRADerivedAttributes: it came in 1.37).
GATES_1_36 = {"DRAListTypeAttributes", "DRAResourceClaimGranularStatusAuthorization", "DRAConsumableCapacity"}


def test_each_version_is_built_apart_with_its_own_staging_modules() -> None:
    older = kubernetes_recipe("v1.36.3")
    assert older.requires == {"k8s.io/kubernetes": "v1.36.3"}
    assert older.pin_unversioned_requires_of == ("k8s.io/kubernetes", "v0.36.3")
    assert "gitVersion=v1.36.3" in older.ldflags and "gitMinor=36" in older.ldflags
    assert older.key() != KUBERNETES.key()
    assert KUBERNETES == kubernetes_recipe(versions.KUBERNETES)


def test_a_version_dralab_does_not_build_is_refused_naming_those_it_does() -> None:
    with pytest.raises(ValidationError, match=r"v1\.30\.0 is not one dralab builds; choose one of v1\.35\.4, v1\.36\.3"):
        ClusterConfig(name="old", kubernetes_version="v1.30.0")
    assert versions.unsupported(versions.KUBERNETES) is None


def test_a_lab_on_an_older_version_starts_without_the_gates_it_lacks() -> None:
    cfg, dropped = at_version(SCHEDULER_GATE_OFF, "v1.36.3", GATES_1_36)
    assert cfg.kubernetes_version == "v1.36.3"
    assert dropped == ["DRADerivedAttributes"]
    assert cfg.feature_gates == {"DRAListTypeAttributes": False}
    assert cfg.component_feature_gates == {"kube-scheduler": {}}
    same, none = at_version(SESSION_LAB, versions.KUBERNETES, set(SESSION_LAB.feature_gates))
    assert (same, none) == (SESSION_LAB, [])


def test_requirements_say_from_which_version_and_under_which_gates_they_apply() -> None:
    assert catalogue.not_applicable(["DA-08", "ST-04", "KP-01"], "v1.36.3", lambda: GATES_1_36) == [
        "DA-08 applies from Kubernetes v1.37 (feature gate DRADerivedAttributes, DRAListTypeAttributes); this lab runs v1.36.3"
    ]
    assert catalogue.not_applicable(["ST-04", "ST-06"], "v1.35.4", set) == [
        "ST-04 applies from Kubernetes v1.36 (feature gate DRAResourceClaimGranularStatusAuthorization); this lab runs v1.35.4",
        "ST-06 applies from Kubernetes v1.36 (feature gate DRAResourceClaimGranularStatusAuthorization); this lab runs v1.35.4",
    ]
    # A version that has the behaviour but was built without the gate (turned off for good): the gate decides.
    assert catalogue.not_applicable(["DA-01"], "v1.37.1", set) == [
        "DA-01 needs the feature gate DRADerivedAttributes, which Kubernetes v1.37.1 does not have"
    ]
    asked = []
    assert catalogue.not_applicable(["KP-01", "unknown-id"], "v1.35.4", lambda: asked.append(1) or set()) == []
    assert asked == [], "the gates are read only for an ID that needs one"


GATED = """
import pytest

from dralab.pytest_plugin import labs

labs.known_gates = lambda config: {"DRAListTypeAttributes"}  # what an older version's components list


@pytest.mark.e2e
@pytest.mark.requirement("DA-04")
def test_needs_derived_attributes(request):
    request.getfixturevalue("lab")  # never reached: no lab starts for a requirement that does not apply


@pytest.mark.e2e
@pytest.mark.requirement("KP-01")
def test_needs_no_gate():
    pass
"""


def test_a_test_whose_requirement_needs_a_gate_the_version_lacks_skips_before_its_lab(pytester) -> None:
    pytester.makepyfile(GATED)
    # its patch stays in its process
    result = pytester.runpytest_subprocess("--kubernetes-version", "v1.36.3", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*DA-04 applies from Kubernetes v1.37 (feature gate DRADerivedAttributes); this lab runs v1.36.3*"])


def test_a_kind_lab_on_another_version_is_refused_before_anything_starts() -> None:
    from basics.errors import BadInput
    from clusters.kind.cluster import KindCluster

    with pytest.raises(BadInput, match=r"kind labs run Kubernetes v1\.37\.1 only .* not v1\.36\.3: use --cluster local"):
        KindCluster(ClusterConfig(name="k", kubernetes_version="v1.36.3"), tools=None)  # type: ignore[arg-type]  # no tools: refused before any is used
