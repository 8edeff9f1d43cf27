"""Errors the CLI turns into exit codes (RP-04): bad input is 2, a broken lab is 3."""

from __future__ import annotations

from pathlib import Path


class DralabError(Exception):
    """Base class: the message names the input or component and the fix."""

    exit_code = 3


class BadInput(DralabError):
    """The user's input (flags, profile, environment) is wrong; nothing was started."""

    exit_code = 2


class LabBroken(DralabError):
    """The lab itself failed: a build, a component that died or never became ready."""

    exit_code = 3


class HarnessError(DralabError):
    """dralab could not do its own part: what it set up for a check is not there, or a state its
    code relies on does not hold. No verdict on the driver (ERROR), never its FAIL."""

    exit_code = 3


def log_tail(path: "str | Path", lines: int = 25) -> str:
    """The last lines of a log file, for error messages that carry their evidence."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode(errors="replace")
    except OSError as e:
        return f"(no log: {e})"
    return "\n".join(text.splitlines()[-lines:])


class NotSupported(Exception):
    """The provider cannot do this (e.g. restart a kubelet of a cluster it does not own)."""
