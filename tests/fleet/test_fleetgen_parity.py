"""bench/fleetgen100k.py (the 100,000-run fleet generator) writes the dataset `rundiff export`
writes, and `rank`, `report`, `ablate` and `watch` on it say the same with DuckDB, with `--engine
dask` on a LocalCluster of two worker processes, and with `--no-pushdown` — the scale test's
parity check, at small scale."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import time
import types
from unittest import mock

import pytest

pytest.importorskip("duckdb")

import pyarrow.parquet as pq  # noqa: E402

import rundiff_core.commands.watch as watch_cmd  # noqa: E402
from rundiff_core.cli import main  # noqa: E402
from rundiff_core.fleet import export_fleet, layout  # noqa: E402
from rundiff_core.fleet import facts as stored  # noqa: E402
from rundiff_core.fleet import pack as packing  # noqa: E402
from rundiff_core.fleet.pushdown import FleetFacts  # noqa: E402

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
sys.path.insert(0, os.path.abspath(BENCH))

from fleetgen100k import generate  # noqa: E402
from synthetic_fleet import SyntheticFleet  # noqa: E402

RUNS, STEPS = 40, 60
VOLATILE = ("exported_at", "input", "project")  # when and from which input the rows were written


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen") / "fleet"
    got = generate(str(root), RUNS, STEPS, workers=2, segments=3, progress=False)
    assert (got["runs"], got["failed"], got["points"]) == (RUNS, 0, RUNS * STEPS * 2)
    return str(root)


def _rows(root: str) -> list[dict]:
    rows = layout.read_runs(root).to_pylist()
    return sorted(({k: v for k, v in r.items() if k not in VOLATILE} for r in rows),
                  key=lambda r: r["run_uid"])


def test_the_generator_writes_what_export_writes(generated, tmp_path):
    exported = str(tmp_path / "exported")
    summary = export_fleet([SyntheticFleet(RUNS, STEPS)], exported, workers=0, progress=False)
    assert summary.failed == 0
    assert _rows(generated) == _rows(exported)  # config, seeds, seed groups, hashes, steps, …
    rows = layout.read_runs(generated).to_pylist()
    assert {r["input"] for r in rows} == {f"synthetic:{RUNS}x{STEPS}"}
    for r in rows:  # the same partition files, point for point
        part = layout.points_file(generated, r["source"], r["run_uid"])
        assert pq.read_table(part).equals(
            pq.read_table(layout.points_file(exported, r["source"], r["run_uid"])))
    # the pack: a segment a shard, every run in one of them exactly, with its facts stored
    pack = packing.open_pack(generated)
    assert pack is not None and len(pack.segments) == 3
    for r in rows:
        hit = pack.entry(r["run_uid"], r["n_points"], r["content_hash"])
        assert hit is not None
        facts = stored.open_facts(hit[0])
        assert facts is not None and facts.covers(r["run_uid"], r["content_hash"])
    # `rundiff export` recognises it: the same runs again change no partition and no segment
    before = sorted(os.listdir(packing.pack_dir(generated)))
    again = export_fleet([SyntheticFleet(RUNS, STEPS)], generated, workers=0, progress=False)
    assert (again.unchanged, again.new, again.updated, again.failed) == (RUNS, 0, 0, 0)
    assert sorted(os.listdir(packing.pack_dir(generated))) == before


def _json(argv: list[str], env: dict[str, str] | None = None) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), mock.patch.dict(os.environ, env or {}):
        code = main([*argv, "--format", "json"])
    assert code in ((0, 1) if argv[0] == "watch" else (0,)), (argv, code)
    return json.loads(out.getvalue())  # watch closed its Dask cluster with its poll


@pytest.mark.parametrize("facts", ["stored", "deleted"])
def test_dask_duckdb_and_memory_agree_on_the_generated_fleet(generated, scheduler, tmp_path,
                                                             facts):
    if facts == "deleted":  # a copy without the stored facts: every answer a query
        generated = shutil.copytree(generated, tmp_path / "fleet")
        folder = packing.pack_dir(str(generated))
        for name in os.listdir(folder):
            if name.endswith(stored.SUFFIX):
                os.remove(os.path.join(folder, name))
    fleet = f"parquet:{generated}"
    metrics = ["--metric", "loss", "--metric", "eval/accuracy"]
    commands = {
        "rank": ["rank", fleet, *metrics],
        "rank interpolate": ["rank", fleet, *metrics, "--align", "interpolate", "--step", "33.5"],
        "report": ["report", fleet, *metrics],
        "ablate": ["ablate", "--baseline", f"{fleet}#name=cfg-00000/*", fleet, *metrics],
        "watch": ["watch", fleet, "--once"],
    }
    engines = {"duckdb": [], "dask": ["--engine", "dask", "--scheduler", scheduler],
               "memory": ["--no-pushdown"]}
    clock = types.SimpleNamespace(time=lambda: 1.7e9 + 7200, sleep=time.sleep)
    got: dict[str, dict[str, dict]] = {}
    for engine, extra in engines.items():
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(watch_cmd, "time", clock))
            if engine == "dask":  # Dask answers: DuckDB is never asked, no scan on the client
                for name in ("_connect", "loss_series"):
                    stack.enter_context(mock.patch.object(
                        FleetFacts, name, side_effect=AssertionError(f"--engine dask: {name}")))
            env = {"RUNDIFF_CACHE_DIR": str(tmp_path / f"cache-{engine}")}
            got[engine] = {name: _json([*argv, *extra], env) for name, argv in commands.items()}
    for name in commands:
        assert got["dask"][name] == got["memory"][name], f"{name}: --engine dask"
        assert got["duckdb"][name] == got["memory"][name], f"{name}: duckdb"
    rank = got["dask"]["rank interpolate"]
    assert {p["method"] for m in rank["metrics"] for g in m["order"]
            for p in g["points"]} == {"interpolate"}
    assert len(got["dask"]["ablate"]["ablations"]) == RUNS // 5 - 1
