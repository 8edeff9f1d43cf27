"""Figures across runs: one JSON line per run in the output directory's history file (its figures
as key -> value), and the regression flags of a run against the median of the runs before it."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.perf.figures import FIGURES

HISTORY = "perf-history.jsonl"


def load(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / HISTORY
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append(out_dir: Path, run: dict[str, Any]) -> None:
    with open(out_dir / HISTORY, "a") as f:
        f.write(json.dumps(run) + "\n")


@dataclass(frozen=True)
class Comparison:
    key: str
    value: float | None
    baseline: float | None  # median of the previous runs that have the figure
    baseline_range: tuple[float, float] | None  # their lowest and highest: how far the figure swings anyway
    runs: int  # how many previous runs the baseline is from
    change: float | None  # relative, signed so that positive is worse
    regressed: bool


def compare(current: dict[str, float | None], previous: list[dict[str, Any]], window: int, threshold: float) -> list[Comparison]:
    """Each figure against the median of its last `window` earlier values, with their range; worse by
    more than `threshold` (relative) than the median is a regression."""
    out = []
    for figure in FIGURES:
        earlier = [r["figures"][figure.key] for r in previous if r["figures"].get(figure.key) is not None][-window:]
        value = current.get(figure.key)
        baseline = statistics.median(earlier) if earlier else None
        change = None
        if value is not None and baseline:
            change = (value - baseline) / baseline * (1 if figure.lower_is_better else -1)
        out.append(
            Comparison(
                figure.key,
                value,
                baseline,
                (min(earlier), max(earlier)) if earlier else None,
                len(earlier),
                change,
                change is not None and change > threshold,
            )
        )
    return out
