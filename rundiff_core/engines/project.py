"""The project file `rundiff.toml`: the nearest one from the working directory up to the
repository root.

Its own module because metric groups (roles.py), goals (directions.py) and seed rules (arms.py)
each read a table of it, and none of them should import another to find the file.
"""

from __future__ import annotations

import os

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
