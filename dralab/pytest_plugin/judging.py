"""Each phase's verdict (docs/verdicts.md, decided by dralab.verdicts.classify) onto the test's
properties and report, with its evidence: what the check recorded (the `evidence` fixture), the
driver's side, what the suites know (the hook pytest_dralab_fail_attachments), and what the
components logged while the test ran (LAB-07)."""

from __future__ import annotations

from pathlib import Path
from typing import Generator, Iterator

import pytest

from basics.errors import LabBroken, NotSupported
from basics.junit_properties import BLOCKED_BY, DIAGNOSIS, EVIDENCE, OBSERVED, VERDICT, WARNING, Verdict
from clusters.providers import Lab
from dralab import verdicts
from dralab.pytest_plugin import fixture_values, lab_health, labs
from dralab.pytest_plugin.selection import requirement_ids
from drivers_under_test import evidence as driver_evidence
from suites import catalogue
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.verdicts import Blocked

LOG_ATTACH_LIMIT = 3000  # characters per component log attached to a failing test


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from dralab.pytest_plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


_evidence = pytest.StashKey[Evidence]()


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    request.node.stash[_evidence] = Evidence()
    return request.node.stash[_evidence]


_log_marks = pytest.StashKey[dict[Path, int]]()
_labs_used = pytest.StashKey[dict[int, Lab]]()


def _labs_of(item: pytest.Item) -> list[Lab]:
    """The labs a test uses: those among the fixtures it has set up, also once they are torn down
    (the run's last teardown tears the session lab down before its verdict is reached)."""
    used = item.stash.setdefault(_labs_used, {})
    for lab in labs.set_up_for(item):
        used.setdefault(id(lab), lab)
    return list(used.values())


def _component_logs(item: pytest.Item) -> dict[Path, str]:
    """The component logs of the labs a test uses, each with a label naming lab and component."""
    return {
        path: f"{path.relative_to(lab.log_dir)} (lab {lab.log_dir.parent.name})"
        for lab in _labs_of(item)
        for path in sorted(lab.log_dir.rglob("*.log"))
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    item.stash[_log_marks] = {p: p.stat().st_size for p in _component_logs(item)}
    yield


def _component_log_sections(item: pytest.Item) -> list[tuple[str, str]]:
    marks, found = item.stash.get(_log_marks, {}), []
    for path, label in _component_logs(item).items():
        try:
            with open(path, "rb") as f:
                f.seek(marks.get(path, 0))
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        if text.strip():
            if len(text) > LOG_ATTACH_LIMIT:
                text = "[...]\n" + text[-LOG_ATTACH_LIMIT:]
            found.append((f"component log {label} during the test", text))
    return found


def _requirements(item: pytest.Item) -> list[catalogue.Requirement]:
    return [r for r in map(catalogue.get, requirement_ids(item)) if r is not None]


def _levels(item: pytest.Item) -> list[str]:
    return [r.level.value for r in _requirements(item)]


def driver_musts(item: pytest.Item) -> list[str]:
    return [r.id for r in _requirements(item) if r.checks is catalogue.Checks.DRIVER and r.level is catalogue.Level.MUST]


def scenario_blocked(item: pytest.Item, error: BaseException) -> Blocked | None:
    """For a test whose fixture the driver failed (its scenario could not be set up): None when
    the failure is this test's FAIL, else what blocks it. The FAIL goes to the first driver MUST
    test sharing the failed fixture (module or session scope: pytest hands each of its tests the
    same error); the other tests of that fixture, MUSTs, SHOULDs and cluster checks alike, are
    BLOCKED by it. A failed fixture no driver MUST shares blocks all but a driver MUST's own test."""
    failed = fixture_values.raised(item, error)
    shared = [failed[0]] if failed is not None and failed[1] != "function" else []
    owner = next(
        (
            other
            for other in item.session.items
            if driver_musts(other) and any(name in getattr(other, "fixturenames", ()) for name in shared)
        ),
        None,
    )
    said = str(error).splitlines()[0] if str(error) else type(error).__name__
    if owner is not None and owner is not item:
        by = driver_musts(owner)[0]
        return Blocked(
            by, f"the driver failed the scenario this check shares with {by} (fixture {', '.join(shared)}; {owner.nodeid}): {said}"
        )
    if owner is item or driver_musts(item):
        return None
    return Blocked("the driver's scenario", f"the driver failed fixture {failed[0] if failed else '?'}, which this check needs: {said}")


def _skipped(item: pytest.Item, report: pytest.TestReport, why: BaseException) -> None:
    report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1] or 0, f"Skipped: {why}")


def _blocked(item: pytest.Item, report: pytest.TestReport, blocked: Blocked) -> None:
    _skipped(item, report, blocked)
    item.user_properties += [(VERDICT, Verdict.BLOCKED.value), (BLOCKED_BY, blocked.by)]


def _drivers_evidence(item: pytest.Item, lab: Lab) -> list[tuple[str, str]]:
    """The driver's pods, logs and events, and the test's claims, pods and events."""
    args = fixture_values.of(item)
    drivers = {d.profile.name: d.profile for d in args.values() if isinstance(d, DriverUnderTest)}
    namespaces = {v for k, v in args.items() if isinstance(v, str) and k.endswith("namespace")}
    namespaces |= {v.namespace for v in args.values() if isinstance(getattr(v, "namespace", None), str)}
    if not drivers and not namespaces:
        return []
    found: list[tuple[str, str]] = []
    try:
        api = lab.api()
        for profile in drivers.values():
            found += driver_evidence.of_driver(lab, api, profile)
        for ns in sorted(namespaces):
            found += driver_evidence.of_namespace(api, ns)
    except Exception as e:  # evidence is best effort: the verdict stands without it
        found.append(("driver evidence could not be collected", f"{type(e).__name__}: {e}"))
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    try:
        _judge(item, call, report)
    finally:
        # The report copied the test's properties before they got this phase's verdict; the JUnit
        # XML writes them from the teardown's report.
        report.user_properties = list(item.user_properties)
    return report


def _judge(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """This phase's verdict (docs/verdicts.md) with its evidence, onto the test's properties
    and its report."""
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, Blocked):  # kept from running by an earlier FAIL
        _blocked(item, report, error)
        return
    if isinstance(error, NotSupported):  # not applicable here
        _skipped(item, report, error)
        return
    evidence = item.stash.get(_evidence, Evidence())
    if report.when == "call":
        item.user_properties.extend((OBSERVED, f"{label}: {text}") for label, text in evidence.observed)
        item.user_properties.extend((WARNING, w) for w in evidence.warnings)
        if report.passed and evidence.warnings:
            item.user_properties.append((VERDICT, Verdict.WARNING.value))
    if not report.failed or error is None:
        return
    used = _labs_of(item)
    problems = lab_health.lab_problems(item, used)
    verdict = verdicts.classify(report.when, error, problems, _levels(item))
    if isinstance(error, LabBroken):
        for lab in used:
            lab_health.record_fault(item.config, lab, str(error).splitlines()[0], item.nodeid)
    if report.when == "setup" and verdict.verdict in (Verdict.FAIL, Verdict.WARNING):
        blocked = scenario_blocked(item, error)
        if blocked is not None:
            _blocked(item, report, blocked)
            return
    item.user_properties.append((VERDICT, verdict.verdict.value))  # a str: pytest-xdist cannot send an enum
    attached = [(f"evidence: {label}", text) for label, text in evidence.items]
    if verdict.verdict == Verdict.ERROR:
        item.user_properties.append((DIAGNOSIS, verdict.why))
        attached.insert(0, ("lab diagnosis", verdict.why))
    elif used:  # the driver is at fault: its side of the story
        attached += [(f"evidence: {label}", text) for label, text in _drivers_evidence(item, used[0])]
    if verdict.verdict == Verdict.FAIL:  # what the suites know that reproduces it
        attached += [
            section for sections in item.config.hook.pytest_dralab_fail_attachments(item=item, message=str(error)) for section in sections
        ]
    if verdict.verdict == Verdict.WARNING:
        report.outcome, report.longrepr = "passed", None
        item.user_properties.append((WARNING, str(error).splitlines()[0] if str(error) else type(error).__name__))
    attached += _component_log_sections(item)
    report.sections.extend(attached)
    item.user_properties.extend((EVIDENCE, f"{title}\n{text}") for title, text in attached)
