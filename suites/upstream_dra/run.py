"""Running the suite with ginkgo against a cluster, and each spec's outcome from its JSON report."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from basics.errors import LabBroken, log_tail
from basics.progress import step
from suites.upstream_dra.plan import Plan
from suites.upstream_dra.specs import DRA_LABEL, spec_location, spec_name, specs_of

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass
class Outcome:
    name: str
    state: str  # PASSED, FAILED or SKIPPED
    seconds: float
    location: str
    message: str = ""  # a failure's message and where it failed; a SKIP's reason


def outcome_of(report: dict, planned_skips: dict[str, str], unselected: str = "skipped by the suite") -> Outcome:
    name = spec_name(report)
    state, failure = report.get("State", ""), report.get("Failure") or {}
    message = failure.get("Message", "").strip()
    if state == "skipped" and not message:
        message = planned_skips.get(name, unselected)
    elif state not in (PASSED, SKIPPED):  # failed, panicked, timedout, interrupted, aborted
        where = failure.get("Location") or {}
        message = f"[{state}] {message}\nat {where.get('FileName', '?')}:{where.get('LineNumber', '?')}".strip()
        state = FAILED
    return Outcome(name, state, report.get("RunTime", 0) / 1e9, spec_location(report), message)


def progress(log: Path) -> str:
    """How far ginkgo's succinct output says the run is: a • or S per finished spec on its progress
    lines, a "• [SLOW TEST]" block per slow one, a "• [FAILED]" (PANICKED, TIMEDOUT...) per failed one."""
    text = log.read_text(errors="replace") if log.exists() else ""
    marks = "".join(line for line in text.splitlines() if line and set(line) <= {"•", "S"})
    blocks = re.findall(r"^• \[([A-Z ]+)\]", text, re.MULTILINE)
    failed = sum(b != "SLOW TEST" for b in blocks)
    return f"{marks.count('•') + len(blocks)} specs ran ({failed} failed), {marks.count('S')} skipped"


def _stop(proc: subprocess.Popen, grace_seconds: float) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):  # the group, also what outlived ginkgo
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run(
    ginkgo: Path,
    test_binary: Path,
    kubeconfig: Path,
    plan: Plan,
    out_dir: Path,
    *,
    procs: int,
    kubelet_root_dir: str,
    focus: str | None = None,
    timeout_minutes: int = 90,
) -> list[Outcome]:
    """Run every DRA spec but the plan's SKIPs, `procs` at once (Serial specs alone, as ginkgo
    does), and return each spec's outcome; the run's output goes to out_dir/ginkgo.log."""
    out_dir.mkdir(parents=True, exist_ok=True)
    log, report = out_dir / "ginkgo.log", out_dir / "ginkgo-report.json"
    report.unlink(missing_ok=True)
    cmd = [
        str(ginkgo),
        f"--procs={procs}",
        f"--label-filter={DRA_LABEL}",
        "--no-color",
        "--timeout",
        f"{timeout_minutes}m",
        f"--output-dir={out_dir}",
        "--json-report=ginkgo-report.json",
        "--junit-report=junit.xml",
    ]
    if (skip := plan.skip_regex()) is not None:
        cmd.append(f"--skip={skip}")
    if focus:
        cmd.append(f"--focus={focus}")
    # The test driver's pods mount the kubelet's plugin dirs from the node by this path.
    cmd += [str(test_binary), "--", f"--kubeconfig={kubeconfig}", f"--report-dir={out_dir}", f"--kubelet-root-dir={kubelet_root_dir}"]
    with open(log, "wb") as out, step(f"Running the upstream DRA suite, {procs} specs at a time (log: {log})", lambda: progress(log)):
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        # Its own process group: an interrupt of ours reaches ginkgo and every e2e.test process it started.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=out_dir, start_new_session=True)
        try:
            proc.wait()
        finally:  # Ctrl-C or SIGTERM: ginkgo's interrupt lets specs clean up their namespaces, then it must end
            if proc.poll() is None:
                _stop(proc, grace_seconds=60)
    if not report.exists():
        raise LabBroken(f"ginkgo ended (exit {proc.returncode}) without a report; log: {log}\n{log_tail(log)}")
    unselected = f"not selected: its name does not match --focus {focus!r}" if focus else "skipped by the suite"
    return [outcome_of(s, plan.skips, unselected) for s in specs_of(report)]
