"""Fixtures for fleet tests: real journal runs written in the documented format."""

from __future__ import annotations

from pathlib import Path

import pytest
from fleetgen import write_fleet


@pytest.fixture
def fleet_inputs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_fleet(root)
    return root
