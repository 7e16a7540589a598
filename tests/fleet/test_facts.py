"""Stored fleet facts (rundiff_core/fleet/facts.py): written beside each pack segment by `rundiff
export`, read by the pushdown instead of querying, and trusted only where they hold.

Fleets are written as journal runs (the real writer), exported, and answered three ways: from the
stored facts, from DuckDB with the facts deleted, and in memory (`--no-pushdown`)."""

from __future__ import annotations

import math
import os
import shutil

import numpy as np
import pytest
from test_pushdown import both, drop_facts, rank_json, write_tricky

from rundiff_core.engines import stats
from rundiff_core.engines.runset import spike_rule
from rundiff_core.fleet import export_fleet, pack_writer, pushdown
from rundiff_core.fleet import facts as stored_facts
from rundiff_core.fleet import pack as packing
from rundiff_core.fleet.pushdown import FleetFacts, load_pushed

pytest.importorskip("duckdb")


@pytest.fixture
def fleet(tmp_path):
    src = tmp_path / "runs"
    write_tricky(src)
    dataset = tmp_path / "fleet"
    assert export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False).failed == 0
    return src, dataset


def _facts_files(dataset) -> list[str]:
    folder = packing.pack_dir(str(dataset))
    return sorted(f for f in os.listdir(folder) if f.endswith(stored_facts.SUFFIX))


def _no_duckdb(monkeypatch) -> None:
    monkeypatch.setattr(FleetFacts, "_connect",
                        lambda self: pytest.fail("asked DuckDB although the facts were stored"))


def test_export_stores_facts_beside_each_segment(fleet):
    _src, dataset = fleet
    segments = [f for f in os.listdir(packing.pack_dir(str(dataset))) if f.endswith(".parquet")]
    assert _facts_files(dataset) == [s[: -len(".parquet")] + stored_facts.SUFFIX
                                     for s in sorted(segments)]


def test_a_stored_fleet_ranks_without_a_query(fleet, capsys, monkeypatch):
    """Every fact rank and report need is stored: DuckDB is never opened, and the
    answers equal the in-memory path's."""
    _src, dataset = fleet
    _no_duckdb(monkeypatch)
    for command, argv in (("rank", ["--metric", "loss", "--metric", "eval/accuracy"]),
                          ("rank", ["--metric", "loss", "--align", "interpolate"]),
                          ("report", ["--metric", "loss"])):
        pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}", *argv, command=command,
                              histories=1)
        assert pushed == memory


def test_stored_tails_answer_like_the_exact_query(fleet):
    """For every run, key and a grid of targets (on, between, before and past the logged steps,
    ±inf), the stored tail gives the exact query's candidates or defers to it."""
    _src, dataset = fleet
    runs = load_pushed([f"parquet:{dataset}"])
    facts = runs[0].facts
    stored = facts._stored_facts()
    assert stored
    targets = [-math.inf, -5.0, 0.0, 3.0, 20.0, 47.5, 95.0, 96.0, 100.0, 104.0, 105.0, 110.0,
               119.0, 120.0, 500.0, math.inf]
    exact = facts._query_at({"loss": 0.0})  # warm the connection
    answered = deferred = 0
    for key in ("loss", "eval/accuracy"):
        for t in targets:
            exact = facts._query_at({key: t})[(key, t)]
            for uid, got in stored.items():
                tail = got.tails(uid).get(key)
                if tail is None:
                    assert uid not in exact
                    continue
                mine = pushdown._from_tail(tail, t)
                if mine is pushdown._UNSURE:
                    deferred += 1
                    continue
                answered += 1
                want = exact.get(uid)
                if mine is None or want is None:
                    assert mine is None and want is None, (uid, key, t)
                    continue
                assert mine[1:] == pytest.approx(want[1:], nan_ok=True), (uid, key, t)
                assert mine[0] == want[0]
    assert answered > 100 and deferred > 0  # both branches are exercised


def test_stale_facts_are_not_trusted(fleet, capsys, monkeypatch):
    """A run re-exported with other points gets a new segment: the old facts for it no longer
    match its content hash and are passed over; the answers still equal the in-memory path."""
    src, dataset = fleet
    from rundiff_core.demo import write_journal_run

    shutil.rmtree(src / "c" / "seed-1")
    write_journal_run(str(src / "c" / "seed-1"), config={"optim": {"name": "adamw"},
                      "layers": 2, "arm": "c", "seed": 1},
                      rows=[{"step": s, "loss": 3.0 - s / 100} for s in range(0, 90, 3)],
                      seed=1, final={"status": "finished"})
    export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)
    assert len(_facts_files(dataset)) == 2
    pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}", "--metric", "loss")
    assert pushed == memory
    value = next(p for m in pushed["metrics"] for g in m["order"] for p in g["points"]
                 if p["run"].endswith("c/seed-1"))
    assert value["step_used"] == 87.0  # the new points, not the stored facts of the old ones


def test_unreadable_or_foreign_facts_are_ignored(fleet, capsys, monkeypatch):
    _src, dataset = fleet
    memory = rank_json(capsys, f"parquet:{dataset}", "--metric", "loss", "--no-pushdown")
    (name,) = _facts_files(dataset)
    path = os.path.join(packing.pack_dir(str(dataset)), name)
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)
    assert rank_json(capsys, f"parquet:{dataset}", "--metric", "loss") == memory
    os.remove(path)  # another segment's facts under this segment's name
    other = packing.pack_dir(str(dataset)) + "/seg-other.parquet"
    shutil.copy(os.path.join(packing.pack_dir(str(dataset)), name.replace(
        stored_facts.SUFFIX, ".parquet")), other)
    pack_writer.write_facts(packing.Segment(other), path, str(dataset))
    os.remove(other)
    assert stored_facts.open_facts(packing.open_pack(str(dataset)).segments[0]) is None
    assert rank_json(capsys, f"parquet:{dataset}", "--metric", "loss") == memory


def test_an_export_backfills_missing_facts(fleet):
    src, dataset = fleet
    drop_facts(dataset)
    export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)  # nothing changed
    assert len(_facts_files(dataset)) == 1


def test_an_export_replaces_facts_of_another_version(fleet, monkeypatch):
    """Facts written by another version are ignored when read and rewritten by the next export."""
    src, dataset = fleet
    (name,) = _facts_files(dataset)
    path = os.path.join(packing.pack_dir(str(dataset)), name)
    monkeypatch.setattr(stored_facts, "FACTS_VERSION", stored_facts.FACTS_VERSION + 1)
    assert stored_facts.open_facts(packing.open_pack(str(dataset)).segments[0]) is None
    before = os.stat(path).st_mtime_ns
    export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)  # nothing changed
    assert os.stat(path).st_mtime_ns != before
    assert stored_facts.open_facts(packing.open_pack(str(dataset)).segments[0]) is not None


def test_spikes_stored_under_another_rule_are_recomputed(fleet, monkeypatch):
    """Stored spikes name the rule they came from; a changed rule scans the series again."""
    _src, dataset = fleet
    scanned = []
    real = FleetFacts.loss_series

    def spy(self):
        for item in real(self):
            scanned.append(item[0])
            yield item

    monkeypatch.setattr(FleetFacts, "loss_series", spy)
    runs = load_pushed([f"parquet:{dataset}"])
    stored = {r.name: repr(r.pushed_spikes("loss", spike_rule)) for r in runs}
    assert scanned == [] and any(v != "[]" for v in stored.values())
    monkeypatch.setattr(stats, "SPIKE_RULE_VERSION", stats.SPIKE_RULE_VERSION + 1)
    runs = load_pushed([f"parquet:{dataset}"])
    again = {r.name: repr(r.pushed_spikes("loss", spike_rule)) for r in runs}
    assert scanned and again == stored


def test_the_bootstrap_quantiles_are_numpys_bit_for_bit():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=300),
           st.lists(st.floats(0, 1), min_size=1, max_size=3))
    def check(values, qs):
        a = np.asarray(values, dtype="float64")
        assert stats._quantiles(a, tuple(qs)) == [float(x) for x in np.quantile(a, qs)]

    check()


def test_a_stored_fleet_ranks_without_importing_pandas(fleet):
    """Start-up is part of a many-run command's cost: on stored facts, rank needs no pandas."""
    import subprocess
    import sys

    _src, dataset = fleet
    code = ("import io, contextlib, sys\nfrom rundiff_core.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['rank', 'parquet:{dataset}', '--metric', 'loss']) == 0\n"
            "print(sorted(m for m in ('pandas', 'polars', 'duckdb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(dataset.parent))
    assert out.stdout.strip() == "[]", out.stderr


def test_stored_facts_answer_on_the_dask_engine_too(fleet, capsys, monkeypatch):
    """Stored facts are engine-independent: with `--engine dask` they answer first, and a run
    they do not cover (a stale entry) is asked of Dask; the answers equal the in-memory path."""
    pytest.importorskip("dask.distributed")
    from rundiff_core.fleet import pushdown_dask

    src, dataset = fleet
    rows = (src / "a" / "seed-1" / "metrics.jsonl").read_text().replace('"loss": 2.1', '"loss": 2.2')
    (src / "a" / "seed-1" / "metrics.jsonl").write_text(rows)
    old = str(dataset) + "-old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old)
    export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)
    shutil.rmtree(packing.pack_dir(str(dataset)))
    shutil.copytree(old, packing.pack_dir(str(dataset)))  # one run's entry and facts are stale
    asked = []
    real = pushdown_dask.DaskQueries.query_keys
    monkeypatch.setattr(pushdown_dask.DaskQueries, "query_keys",
                        lambda self, facts: asked.append(list(facts.uids)) or real(self, facts))
    memory = rank_json(capsys, f"parquet:{dataset}", "--metric", "loss", "--no-pushdown")
    assert rank_json(capsys, f"parquet:{dataset}", "--metric", "loss", "--engine", "dask") == memory
    assert len(asked) == 1 and len(asked[0]) == 1  # only the stale run
