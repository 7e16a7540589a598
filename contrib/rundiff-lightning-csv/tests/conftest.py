"""Test setup for rundiff-lightning-csv: rundiff's adapter test kit and the shared real samples.

The adapter does no network I/O (it reads two local files per run), so no network guard here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["rundiff_core.testing"]

# contrib/rundiff-lightning-csv/tests/conftest.py → the repository's parent holds shared/realdata.
REALDATA = Path(
    os.environ.get("RUNDIFF_REALDATA", Path(__file__).resolve().parents[3].parent / "shared" / "realdata")
)


@pytest.fixture
def realdata() -> Path:
    """Real CSVLogger folders written by other people; tests skip when the folder is absent."""
    if not (REALDATA / "metrics-lightning-csv-toadgan").is_dir():
        pytest.skip(f"real data folder not found at {REALDATA}")
    return REALDATA
