"""Rules of the code that no linter of ours checks: every `# type: ignore` names the error codes it
silences and says beside them why the code is right nonetheless, so that an ignore is never a
shrug (a bare one silences every error of its line, and one without a reason cannot be judged
when the types around it change)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The form: the ignore, its error codes in brackets, two spaces, then a second comment giving the reason.
WELL_FORMED = re.compile(r"# type: ignore\[[a-z][a-z-]*(, [a-z][a-z-]*)*\]  # (?!noqa|type:|pragma)\S")
# dralab/pytest_plugin.py is being split into a package elsewhere; its one ignore gets its reason
# there. Drop this once it has one.
NOT_YET = {"deploy_one.uninstalled = uninstalled  # type: ignore[attr-defined]"}


def _python_files() -> list[Path]:
    return sorted(
        p
        for p in REPO.rglob("*.py")
        if not any(part.startswith(".") or part in ("build", "dist", "venv") for part in p.relative_to(REPO).parts)
    )


def _ignores(path: Path) -> list[tuple[int, str, str]]:
    """(line number, comment, line) of each comment of `path` that holds a type: ignore."""
    text = path.read_text()
    lines = text.splitlines()
    return [
        (tok.start[0], tok.string, lines[tok.start[0] - 1].strip())
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT and "type: ignore" in tok.string
    ]


def test_every_type_ignore_has_its_error_codes_and_a_reason() -> None:
    bad = [
        f"{path.relative_to(REPO)}:{n}: {comment}"
        for path in _python_files()
        for n, comment, line in _ignores(path)
        if not WELL_FORMED.match(comment) and line not in NOT_YET
    ]
    assert not bad, "a type: ignore without error codes or without a reason after them:\n" + "\n".join(bad)


def test_the_rule_tells_a_reasoned_ignore_from_others() -> None:
    assert WELL_FORMED.match("# type: ignore[arg-type]  # a dict: validate_call builds the model")
    assert WELL_FORMED.match("# type: ignore[arg-type, misc]  # both: the stand-in")
    for comment in (
        "# type: ignore",
        "# type: ignore[arg-type]",
        "# type: ignore  # a reason but no code",
        "# type: ignore[arg-type] # one space",
        "# type: ignore[arg-type]  # noqa: E501",
    ):
        assert not WELL_FORMED.match(comment), comment
    assert [c for _, c, _ in _ignores(Path(__file__))] == [], "this file's own examples are strings, not comments"
