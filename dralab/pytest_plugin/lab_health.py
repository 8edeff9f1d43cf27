"""A test's labs watched while it runs: its waits end once a component of them dies and stretch by
their pace, and a lab's first lasting fault (a dead component, a LabBroken) is recorded for the
rest of the run, so that no later check on it can FAIL the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from clusters import pace
from basics.errors import LabBroken
from clusters.health import dead_components, diagnose
from clusters.providers import Lab
from dralab.pytest_plugin import labs
from suites.framework import waits

# Per lab (by its log dir), the first lasting fault of the run: a component that died, or a
# LabBroken. A check failing on that lab later cannot be laid on the driver, even once the
# component is back (a restart test starts it again): its failure is an ERROR.
_lab_faults = pytest.StashKey[dict[Path, str]]()


def record_fault(config: pytest.Config, lab: Lab, fault: str, test: str) -> None:
    config.stash.setdefault(_lab_faults, {}).setdefault(lab.log_dir, f"{fault} (seen during {test})")


def lab_problems(item: pytest.Item, of: list[Lab]) -> list[str]:
    """What is wrong with the test's labs `of` now, and the faults they had earlier in the run."""
    problems, faults = [], item.config.stash.get(_lab_faults, {})
    for lab in of:
        now = diagnose(lab)
        problems += now
        if lab.log_dir in faults and not any(faults[lab.log_dir].startswith(p) for p in now):
            problems.append(
                f"lab {lab.log_dir.parent.name} had a fault earlier in the run, which may have left it broken: {faults[lab.log_dir]}"
            )
    return problems


def _dead(item: pytest.Item) -> list[str]:
    """The dead components of the labs the test has set up so far, each recorded as a fault."""
    found = []
    for lab in labs.set_up_for(item):
        for part in dead_components(lab):
            record_fault(item.config, lab, part, item.nodeid)
            found.append(part)
    return found


_gauges = pytest.StashKey[dict[Path, pace.Gauge]]()


def _pace(item: pytest.Item, fresh: bool) -> pace.Pace | None:
    """The pace of the slowest lab the test has set up so far, each lab measured by its own gauge."""
    gauges, of = item.config.stash.setdefault(_gauges, {}), labs.set_up_for(item)
    for lab in of:
        if lab.log_dir not in gauges:
            gauges[lab.log_dir] = pace.Gauge(lab.api, [n.name for n in lab.nodes])
    return pace.slowest([gauges[lab.log_dir](fresh) for lab in of])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Waits of the test, its fixtures included, end once a component of a lab it has died, and
    stretch by the pace of its labs; a component found dead before or after it is a fault of its lab
    for the rest of the run."""
    _dead(item)
    with waits.watching(waits.LabWatch(down=lambda: _dead(item), pace=lambda fresh: _pace(item, fresh))):
        yield
    _dead(item)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test on a lab that has had a fault ends at once, an ERROR: whatever it found there could
    not be laid on the driver, and waiting on the broken lab would only make the run longer. Not
    tryfirst, so that a test that does not apply SKIPs first; still ahead of pytest's runner, which
    sets up the test's fixtures: hooks run latest registered first, and pytest's own are registered first."""
    faults = item.config.stash.get(_lab_faults, {})
    for lab in labs.set_up_for(item):
        if lab.log_dir in faults:
            raise LabBroken(
                f"lab {lab.log_dir.parent.name} had a fault earlier in the run, so no check can reach a "
                f"verdict on it: {faults[lab.log_dir]}"
            )
