"""Public DRA drivers dralab would ship a profile of, but whose Go module the proxy refuses
(candidates.yaml): each `dralab matrix` asks again and shows the answer beside the matrix."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from basics.errors import BadInput, LabBroken
from basics.yaml_profiles import load_yaml, validated
from clusters.provision import gobuild

CANDIDATES = Path(__file__).parent / "candidates.yaml"


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    what: str
    version: str = "latest"  # the version to ask for: `latest` unless an older one is served but of no use


def candidates() -> list[Candidate]:
    entries = load_yaml(CANDIDATES, "candidate drivers")
    if not isinstance(entries, list):
        raise BadInput(f"candidate drivers {CANDIDATES}: expected a list of {{module, what}}")
    return [validated(Candidate, entry, CANDIDATES, "candidate driver") for entry in entries]


def probe(candidate: Candidate) -> str:
    """The proxy's answer for the candidate's module today: the version it serves, or its refusal."""
    try:
        info = gobuild.download(candidate.module, candidate.version)
    except LabBroken as e:
        return f"refused: {str(e).split(': ', 1)[-1]}"
    return f"served: {info.get('Version', candidate.version)}; a profile can build it now"


def probed() -> dict[str, dict[str, str]]:
    """module -> what it is and the proxy's answer, for the matrix."""
    return {c.module: {"what": c.what, "asked": c.version, "answer": probe(c)} for c in candidates()}
