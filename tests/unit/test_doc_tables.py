"""docs/performance.md's measured tables are the runs' records: each generated section of the page
is what reports/perf/doc_tables.py renders from docs/performance-data/, every record there is one
a table cites, and a table of the page that is not generated says it was measured by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reports.perf import doc_tables
from reports.perf.doc_tables import DATA, PAGE, TABLES, record, render, sections

PAGE_TEXT = PAGE.read_text()
BY_HAND = "<!-- measured by hand, not generated"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_pages_generated_section_is_the_records(name: str) -> None:
    assert name in sections(PAGE_TEXT), f"{PAGE}: no `<!-- generated: {name} -->` ... `<!-- end -->` section"
    assert sections(PAGE_TEXT)[name] == TABLES[name](), (
        f"{PAGE}: the {name} table differs from docs/performance-data: `python -m reports.perf.doc_tables` rewrites it"
    )


def test_each_section_is_there_once_and_renders_to_the_page_as_it_is() -> None:
    names = re.findall(r"<!-- generated: ([\w-]+) -->", PAGE_TEXT)
    assert sorted(names) == sorted(TABLES), f"sections {names}, tables {sorted(TABLES)}"
    assert render(PAGE_TEXT) == PAGE_TEXT


def test_every_table_of_the_page_is_generated_or_said_to_be_measured_by_hand() -> None:
    outside = doc_tables.SECTION.sub("", PAGE_TEXT)
    unsaid = []
    for block in re.split(r"\n\s*\n", outside):
        if re.search(r"^\|.*\|\n\|( ?-+ ?\|)+", block, re.MULTILINE) and BY_HAND not in block:
            unsaid.append(block.splitlines()[0])
    assert not unsaid, f"{PAGE}: tables neither generated nor marked `{BY_HAND} ...`: {unsaid}"


def test_every_record_is_cited_and_they_are_small() -> None:
    cited = {r.name for r in vars(doc_tables).values() if isinstance(r, doc_tables.Record)}
    kept = {p.stem for p in DATA.glob("*.json")}
    assert kept == cited, f"records no table cites: {sorted(kept - cited)}; cited and missing: {sorted(cited - kept)}"
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 200_000


def test_a_soak_is_kept_as_it_is_and_a_certification_as_its_summary(tmp_path: Path) -> None:
    soak = tmp_path / "soak"
    soak.mkdir()
    (soak / "soak.json").write_text(json.dumps({"load": 0, "runs": [], "changed": []}))
    assert json.loads(record("s", soak, tmp_path / "data").read_text()) == {"load": 0, "runs": [], "changed": []}
    out = tmp_path / "out"
    out.mkdir()
    report = {
        "summary": {
            "outcome": "CERTIFIED",
            "exit_code": 0,
            "requirements": {"driver": {"PASS": 1}},
            "wall_seconds": 9.5,
            "behind": ["KP-01"],
        },
        "requirements": [{"id": "KP-01", "verdict": "PASS", "section": "driver", "tests": [{"message": "long"}]}],
        "environment": {"residue after teardown": "none", "kubernetes": "v1.37.1"},
    }
    (out / "report.json").write_text(json.dumps(report))
    assert json.loads(record("c", out, tmp_path / "data").read_text()) == {
        "summary": {"outcome": "CERTIFIED", "exit_code": 0, "requirements": {"driver": {"PASS": 1}}, "wall_seconds": 9.5},
        "verdicts": {"KP-01": "PASS"},
        "sections": {"KP-01": "driver"},
        "residue": "none",
    }


def test_check_exits_1_naming_a_section_that_differs(monkeypatch, tmp_path: Path, capsys) -> None:
    page = tmp_path / "performance.md"
    page.write_text(PAGE_TEXT.replace("| KP-01 | PASS | PASS | PASS |", "| KP-01 | PASS | FAIL | PASS |"))
    monkeypatch.setattr(doc_tables, "PAGE", page)
    assert doc_tables.main(["--check"]) == 1
    assert "generated section under-load differs" in capsys.readouterr().out
    assert doc_tables.main([]) == 0 and page.read_text() == PAGE_TEXT
