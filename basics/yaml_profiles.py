"""Loading YAML profiles (hardware profiles, driver profiles) with errors that name the file,
the field and the fix, and resolving a profile given by name or by path."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from basics.errors import BadInput

M = TypeVar("M", bound=BaseModel)


def load_yaml(path: Path, what: str) -> object:
    try:
        return yaml.safe_load(path.read_text())
    except OSError as e:
        raise BadInput(f"cannot read {what} {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise BadInput(f"{what} {path} is not valid YAML{at}: {getattr(e, 'problem', e)}") from None


def field_errors(e: ValidationError) -> list[str]:
    """Each schema error as `field.path: message`."""
    return [f"{'.'.join(map(str, err['loc'])) or '(top level)'}: {err['msg']}" for err in e.errors()]


def validated(model: type[M], data: object, path: Path, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise BadInput(f"{what} {path} is invalid:\n" + "\n".join(f"  {line}" for line in field_errors(e))) from None


def profile_path(name_or_path: str, shipped_dir: Path, what: str) -> Path:
    """A .yaml path as given, else the shipped profile of that name."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        return path
    shipped = shipped_dir / f"{name_or_path}.yaml"
    if not shipped.exists():
        known = ", ".join(sorted(p.stem for p in shipped_dir.glob("*.yaml")))
        raise BadInput(f"unknown {what} {name_or_path!r}: shipped profiles are {known}, or give a .yaml path")
    return shipped
