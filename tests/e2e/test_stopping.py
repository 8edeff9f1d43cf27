"""Every command that starts labs tears them down on SIGTERM (what a cancelled CI job or a
`timeout` sends, to the command alone) as on Ctrl-C (LAB-05): `dralab perf --only PF-02` once left
its whole lab running (143 residue items)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters import residue
from clusters.lab_configurations import PERF
from reports import certify, selfcheck
from reports.certify import lab_names

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
# Printed once a lab is up and the driver goes onto it: the signal then finds a lab to tear down.
LAB_IS_UP = re.compile(r"deploying driver", re.IGNORECASE)

# Each command, and the labs it may start (other labs, the test session's own, are up meanwhile).
COMMANDS = {
    "certify": (["certify", "--driver", "gpu", "--only", "MD-01"], lab_names(certify.LAB_PREFIX)),
    "perf": (["perf", "--only", "PF-02", "--startup-rounds", "1"], [PERF.name]),
    "selfcheck": (["selfcheck", "--only", "MD-01"], lab_names(selfcheck.LAB_PREFIX)),
}


@pytest.mark.requirement("LAB-05")
@pytest.mark.parametrize("command", list(COMMANDS))
def test_sigterm_tears_down_every_lab_the_command_started(command: str, tmp_path: Path) -> None:
    args, labs = COMMANDS[command]
    log = tmp_path / f"{command}.log"
    with open(log, "w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "dralab.cli", *args, "--out", str(tmp_path / "out")],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
        )
    deadline = time.monotonic() + 300
    while not LAB_IS_UP.search(log.read_text()):
        assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    time.sleep(3)
    run.send_signal(signal.SIGTERM)  # to the command alone, not its process group
    returncode = run.wait(timeout=300)
    output = log.read_text()
    assert returncode in (130, 143), f"exit {returncode}:\n{output[-3000:]}"
    left = [r for lab in labs for r in residue.find(lab)]
    assert left == [], f"left behind after SIGTERM: {left[:20]}\n{output[-3000:]}"
