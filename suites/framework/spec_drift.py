"""Spec drift (RP-02): where shipped Kubernetes differs from the KEP text, the check follows
shipped behaviour and records what the KEP promised next to what this cluster did. Records
travel with the test's report (JUnit properties) to the certification report."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import cast

import pytest

PROPERTY = "spec_drift"


@dataclass(frozen=True)
class Drift:
    kep: str  # e.g. "KEP-5304"
    topic: str  # short name of the divergence, e.g. "container path"
    promised: str  # what the KEP text says
    observed: str  # what this cluster did


def record(request: pytest.FixtureRequest, drift: Drift) -> None:
    request.node.user_properties.append((PROPERTY, json.dumps(asdict(drift))))


def recorded(report: pytest.TestReport) -> list[Drift]:
    return [Drift(**json.loads(cast(str, v))) for k, v in report.user_properties if k == PROPERTY]  # record() wrote a str
