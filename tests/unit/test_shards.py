"""certify --shards: how the tests split over runs side by side (basics/shards.py), how the runs'
JUnit XML and allure results come together, and that side-by-side children are all waited for."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from basics.children import run_all_to_completion
from basics.errors import BadInput
from basics.shards import CLUSTER, assign, group_of, parse
from reports.certify import _merge_dirs, _merge_junit, lab_names
from reports.report import read_junit


def test_k_of_n_is_read_and_anything_else_is_refused_naming_it() -> None:
    assert parse("2/2") == (2, 2) and parse(" 1 / 3 ") == (1, 3)
    for bad in ("0/2", "3/2", "2", "a/b", ""):
        with pytest.raises(BadInput, match="--shard"):
            parse(bad)


def test_a_tests_group_is_its_driver_else_the_suite_of_the_cluster_check() -> None:
    assert group_of({"driver": "gpu"}, "suites/lab") == "gpu"
    assert group_of({"driver_profile_name": "net", "other": 1}, "suites/deployment") == "net"
    assert (
        group_of({"case": "a bool"}, "suites/derived_attributes")
        == group_of({}, "suites/derived_attributes")
        == CLUSTER + "suites/derived_attributes"
    )


def test_drivers_spread_first_and_the_clusters_checks_go_to_the_least_loaded() -> None:
    da, st, lab = (CLUSTER + s for s in ("suites/derived_attributes", "suites/resource_claim_status", "suites/lab"))
    tests = ["gpu"] * 57 + ["net"] * 57 + [da] * 38 + [st] * 34 + [lab] * 11 + ["fake-gpu-plugin"] * 10 + ["gpu-nvml"]
    assert assign(tests, 2) == {"gpu": 1, "net": 2, "fake-gpu-plugin": 1, "gpu-nvml": 2, da: 2, st: 1, lab: 2}
    assert assign(reversed(tests), 2) == assign(tests, 2)  # the same split whatever the collection order
    assert assign(["vendor"] * 30 + [da] * 90, 2) == {"vendor": 1, da: 2}  # one driver: the cluster beside it
    assert set(assign(tests, 1).values()) == {1}


def test_the_runs_junit_xml_and_allure_results_are_merged(tmp_path) -> None:
    def junit(name: str, *tests: str) -> str:
        cases = "".join(
            f'<testcase classname="suites.m" name="{t}" time="1.5"><properties><property name="requirement" '
            f'value="KP-03"/></properties></testcase>'
            for t in tests
        )
        return f'<testsuites><testsuite name="{name}">{cases}</testsuite></testsuites>'

    (tmp_path / "junit-1.xml").write_text(junit("one", "test_a[gpu]", "test_b[gpu]"))
    (tmp_path / "junit-2.xml").write_text(junit("two", "test_a[net]"))
    _merge_junit([tmp_path / "junit-1.xml", tmp_path / "junit-2.xml", tmp_path / "junit-3.xml"], tmp_path / "junit.xml")
    assert [r.name for r in read_junit(tmp_path / "junit.xml")] == [
        "suites.m::test_a[gpu]",
        "suites.m::test_b[gpu]",
        "suites.m::test_a[net]",
    ]
    assert len(ET.parse(tmp_path / "junit.xml").getroot().findall("testsuite")) == 2
    assert not (tmp_path / "junit-1.xml").exists()

    for k, names in ((1, ["a-result.json", "b-container.json"]), (2, ["c-result.json"])):
        (tmp_path / f"allure-{k}").mkdir()
        for n in names:
            (tmp_path / f"allure-{k}" / n).write_text(str(k))
    (tmp_path / "allure").mkdir()
    (tmp_path / "allure" / "stale-result.json").write_text("an earlier run's")
    _merge_dirs([tmp_path / "allure-1", tmp_path / "allure-2"], tmp_path / "allure")
    assert sorted(p.name for p in (tmp_path / "allure").iterdir()) == ["a-result.json", "b-container.json", "c-result.json"]
    assert not (tmp_path / "allure-1").exists()


def test_every_shards_labs_are_looked_for_residue() -> None:
    names = lab_names("cert", 2)
    assert {"cert", "cert-placement", "cert-scale", "cert2", "cert2-placement", "cert2-scale", "cert2-kind"} <= set(names)
    assert "cert2-scale-kind" not in names and "cert2" not in lab_names("cert", 1)


def test_children_side_by_side_are_all_waited_for_with_their_exit_codes(tmp_path) -> None:
    slow = f"import time, pathlib; time.sleep(0.5); pathlib.Path({str(tmp_path / 'done')!r}).write_text('x'); raise SystemExit(5)"
    assert run_all_to_completion([[sys.executable, "-c", slow], [sys.executable, "-c", "raise SystemExit(1)"]]) == [5, 1]
    assert (tmp_path / "done").exists()
