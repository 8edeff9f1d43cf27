"""The look dralab's HTML reports share (certification, matrix, selfcheck, mutants, qualification,
performance), so that one reads them all alike: a base stylesheet, and the verdicts' colours for
the pages that colour verdicts. Each page adds its own rules after them, which win where they differ."""

from __future__ import annotations

import html

BASE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.3em;text-align:left;vertical-align:top}"
)
# A verdict's background (the class is its name); an outcome's (its name, hyphens for spaces) is
# that of the verdict it stands for.
VERDICTS = (
    ".PASS,.CERTIFIED{background:#dfd}.FAIL,.NOT-CERTIFIED{background:#fdd}.ERROR,.INCOMPLETE{background:#fcb}"
    ".BLOCKED{background:#edc}.WARNING{background:#ffc}.SKIP{background:#eee}"
)


def head(title: str, style: str) -> str:
    """A page up to its body tag: `title` (text, escaped here), BASE and then `style`."""
    meta = f'<meta charset="utf-8"><title>{html.escape(title)}</title>'
    return f"<!doctype html><html><head>{meta}\n<style>{BASE}\n{style}</style></head><body>"
