"""Open an HTML file in headless Chromium (Debian's chromium, installed by `dralab provision`):
a screenshot, and the DOM as the browser built it. What the report tests look at."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# --no-sandbox: Chromium refuses to run as root with its sandbox; the page is our own report.
# The virtual time budget lets the page's scripts finish before the screenshot.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000")


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed: run `dralab provision` (it installs Debian's chromium)")
    return path


def _run(*args: str) -> str:
    done = subprocess.run([chromium(), *FLAGS, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 2400) -> Path:
    _run(f"--screenshot={png}", f"--window-size={width},{height}", page.resolve().as_uri())
    assert png.exists() and png.stat().st_size > 0, f"chromium wrote no screenshot of {page}"
    return png


def dom(page: Path) -> str:
    return _run("--dump-dom", page.resolve().as_uri())
