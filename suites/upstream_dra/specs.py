"""The suite's specs as its own dry run lists them, with the labels upstream's framework gives them
(FeatureGate:<gate>, Feature:OffByDefault, Serial, Slow, KubeletMinVersion:<v>, ...)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from basics.errors import LabBroken

# Every spec of the package carries it (framework.WithLabel("DRA")); selecting by it also lifts
# the framework's default skip of [Feature:...] specs.
DRA_LABEL = "DRA"


@dataclass(frozen=True)
class Spec:
    name: str  # the full text, as ginkgo and its JUnit report name it
    labels: frozenset[str]
    location: str

    def gates(self) -> set[str]:
        return {label.split(":", 1)[1] for label in self.labels if label.startswith("FeatureGate:")}


def spec_name(report: dict) -> str:
    return " ".join([*(report.get("ContainerHierarchyTexts") or []), report["LeafNodeText"]])


def spec_labels(report: dict) -> frozenset[str]:
    return frozenset(label for labels in report.get("ContainerHierarchyLabels") or [] for label in labels or []) | frozenset(
        report.get("LeafNodeLabels") or []
    )


def spec_location(report: dict) -> str:
    loc = report.get("LeafNodeLocation") or {}
    return f"{loc.get('FileName', '?')}:{loc.get('LineNumber', '?')}"


def specs_of(json_report: Path) -> list[dict]:
    """The It nodes of a ginkgo JSON report (suite set-up nodes are reported too)."""
    return [s for suite in json.loads(json_report.read_text()) for s in suite.get("SpecReports") or [] if s.get("LeafNodeType") == "It"]


def list_specs(test_binary: Path) -> list[Spec]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "dry-run.json"
        out = subprocess.run(
            [
                str(test_binary),
                "--ginkgo.dry-run",
                f"--ginkgo.label-filter={DRA_LABEL}",
                f"--ginkgo.json-report={report}",
                "--ginkgo.no-color",
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        if not report.exists():
            raise LabBroken(f"listing the specs of {test_binary} failed (exit {out.returncode}): {out.stdout[-2000:]}")
        found = [Spec(spec_name(s), spec_labels(s), spec_location(s)) for s in specs_of(report)]
    if not found:
        raise LabBroken(f"{test_binary} lists no spec labelled {DRA_LABEL}")
    return found
