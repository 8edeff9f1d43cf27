"""Open an HTML file in headless Chromium (Debian's chromium, installed by `dralab provision`):
a screenshot, the DOM as the browser built it, and how wide the page lays out. What the report
tests look at."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

# --no-sandbox: Chromium refuses to run as root with its sandbox; the page is our own report.
# The virtual time budget lets the page's scripts finish before the screenshot.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000")
# Appended to a copy of the page: once laid out, how wide the document is and the outermost
# elements reaching past the window's right edge (what a reader would scroll sideways for).
_MEASURE = """<script>addEventListener("load", () => {
  const wide = [...document.body.querySelectorAll("*")].filter(e => e.getBoundingClientRect().right > innerWidth);
  const out = document.createElement("output");
  out.id = "layout";
  const {scrollWidth, scrollHeight} = document.documentElement;
  out.textContent = JSON.stringify({scrollWidth, scrollHeight, innerWidth,
    wide: wide.filter(e => !wide.includes(e.parentElement)).slice(0, 10)
      .map(e => `${e.tagName} ${Math.round(e.getBoundingClientRect().right)}px: ${e.textContent.slice(0, 100)}`)});
  document.body.append(out);
});</script>"""


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


def dom(page: Path, width: int = 1400, height: int = 2400) -> str:
    return _run("--dump-dom", f"--window-size={width},{height}", page.resolve().as_uri())


def layout(page: Path, width: int = 1400) -> dict[str, Any]:
    """How `page` lays out in a window `width` pixels wide: {scrollWidth, scrollHeight, innerWidth,
    wide: the outermost elements past the right edge}. Measured on a copy beside it, so relative
    links resolve."""
    probe = page.with_name(f"{page.stem}.layout.html")
    probe.write_text(page.read_text() + _MEASURE)  # after </html> the parser still puts it in the body
    found = re.search(r'<output id="layout">(.*?)</output>', dom(probe, width), re.S)
    assert found, f"the layout probe did not run in {probe}"
    return json.loads(html.unescape(found.group(1)))
