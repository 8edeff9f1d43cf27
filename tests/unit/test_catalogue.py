"""The shipped requirement catalogue (suites/catalogue.yaml) loads, holds every ID of the
catalogue and every ID a suite marks, and its levels and applicability are well formed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suites import catalogue
from suites.catalogue import Checks, Level, Requirement

SUITES = Path(catalogue.__file__).parent


def _ids(prefix: str, last: int) -> list[str]:
    return [f"{prefix}-{i:02d}" for i in range(1, last + 1)]


# The catalogue's order: ST-07 was added after ST-06 but belongs with ST-01; ST-09 (a cluster check) with ST-03..05.
EXPECTED = [
    *_ids("LAB", 9),
    *_ids("DEP", 2),
    "KP-01",
    "KP-02",
    "KP-03",
    "KP-04",
    "KP-05",
    "KP-06",
    "KP-07",
    "KP-08",
    "KP-09",
    "KP-10",
    "KP-11",
    "KP-12",
    "KP-13",
    *_ids("HW", 10),
    *_ids("MD", 20),
    "ST-01",
    "ST-07",
    "ST-02",
    "ST-03",
    "ST-04",
    "ST-05",
    "ST-09",
    "ST-08",
    "ST-06",
    *_ids("DA", 11),
    *_ids("DP", 7),
    *_ids("RP", 4),
    *_ids("MUT", 2),
    *_ids("PF", 8),
]
APPLIES = {
    "metadata",
    "metadata-deferred",
    "device-status",
    "network-data",
    "device-plugin",
    "health",
    "exclusive-cpus",
    "dra",
    "any",
    None,
}
# requirement("ID") as a marker, a pytest.param mark or a plain call; the ID need not be well formed.
REQUIREMENT_CALL = re.compile(r"""\brequirement\(\s*["']([^"']+)["']""")


def test_catalogue_loads_and_validates() -> None:
    requirements = catalogue.load()
    assert requirements and all(isinstance(r, Requirement) for r in requirements.values())
    assert all(r.id == key for key, r in requirements.items())
    assert all(r.text.strip() and "\n" not in r.text and r.source.strip() for r in requirements.values())


def test_load_is_cached() -> None:
    assert catalogue.load() is catalogue.load()


def test_ids_are_the_catalogues_in_its_order() -> None:
    assert list(catalogue.load()) == EXPECTED


def test_ids_are_well_formed_and_unique() -> None:
    ids = re.findall(r"^([^\s#][^:]*):", catalogue.CATALOGUE.read_text(), re.MULTILINE)
    assert len(ids) == len(set(ids)), "a duplicate key in the YAML would silently replace the first entry"
    assert [i for i in ids if not re.fullmatch(r"[A-Z]+-\d\d", i)] == []


def test_every_id_a_suite_uses_is_in_the_catalogue() -> None:
    used = {
        (path.relative_to(SUITES).as_posix(), rid) for path in SUITES.rglob("*.py") for rid in REQUIREMENT_CALL.findall(path.read_text())
    }
    assert len({rid for _, rid in used}) > 20, "the scan found almost nothing: has the marker's spelling changed?"
    assert sorted(u for u in used if u[1] not in catalogue.load()) == []


def test_levels() -> None:
    assert catalogue.get("ST-01").level is Level.MUST
    assert catalogue.get("ST-07").level is Level.SHOULD
    assert catalogue.get("ST-06").level is Level.SHOULD  # reported as a warning


def test_applies_names_a_known_capability() -> None:
    assert {r.applies for r in catalogue.load().values()} <= APPLIES
    with pytest.raises(ValueError, match="metadta"):
        Requirement(id="MD-99", text="t", level="MUST", source="s", applies="metadta", checks="driver")


def test_checks_follow_the_family() -> None:
    """dralab's own promises are never the driver's or the cluster's verdict."""
    by_family = {rid: r.checks for rid, r in catalogue.load().items()}
    assert {by_family[i] for i in EXPECTED if i.split("-")[0] in ("LAB", "HW")} == {Checks.LAB}
    assert {by_family[i] for i in EXPECTED if i.split("-")[0] in ("RP", "MUT", "PF")} == {Checks.HARNESS}
    assert {by_family[i] for i in EXPECTED if i.split("-")[0] in ("DEP", "MD")} == {Checks.DRIVER}
    assert {by_family[i] for i in EXPECTED if i.split("-")[0] == "DA"} == {Checks.CLUSTER}


def test_unknown_fields_are_refused_and_requirements_are_frozen() -> None:
    with pytest.raises(ValueError, match="extra"):
        Requirement(id="X-01", text="t", level="MAY", source="s", applies=None, checks="lab", note="n")
    with pytest.raises(ValueError):
        catalogue.get("ST-01").level = Level.MAY


def test_get_unknown_id() -> None:
    assert catalogue.get("XX-99") is None


def test_every_driver_requirement_has_a_one_line_remedy() -> None:
    """Each FAIL of the driver's in the report says what to fix."""
    driver = [r for r in catalogue.load().values() if r.checks is Checks.DRIVER]
    assert [r.id for r in driver if not (r.remedy or "").strip() or "\n" in r.remedy] == []


def test_upstream_issues_are_ones_the_source_names() -> None:
    linked = {r.id: r.upstream_issue for r in catalogue.load().values() if r.upstream_issue}
    assert linked, "no requirement names its upstream issue"
    for rid, issue in linked.items():
        repo, number = issue.split("#")
        assert f"{repo.split('/')[1]}#{number}" in catalogue.get(rid).source, f"{rid}: {issue} is not in its source"
    assert catalogue.issue_url("kubernetes/kubernetes#141433") == "https://github.com/kubernetes/kubernetes/issues/141433"
    with pytest.raises(ValueError, match="owner/repository#number"):
        Requirement(id="MD-99", text="t", level="MUST", source="s", applies=None, checks="driver", upstream_issue="#1")


def test_every_driver_requirement_states_the_oracle_its_checks_evaluate() -> None:
    # Issue 52: what each driver check computes as expected and compares, in the catalogue.
    lacking = [r.id for r in catalogue.load().values() if r.checks is Checks.DRIVER and not (r.oracle or "").strip()]
    assert not lacking, f"driver requirements without an oracle: {lacking}"
    assert all(r.oracle is None or "\n" not in r.oracle for r in catalogue.load().values())


def test_gaps_are_non_empty_sentences_of_driver_requirements() -> None:
    for r in catalogue.load().values():
        assert all(isinstance(g, str) and g.strip() and "\n" not in g for g in r.gaps), r.id
        assert not r.gaps or r.checks is Checks.DRIVER, f"{r.id} has gaps but is not a driver requirement"
        assert not r.gaps or r.oracle, f"{r.id} has gaps but no oracle they fall short of"


def test_an_empty_gap_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty sentence"):
        Requirement(id="X-01", text="t", level=Level.MUST, source="s", applies=None, checks=Checks.DRIVER, gaps=("  ",))
