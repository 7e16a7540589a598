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


@pytest.fixture(scope="module")
def scheduler():
    """A LocalCluster of two worker processes on 127.0.0.1 (no dashboard), its address."""
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        yield cluster.scheduler_address
