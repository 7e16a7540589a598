"""Fixtures shared by the adapter tests."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def near_misses(tmp_path_factory) -> list[tuple[str, str | None]]:
    """Files shaped like Neptune's but not Neptune runs: no adapter may win them for neptune."""
    root = tmp_path_factory.mktemp("near-misses")
    (root / "logs").mkdir()
    (root / "logs" / "data-1.log").write_text("2025-01-01 12:00 server started\n")
    (root / "plain").mkdir()
    pq.write_table(pa.table({"step": [0, 1], "loss": [1.0, 0.5]}), root / "plain" / "metrics_part_0.parquet")
    (root / "db").mkdir()
    (root / "db" / "other.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    (root / "fake").mkdir()
    (root / "fake" / "run_operations.sqlite3").write_text("not a database")
    return [(str(root / "logs"), None), (str(root / "logs" / "data-1.log"), None),
            (str(root / "plain"), None), (str(root / "plain" / "metrics_part_0.parquet"), None),
            (str(root / "db"), None), (str(root / "fake"), None)]
