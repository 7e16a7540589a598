"""Fixtures for the trajectory diff tests: generated exports and the shared real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def realdata_path() -> Path:
    """`$RUNDIFF_REALDATA`, else `../shared/realdata` next to the repository."""
    default = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata"
    return Path(os.environ.get("RUNDIFF_REALDATA", default)).resolve()


@pytest.fixture
def trajdata() -> Path:
    """The real agent samples; skip cleanly when the folder is absent."""
    root = realdata_path()
    if not (root / "agent-inspect-ai").is_dir() or not (root / "agent-taubench-historical").is_dir():
        pytest.skip(f"real agent data not found under {root}")
    return root
