"""Reading one real log back through `local:` for a test: the run, with its folder unchanged."""

from __future__ import annotations

from pathlib import Path

from rundiff_core import load_runs
from rundiff_core.testing import hash_tree


def read_one(path: Path):  # noqa: ANN201 - a rundiff Run
    """The one run `local:PATH` reads; its folder is hashed before and after (read, never written)."""
    before = hash_tree(str(path.parent))
    (run,) = load_runs(f"local:{path}")
    assert hash_tree(str(path.parent)) == before
    return run


def values(run, key: str) -> list[float]:  # noqa: ANN001
    return [float(v) for v in run.history([key]).value]
