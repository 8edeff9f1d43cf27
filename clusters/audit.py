"""The local lab's API server audit log, kept for writes to ResourceClaim status alone: every
status write a driver made, with its body and the server's answer. It is how a refused write
is told apart: refused for what the driver sent (its fault), or for a field it did not send (the
cluster's, as v1.35-v1.37 refuse a status apply on a claim whose opaque parameters were not sent
canonically: ST-09)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_NAME = "kube-apiserver-audit.log"
# Request level (the body with the answer) for claim status writes; nothing else is logged.
POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [update, patch]
  resources:
  - group: resource.k8s.io
    resources: [resourceclaims/status]
- level: None
"""


def apiserver_flags(lab_dir: Path, log_dir: Path) -> list[str]:
    """The API server's audit flags, with the policy written into `lab_dir`."""
    policy = lab_dir / "audit-policy.yaml"
    policy.write_text(POLICY)
    return [f"--audit-policy-file={policy}", f"--audit-log-path={log_dir / LOG_NAME}", "--audit-log-format=json", "--audit-log-maxbackup=0"]


@dataclass(frozen=True)
class StatusWrite:
    """One write to a claim's status subresource as the API server answered it."""

    time: str
    user: str
    verb: str  # update, or patch (server-side apply is a patch)
    namespace: str
    claim: str
    code: int
    message: str  # the server's answer when it refused
    body: dict[str, Any] | None  # what the writer sent (a patch or apply: only the fields it sets)

    @property
    def refused(self) -> bool:
        return self.code >= 400

    def refused_for_unsent(self, status_fields: tuple[str, ...] = ("allocation", "reservedFor")) -> list[str]:
        """The status fields a refused patch or apply was refused for without naming them in its
        body: the server saw them changed by its own handling of the write (an update sends
        every field, so its refusal stays the writer's)."""
        if not self.refused or self.verb != "patch":
            return []
        sent = (self.body or {}).get("status") or {}
        return [f for f in status_fields if f"status.{f}" in self.message and f not in sent]


def status_writes(log: Path) -> list[StatusWrite]:
    """Every claim status write the log holds, oldest first; none if there is no log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:  # a line the API server is still writing
            continue
        ref, answer = event.get("objectRef") or {}, event.get("responseStatus") or {}
        if ref.get("resource") != "resourceclaims" or ref.get("subresource") != "status":
            continue
        out.append(
            StatusWrite(
                time=event.get("stageTimestamp", ""),
                user=(event.get("user") or {}).get("username", ""),
                verb=event.get("verb", ""),
                namespace=ref.get("namespace", ""),
                claim=ref.get("name", ""),
                code=int(answer.get("code") or 0),
                message=answer.get("message", ""),
                body=event.get("requestObject"),
            )
        )
    return out
