"""The history a report keeps beside it (the matrix's and the mutation report's history.json): none
before the first run, each run appended in order, the file a JSON list as earlier dralab wrote it."""

from __future__ import annotations

import json
from pathlib import Path

from reports.run_history import RunHistory


def test_a_history_starts_empty_and_keeps_every_run_in_order(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    first = RunHistory(path)
    assert first.runs == [] and not path.exists()  # reading writes nothing
    first.append({"started": "run-1"})
    assert RunHistory(path).runs == [{"started": "run-1"}]
    second = RunHistory(path)
    second.append({"started": "run-2", "cells": []})
    assert second.runs == [{"started": "run-1"}, {"started": "run-2", "cells": []}]
    assert json.loads(path.read_text()) == second.runs


def test_a_history_written_before_is_read_and_written_back_in_its_format(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    earlier = [{"started": "run-1", "summary": {"score": None}}]
    path.write_text(json.dumps(earlier, indent=2))
    history = RunHistory(path)
    assert history.runs == earlier
    history.append({"started": "run-2", "summary": {"score": 1.0}})
    assert path.read_text() == json.dumps([*earlier, {"started": "run-2", "summary": {"score": 1.0}}], indent=2)
