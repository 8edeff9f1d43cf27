"""What containerd said against NRI plugins during the run, for a check over the run's containers
that failed: a hook containerd cut off leaves a pod without its changes (a VF not moved in, no
networkData written), and only containerd's log says so."""

from __future__ import annotations

from clusters import nri_log
from clusters.providers import Lab
from suites.framework.evidence import Evidence

SHOWN = 20  # lines: the last ones, nearest the failure


def explain(lab: Lab, evidence: Evidence) -> str:
    """Attach containerd's NRI lines of the run to `evidence`; when it closed a plugin, the words a
    failure's message ends with (empty otherwise)."""
    lines = lab.nri_errors()
    if not lines:
        return ""
    evidence.add("containerd's errors about NRI plugins during the run", lines[-SHOWN:])
    if not nri_log.closed(lines):
        return ""
    return (
        "\ncontainerd closed an NRI plugin during the run (see its errors in the evidence): it does when a "
        "plugin's hook fails or passes containerd's plugin_request_timeout (2 s unless configured), and the pod "
        "whose sandbox was starting runs without that hook's changes. If the hook is slow only on a loaded "
        "machine, rerun with nothing else running on it."
    )
