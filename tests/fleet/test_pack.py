"""The pack (`_pack/points.parquet`): a run read from it equals the run read from its partition,
it is used only while it matches the runs table, and losing it loses nothing."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from fleetgen import write_fleet

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.fleet import export_fleet, pack_writer, read_runs
from rundiff_core.fleet import pack as packing
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import assert_history_equal, hash_tree


@pytest.fixture
def fleet(tmp_path):
    src = tmp_path / "runs"
    write_fleet(src, arms=3, seeds=3, steps=50)
    dataset = tmp_path / "fleet"
    summary = export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert summary.pack_bytes > 0 and summary.pack_problem is None
    return src, dataset


def _by_partition(dataset) -> dict:
    """Every run's history read from its partition (the pack moved away meanwhile)."""
    pack = packing.pack_dir(str(dataset))
    aside = str(dataset.parent / "pack-aside")
    os.replace(pack, aside)
    try:
        return {r.meta["run_uid"]: r.history() for r in load_runs(f"parquet:{dataset}")}
    finally:
        os.replace(aside, pack)


def _segments(dataset) -> list[str]:
    """The segment files (each may have its stored facts beside it: tests/fleet/test_facts.py)."""
    return sorted(f for f in os.listdir(packing.pack_dir(str(dataset))) if f.endswith(".parquet"))


def _index(path) -> dict:
    return json.loads(pq.read_metadata(path).metadata[packing.PACK_META_KEY])


def _remove_partitions(dataset) -> None:
    shutil.rmtree(dataset / "points")


def test_the_pack_holds_every_run_exactly_like_its_partition(fleet):
    src, dataset = fleet
    rows = read_runs(str(dataset)).to_pylist()
    (segment,) = _segments(dataset)
    index = _index(os.path.join(packing.pack_dir(str(dataset)), segment))
    assert set(index) == {r["run_uid"] for r in rows}
    assert all(index[r["run_uid"]][2:] == [r["n_points"], r["content_hash"]] for r in rows)

    expected = _by_partition(dataset)
    originals = {r.uid: r for r in load_runs(f"journal:{src}")}
    _remove_partitions(dataset)  # from here on only the pack can answer
    many = load_runs(f"parquet:{dataset}")  # one address: read in batches
    assert len(many) == len(expected)
    for run in many:
        uid = run.meta["run_uid"]
        assert_history_equal(run.history(), expected[uid], ordered=True)
        assert_history_equal(run.history(), originals[uid].history(), ordered=True)
        alone = load_run(f"parquet:{dataset}#{uid}")  # one run: one row group
        assert_history_equal(alone.history(), expected[uid], ordered=True)
        assert_history_equal(alone.history(["lr"]), originals[uid].history(["lr"]), ordered=True)


def test_batches_are_bounded_and_follow_the_listing(fleet, monkeypatch):
    from rundiff_core.resolve import open_source

    _src, dataset = fleet
    monkeypatch.setattr("rundiff_adapters.parquet.source.PACK_BATCH", 4)
    source = open_source(f"parquet:{dataset}")
    refs = source.list_runs()
    runs = [source.load_run(ref) for ref in refs]
    runs[0].history()
    assert set(source._batch) == {r.run_id for r in refs[1:4]}  # the next 3, none further
    for run in runs[1:]:
        run.history()
        assert len(source._batch) <= 3
    assert not source._batch


def test_a_stale_pack_entry_is_ignored(fleet, tmp_path):
    """An interrupted export leaves the old pack; the runs it rewrote read their partitions."""
    src, dataset = fleet
    old_pack = tmp_path / "old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old_pack)
    run_dir = src / "arm-1" / "seed-2"
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    last["loss"] = 123.0  # same number of points, one value changed: only the hash tells
    (run_dir / "metrics.jsonl").write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    again = export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert again.updated == 1 and again.pack_bytes > 0
    shutil.rmtree(packing.pack_dir(str(dataset)))  # as if the pack was never updated
    shutil.copytree(old_pack, packing.pack_dir(str(dataset)))

    def final_loss(frame):
        return float(frame[frame["key"] == "loss"]["value"].iloc[-1])

    run = load_run(f"journal:{run_dir}")
    via = load_run(f"parquet:{dataset}#{run.uid}")
    assert final_loss(via.history()) == 123.0
    assert_history_equal(via.history(), run.history(), ordered=True)
    everything = {r.meta["run_uid"]: r.history() for r in load_runs(f"parquet:{dataset}")}
    assert final_loss(everything[run.uid]) == 123.0


def test_re_export_writes_only_what_changed_and_compacts_when_segments_pile_up(fleet,
                                                                             monkeypatch):
    src, dataset = fleet
    pack_dir = packing.pack_dir(str(dataset))
    (first,) = _segments(dataset)
    before = os.stat(os.path.join(pack_dir, first))
    same = export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert same.pack_bytes == 0 and _segments(dataset) == [first]
    after = os.stat(os.path.join(pack_dir, first))
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    def add_run(i: int) -> None:
        write_journal_run(str(src / f"arm-9{i}" / "seed-0"), config={"lr": float(i)},
                          rows=[{"step": s, "loss": 1.0 / (s + 1)} for s in range(5)],
                          final={"status": "finished"}, seed=0)

    add_run(0)
    grown = export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert grown.new == 1 and 0 < grown.pack_bytes < before.st_size  # only the new run
    segments = _segments(dataset)
    assert len(segments) == 2 and first in segments
    (new,) = [s for s in segments if s != first]
    assert len(_index(os.path.join(pack_dir, new))) == 1
    uids = {r["run_uid"] for r in read_runs(str(dataset)).to_pylist()}
    assert packing.open_pack(str(dataset)).uids() == uids

    monkeypatch.setattr(pack_writer, "MAX_SEGMENTS", 3)
    add_run(1)
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert len(_segments(dataset)) == 3
    add_run(2)
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    (compacted,) = _segments(dataset)  # a 4th segment would pass MAX_SEGMENTS: one again
    uids = {r["run_uid"] for r in read_runs(str(dataset)).to_pylist()}
    assert set(_index(os.path.join(pack_dir, compacted))) == uids
    expected = _by_partition(dataset)
    _remove_partitions(dataset)
    for run in load_runs(f"parquet:{dataset}"):
        assert_history_equal(run.history(), expected[run.meta["run_uid"]], ordered=True)


def test_a_segment_with_nothing_current_is_deleted(fleet):
    """Rewriting most runs makes the old segment mostly stale: it is compacted away."""
    src, dataset = fleet
    (first,) = _segments(dataset)
    for run_dir in sorted(src.glob("arm-*/seed-*"))[:6]:  # 6 of 9 runs change
        with open(run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps({"step": 5000, "loss": 0.25}) + "\n")
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    segments = _segments(dataset)
    assert first not in segments and len(segments) == 1
    rows = read_runs(str(dataset)).to_pylist()
    index = _index(os.path.join(packing.pack_dir(str(dataset)), segments[0]))
    assert {u: e[3] for u, e in index.items()} == {r["run_uid"]: r["content_hash"] for r in rows}


def test_no_pack_removes_it_and_reads_the_same(fleet, capsys):
    src, dataset = fleet
    with_pack = {r.meta["run_uid"]: r.history() for r in load_runs(f"parquet:{dataset}")}
    assert main(["export", str(src), "-o", str(dataset), "--no-pack", "--no-progress",
                 "--workers", "0"]) == 0
    assert not os.path.exists(packing.pack_dir(str(dataset)))
    for run in load_runs(f"parquet:{dataset}"):
        assert_history_equal(run.history(), with_pack[run.meta["run_uid"]], ordered=True)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "no-index", "newer-version"])
def test_an_unreadable_pack_falls_back_to_the_partitions(fleet, damage):
    _src, dataset = fleet
    expected = _by_partition(dataset)
    (segment,) = _segments(dataset)
    path = os.path.join(packing.pack_dir(str(dataset)), segment)
    if damage == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(os.path.getsize(path) // 2)
    elif damage == "garbage":
        with open(path, "wb") as fh:
            fh.write(b"PAR1" + os.urandom(4096) + b"PAR1")
    elif damage == "no-index":  # a valid Parquet file without the index
        pq.write_table(pq.read_table(path), path)
    else:  # the index intact, but a schema version from the future
        pf = pq.ParquetFile(path)
        groups = [pf.read_row_group(i) for i in range(pf.num_row_groups)]
        meta = {k: v for k, v in pf.metadata.metadata.items() if k != b"ARROW:schema"}
        meta[b"rundiff.fleet.schema_version"] = b"99"
        with pq.ParquetWriter(path, groups[0].schema.with_metadata(meta)) as out:
            for group in groups:
                out.write_table(group.replace_schema_metadata(meta), row_group_size=group.num_rows)
    assert packing.open_pack(str(dataset)) is None  # refused, not half-used
    for run in load_runs(f"parquet:{dataset}"):
        assert_history_equal(run.history(), expected[run.meta["run_uid"]], ordered=True)


def test_a_pack_that_cannot_be_written_is_reported_and_the_export_completes(tmp_path):
    src = tmp_path / "runs"
    write_fleet(src, arms=1, seeds=2, steps=20)
    dataset = tmp_path / "fleet"
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    pack_writer.remove_pack(str(dataset))
    (dataset / packing.PACK_DIR).write_text("a file where the pack's folder should be")
    with open(src / "arm-0" / "seed-0" / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps({"step": 999, "loss": 0.5}) + "\n")
    summary = export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert summary.updated == 1 and summary.pack_problem and summary.pack_bytes == 0
    from rundiff_core.commands.export import render_summary

    assert "pack not written" in render_summary(summary)
    run = load_run(f"journal:{src / 'arm-0' / 'seed-0'}")
    assert load_run(f"parquet:{dataset}#{run.uid}").history()["step"].max() == 999


def test_reading_through_the_pack_does_not_write(fleet):
    _src, dataset = fleet
    before = hash_tree(dataset)
    for run in load_runs(f"parquet:{dataset}"):
        run.history()
    load_run(f"parquet:{dataset}#{read_runs(str(dataset)).to_pylist()[0]['run_uid']}").history()
    assert hash_tree(dataset) == before


def test_runs_without_points_stay_out_of_the_pack(tmp_path):
    src = tmp_path / "runs"
    write_journal_run(str(src / "empty"), config={"a": 1}, rows=[], final={"status": "finished"},
                      seed=0)
    write_journal_run(str(src / "full"), config={"a": 2}, rows=[{"step": 1, "loss": 1.0}],
                      final={"status": "finished"}, seed=0)
    dataset = tmp_path / "fleet"
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    pack = packing.open_pack(str(dataset))
    rows = {r["name"]: r for r in read_runs(str(dataset)).to_pylist()}
    assert pack.uids() == {r["run_uid"] for r in rows.values() if r["n_points"]}
    lengths = sorted(len(r.history()) for r in load_runs(f"parquet:{dataset}"))
    assert lengths == [0, 1]


def test_the_summary_says_what_was_written_to_the_pack(tmp_path):
    from rundiff_core.commands.export import render_summary

    src = tmp_path / "runs"
    write_fleet(src, arms=1, seeds=2, steps=20)
    first = export_fleet([str(src)], str(tmp_path / "fleet"), workers=0, progress=False)
    assert "  pack: " in render_summary(first) and "MB written" in render_summary(first)
    again = export_fleet([str(src)], str(tmp_path / "fleet"), workers=0, progress=False)
    assert "pack" not in render_summary(again)


def test_an_arms_seeds_share_one_pack_read(fleet):
    from rundiff_core.resolve import open_source

    _src, dataset = fleet
    uid = read_runs(str(dataset)).to_pylist()[0]["run_uid"]
    source = open_source(f"parquet:{dataset}#{uid}")
    (ref,) = source.list_runs()
    siblings = source.seed_siblings(ref)
    assert len(siblings) == 3
    runs = {r.run_id: source.load_run(r) for r in siblings}
    runs[uid].history()
    assert set(source._batch) == {r.run_id for r in siblings} - {uid}
    for run in runs.values():
        assert len(run.history()) > 0
    assert not source._batch


def test_runs_loaded_backwards_are_each_read_once(fleet, monkeypatch):
    from rundiff_core.fleet.pack import Segment
    from rundiff_core.resolve import open_source

    _src, dataset = fleet
    reads: list[int] = []
    original = Segment.read

    def counting(self, entries):
        reads.append(len(entries))
        return original(self, entries)

    monkeypatch.setattr(Segment, "read", counting)
    monkeypatch.setattr("rundiff_adapters.parquet.source.PACK_BATCH", 4)
    source = open_source(f"parquet:{dataset}")
    runs = [source.load_run(ref) for ref in source.list_runs()]
    for run in reversed(runs):
        run.history()
    assert sum(reads) == len(runs)  # no run read twice, none read and left unused
    assert not source._batch
