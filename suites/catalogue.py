"""The requirement catalogue as data: each ID's text, level, source, which driver capability it
needs and what its verdict is about. Reports show these next to every verdict, and certification
counts only the driver's MUSTs, so they live in one file (catalogue.yaml, shipped with the
package) that this module validates once and hands out typed."""

from __future__ import annotations

import functools
import re
from typing import Callable
from enum import Enum
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, field_validator

from drivers_under_test.profile import Capability

CATALOGUE = Path(__file__).with_name("catalogue.yaml")
# Besides a profile's capabilities: any DRA driver, and every driver profile whatever it claims.
APPLIES = frozenset({c.value for c in Capability} | {"dra", "any"})
# An upstream issue as the catalogue names it: owner/repository#number on GitHub.
UPSTREAM_ISSUE = re.compile(r"[\w.-]+/[\w.-]+#\d+")


class Level(str, Enum):
    MUST = "MUST"
    SHOULD = "SHOULD"  # unmet: a WARNING, never a FAIL
    MAY = "MAY"


class Checks(str, Enum):
    """What a PASS or FAIL of the ID is about."""

    DRIVER = "driver"  # the driver under test: counts towards its certification
    CLUSTER = "cluster"  # the API server, scheduler or kubelet: reported apart, never the driver's PASS
    LAB = "lab"  # dralab's own lab and emulated hardware
    HARNESS = "harness"  # dralab itself: reports, self-checks, performance figures


class Requirement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str
    level: Level
    source: str
    applies: str | None
    checks: Checks
    # A driver MUST that no variant of the reference drivers breaks (MUT-01): why none can.
    no_broken_variant: str | None = None
    # What a driver that fails the ID has to fix, in a line: the report shows it under each FAIL.
    remedy: str | None = None
    # For a driver-checked ID, the observable predicate its checks evaluate today: what is computed
    # as expected (from which objects), what observed record is compared with it, how, over which
    # subjects (a fixed scenario's objects, or every pod, claim or call of the run).
    oracle: str | None = None
    # Where those checks judge less than the text says, one concrete sentence each.
    gaps: tuple[str, ...] = ()
    # The upstream issue about the ID's behaviour, where the source names one.
    upstream_issue: str | None = None
    # The Kubernetes minor version the ID's behaviour shipped in (v1.37), and the feature gates it
    # exists under: on an older version, or one whose components lack a gate, the ID does not apply
    # and its tests SKIP saying so.
    since: str | None = None
    gates: tuple[str, ...] = ()

    @field_validator("applies")
    @classmethod
    def _known_capability(cls, value: str | None) -> str | None:
        if value is not None and value not in APPLIES:
            raise ValueError(f"{value!r} is none of {', '.join(sorted(APPLIES))}")
        return value

    @field_validator("gaps")
    @classmethod
    def _gaps_are_sentences(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not isinstance(g, str) or not g.strip() for g in value):
            raise ValueError("every gap is a non-empty sentence")
        return value

    @field_validator("since")
    @classmethod
    def _minor_version(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"v1\.\d+", value):
            raise ValueError(f"{value!r} is not a Kubernetes minor version (v1.37)")
        return value

    @field_validator("upstream_issue")
    @classmethod
    def _github_issue(cls, value: str | None) -> str | None:
        if value is not None and not UPSTREAM_ISSUE.fullmatch(value):
            raise ValueError(f"{value!r} is not owner/repository#number")
        return value


@functools.cache
def load() -> dict[str, Requirement]:
    """Every requirement by ID, in the catalogue's order."""
    raw = yaml.safe_load(CATALOGUE.read_text())
    return {rid: Requirement(id=rid, **fields) for rid, fields in raw.items()}


# Requirement ID prefix -> the KEP or API it checks (the allure feature, the report's suite lines).
FAMILIES = {
    "LAB": "Lab",
    "DEP": "Coming up",
    "KP": "The kubelet-plugin contract",
    "HW": "Emulated hardware",
    "MD": "KEP-5304 device metadata",
    "ST": "KEP-4817 device status",
    "DA": "KEP-6080 derived attributes",
    "DP": "Device plugin API",
    "MUT": "Broken driver variants (self-checks)",
    "RP": "Reports",
    "PF": "Performance",
}


def family(id: str) -> str:
    return FAMILIES.get(id.split("-")[0], "other")


def get(id: str) -> Requirement | None:
    return load().get(id)


def issue_url(upstream_issue: str) -> str:
    """The web page of an `upstream_issue` (owner/repository#number, as validated)."""
    repo, number = upstream_issue.split("#")
    return f"https://github.com/{repo}/issues/{number}"


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def not_applicable(ids: list[str], version: str, known_gates: Callable[[], set[str]]) -> list[str]:
    """Why each of `ids` that does not apply on Kubernetes `version` does not: it shipped later, or
    the version's components lack a gate it needs (`known_gates`, asked only when a gate is)."""
    reasons = []
    for req in (r for rid in ids if (r := get(rid)) is not None):
        if req.since is not None and _minor(version) < _minor(req.since):
            gates = f" (feature gate {', '.join(req.gates)})" if req.gates else ""
            reasons.append(f"{req.id} applies from Kubernetes {req.since}{gates}; this lab runs {version}")
            continue
        reasons += [
            f"{req.id} needs the feature gate {gate}, which Kubernetes {version} does not have"
            for gate in req.gates
            if gate not in known_gates()
        ]
    return reasons


def certifiable(capabilities: list[str], dra: bool) -> list[str]:
    """The driver requirements (coming up aside) a profile claiming `capabilities` can be
    certified on; `dra`: it names DRA drivers. Empty: nothing to certify."""
    claimed = set(capabilities) | ({"dra"} if dra else set())
    return [r.id for r in load().values() if r.checks is Checks.DRIVER and r.applies in claimed]
