"""`--progress`: a line per finished test and a header per suite, with the run's elapsed time,
instead of pytest's dots; and notes in between (a lab starting, a driver deployed)."""

from __future__ import annotations

import time
from typing import cast

import pytest

from basics.junit_properties import REQUIREMENT, Verdict, final_verdict

PLUGIN_NAME = "dralab-progress"


def progress_note(config: pytest.Config, text: str) -> None:
    """A line among the --progress lines (a lab starting, a driver deployed); nothing without it."""
    progress = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if progress is not None:
        progress.note(text)


class Progress:
    """One line per finished test, a header per suite: what runs and how long the run has taken;
    each line starts with `shard` (K/N) where runs side by side share the terminal."""

    def __init__(self, config: pytest.Config, shard: str = "") -> None:
        self.config, self.start, self.suite, self.shard = config, time.monotonic(), "", shard
        self.outcomes: dict[str, str] = {}

    def _print(self, line: str) -> None:
        from basics.progress import console

        capture = self.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            console.print(line, highlight=False, markup=False)

    def note(self, text: str) -> None:
        self._print(f"[{self._stamp()}] {'':7} {text}")

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        suite = nodeid.split("::")[0].rsplit("/", 1)[0]
        if suite != self.suite:
            self.suite = suite
            self._print(f"[{self._stamp()}] == {suite}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.outcomes.setdefault(
                report.nodeid,
                Verdict.PASS
                if report.passed
                else Verdict.SKIP
                if report.skipped
                else Verdict.FAIL
                if report.when == "call"
                else Verdict.ERROR,
            )
        if report.when == "teardown":  # its report carries every property the test recorded
            properties = cast(list[tuple[str, str]], report.user_properties)  # pytest's are objects; the plugin records strings
            verdict = final_verdict(self.outcomes.pop(report.nodeid, Verdict.PASS), properties)
            ids = ",".join(v for k, v in properties if k == REQUIREMENT)
            path, _, test = report.nodeid.partition("::")  # a test's parameters may hold paths too
            self._print(f"[{self._stamp()}] {verdict:7} {ids:8} {path.rsplit('/', 1)[-1]}::{test}")

    def _stamp(self) -> str:
        """The run's elapsed time, then its shard where there is one: what opens each line."""
        minutes, seconds = divmod(int(time.monotonic() - self.start), 60)
        return f"{minutes:3d}:{seconds:02d}" + (f" {self.shard}" if self.shard else "")
