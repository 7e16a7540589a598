"""Engines: a process pool and Dask clusters on 127.0.0.1 write the same dataset, row for row."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from fleetgen import wait_for_pause, write_fleet

from rundiff_core.cli import main
from rundiff_core.errors import InputError, UsageError
from rundiff_core.fleet import DaskEngine, export_fleet, read_points, read_runs
from rundiff_core.fleet.engines import make_engine
from rundiff_core.fleet.pack import open_pack

VOLATILE = ["exported_at"]  # the only column allowed to differ between two exports


def _tables(dataset: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Points in (run, logged) order and the runs table, ready for an exact comparison."""
    points = read_points(str(dataset)).to_pandas()
    points = points.sort_values(["run_uid"], kind="stable").reset_index(drop=True)
    runs = read_runs(str(dataset)).to_pandas().drop(columns=VOLATILE)
    return points, runs.sort_values("run_uid").reset_index(drop=True)


def _assert_same_dataset(a: Path, b: Path) -> None:
    pa_, ra = _tables(a)
    pb, rb = _tables(b)
    pd.testing.assert_frame_equal(pa_, pb, check_exact=True)
    pd.testing.assert_frame_equal(ra, rb, check_exact=True)
    pack_a, pack_b = open_pack(str(a)), open_pack(str(b))  # the pack too, entry for entry
    assert pack_a is not None and pack_b is not None
    assert [s.index for s in pack_a.segments] == [s.index for s in pack_b.segments]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("engines") / "runs"
    write_fleet(root, arms=4, seeds=3, steps=80, running=("arm-2/seed-0",))
    return root


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "fleet"
    s = export_fleet([str(inputs)], str(out), workers=0, progress=False)
    assert s.workers == 0 and s.new == 12
    return out


def test_process_pool_equals_in_process(inputs, reference, tmp_path):
    out = tmp_path / "fleet"
    s = export_fleet([str(inputs)], str(out), workers=2, progress=False)
    assert s.workers == 2 and s.new == 12 and s.failed == 0
    _assert_same_dataset(reference, out)
    again = export_fleet([str(inputs)], str(out), workers=2, progress=False)
    assert (again.skipped, again.unchanged) == (11, 1)  # incremental state reached the workers


@pytest.mark.slow
@pytest.mark.parametrize(("n_workers", "processes", "write_in"),
                         [(2, False, "client"), (1, True, "workers")])
def test_dask_local_cluster_equals_local_engine(inputs, reference, tmp_path, n_workers,
                                                processes, write_in, capsys):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes,
                      protocol="tcp://", host="127.0.0.1", dashboard_address=None) as cluster:
        out = tmp_path / "fleet"
        if processes:  # through the command line
            assert main(["export", str(inputs), "-o", str(out), "--engine", "dask",
                         "--scheduler", cluster.scheduler_address, "--write-in", write_in,
                         "--no-progress", "--format", "json"]) == 0
            s = json.loads(capsys.readouterr().out)
            assert (s["engine"], s["workers"], s["new"], s["failed"]) == ("dask", n_workers, 12, 0)
        else:
            s = export_fleet([str(inputs)], str(out), engine="dask",
                             scheduler=cluster.scheduler_address, write_in=write_in,
                             progress=False)
            assert s.engine == "dask" and s.workers == n_workers
            assert (s.new, s.failed) == (12, 0)
        _assert_same_dataset(reference, out)
        again = export_fleet([str(inputs)], str(out), engine="dask",
                             scheduler=cluster.scheduler_address, progress=False)
        assert (again.skipped, again.unchanged, again.updated) == (11, 1, 0)


def test_dask_failure_per_run_is_recorded(inputs, tmp_path):
    from dask.distributed import Client, LocalCluster

    bad = tmp_path / "runs"
    write_fleet(bad, arms=1, seeds=2)
    cfg = bad / "arm-0" / "seed-1" / "config.yaml"
    cfg.unlink()
    cfg.mkdir()
    with LocalCluster(n_workers=1, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        s = export_fleet([str(bad)], str(tmp_path / "fleet"), engine=DaskEngine(client),
                         progress=False)
    assert (s.new, s.failed) == (1, 1)
    assert s.failures[0]["error_type"] == "IsADirectoryError"


def test_unreachable_scheduler_is_a_clear_error(inputs, tmp_path):
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    engine = DaskEngine(f"tcp://127.0.0.1:{port}", connect_timeout="1s")
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        export_fleet([str(inputs)], str(tmp_path / "fleet"), engine=engine, progress=False)


def test_engine_options_are_checked():
    with pytest.raises(UsageError):
        make_engine("local", scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(UsageError):
        make_engine("spark")
    with pytest.raises(UsageError):
        make_engine("local", workers=-1)


@pytest.mark.slow
def test_a_killed_pool_worker_is_survived(tmp_path, monkeypatch):
    """SIGKILL a pool worker mid-export (as the OOM killer would): its runs are retried in a
    fresh pool and the dataset still equals an in-process export. The worker is paused right
    after writing its first partition (fault injection), so the kill lands mid-export always."""
    import signal
    import threading

    from rundiff_core.fleet import faults

    src = tmp_path / "runs"
    write_fleet(src, arms=6, seeds=3, steps=120)
    out = tmp_path / "fleet"
    marker = tmp_path / "paused"
    monkeypatch.setenv(faults.ENV, f"points-written:1:{marker}")
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(s=export_fleet(
        [str(src)], str(out), workers=2, progress=False)))
    thread.start()
    point, pid = wait_for_pause(marker, thread.is_alive)
    assert point == "points-written" and pid != os.getpid(), "a pool worker, not the export, paused"
    os.kill(pid, signal.SIGKILL)
    thread.join()
    s = box["s"]
    assert (s.new, s.failed) == (18, 0), s.failures
    ref = tmp_path / "ref"
    export_fleet([str(src)], str(ref), workers=0, progress=False)
    _assert_same_dataset(ref, out)
