"""The project file `rundiff.toml`: the nearest one from the working directory up to the
repository root.

Its own module because metric groups (roles.py), goals (directions.py), the headline
(primary.py) and seed rules (parameters.py) each read a table of it, and none of them should
import another to find or read the file.
"""

from __future__ import annotations

import os
from typing import Any

PROJECT_FILE = "rundiff.toml"


def find_project_file(start: str | None = None) -> str | None:
    """The nearest `rundiff.toml` from `start` (default cwd) upwards, stopping at a repo root."""
    here = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(here, PROJECT_FILE)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if os.path.isdir(os.path.join(here, ".git")) or parent == here:
            return None
        here = parent


def project_table(path: str, name: str, hint: str | None = None) -> Any:
    """The `[name]` table of the project file at `path` ({} when it has none), unchecked; a file
    that cannot be read or is not TOML is an InputError (`hint` says where the table is
    documented)."""
    import tomllib

    from ..errors import InputError

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh).get(name, {})
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path} is not valid TOML: {exc}", hint=hint) from exc
