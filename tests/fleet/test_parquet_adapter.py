"""The `parquet:` adapter: the contract kit with `rundiff export` as the real writer, plus its
address grammar and parity with reading the original journal runs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from fleetgen import write_fleet

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.errors import AddressError, InputError, RunNotFoundError
from rundiff_core.fleet import export_fleet, read_runs
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs, open_source
from rundiff_core.testing import AdapterContract, WrittenRun, assert_history_equal


def _export_cli(inputs: list[str], out: str) -> None:
    assert main(["export", *inputs, "-o", out, "--no-progress", "--workers", "0"]) == 0


class TestParquetContract(AdapterContract):
    adapter = "parquet"

    @pytest.fixture
    def written_run(self, tmp_path) -> WrittenRun:
        steps = np.arange(0, 300, 3)
        rows, expected = [], []
        for i, s in enumerate(steps):
            row = {"step": int(s), "loss": float(1 / (i + 1)), "time": 2000.0 + s}
            if i % 7 == 0:
                row["eval/acc"] = float(i) / 100
            rows.append(row)
            expected.append((s, "loss", row["loss"], row["time"]))
            if "eval/acc" in row:
                expected.append((s, "eval/acc", row["eval/acc"], row["time"]))
        rows.append({"step": 3.5, "loss": float("nan"), "time": 9.0})  # non-integer step, NaN
        expected.append((3.5, "loss", float("nan"), 9.0))
        config = {"optim": {"lr": 0.003, "name": "sgd"}, "layers": 6}
        run_dir = write_journal_run(str(tmp_path / "src" / "seed-1"), config=config, rows=rows,
                                    final={"loss": 0.02, "status": "finished"}, seed=1)
        dataset = str(tmp_path / "fleet")
        _export_cli([run_dir], dataset)  # the real writer of this format is `rundiff export`
        (uid,) = [r["run_uid"] for r in read_runs(dataset).to_pylist()]
        s, k, v, t = zip(*expected, strict=True)
        return WrittenRun(path=dataset, address=f"parquet:{dataset}#{uid}",
                          history=make_history(s, k, v, t), config=config,
                          summary={"loss": 0.02}, run_id=uid)

    @pytest.fixture
    def corrupt_run(self, tmp_path) -> str:
        src = tmp_path / "src"
        write_fleet(src, arms=1, seeds=1)
        dataset = tmp_path / "fleet"
        _export_cli([str(src)], str(dataset))
        for dirpath, _d, files in os.walk(dataset):  # the partitions and the pack
            for f in files:
                if not f.endswith(".parquet") or os.path.basename(dirpath) in ("runs", "errors"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, "r+b") as fh:  # a torn file, as a crashed copy would leave it
                    fh.truncate(os.path.getsize(path) // 2)
        return f"parquet:{dataset}"


@pytest.fixture
def fleet(tmp_path):
    src = tmp_path / "runs"
    write_fleet(src, arms=3, seeds=2)
    dataset = tmp_path / "fleet"
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    return src, dataset


def test_every_run_reads_back_like_the_original(fleet):
    src, dataset = fleet
    originals = {r.uid: r for r in load_runs(f"journal:{src}")}
    runs = load_runs(f"parquet:{dataset}")
    assert len(runs) == len(originals)
    for run in runs:
        orig = originals[run.meta["run_uid"]]
        assert run.adapter == "parquet" and run.meta["origin_address"] == orig.address
        assert (run.name, run.status, run.seed, run.git_sha) == (
            orig.name, orig.status, orig.seed, orig.git_sha)
        assert run.config == orig.config and run.summary == orig.summary and run.env == orig.env
        assert [(e.kind, e.step) for e in run.events] == [(e.kind, e.step) for e in orig.events]
        assert_history_equal(run.history(), orig.history(), ordered=True)
        assert_history_equal(run.history(["lr"]), orig.history(["lr"]), ordered=True)


def test_address_grammar(fleet):
    _src, dataset = fleet
    rows = read_runs(str(dataset)).to_pylist()
    uid = rows[0]["run_uid"]
    assert [r.run_id for r in open_source(f"parquet:{dataset}#{uid}").list_runs()] == [uid]
    assert [r.run_id for r in open_source(f"parquet:{dataset}#{uid[:6]}").list_runs()] == [uid]
    name = rows[0]["name"]
    assert load_run(f"parquet:{dataset}#{name}").meta["run_uid"] == uid
    arm1 = load_runs(f"parquet:{dataset}#name=*arm-1/*")
    assert sorted(r.seed for r in arm1) == [0, 1]
    both = load_runs(f"parquet:{dataset}#name=*arm-1/*,*arm-2/*&status=finished&source=journal")
    assert len(both) == 4
    assert {r.adapter for r in load_runs(str(dataset))} == {"parquet"}  # a bare path is sniffed
    with pytest.raises(AddressError, match="bad parquet filter"):
        open_source(f"parquet:{dataset}#colour=red")
    with pytest.raises(RunNotFoundError):
        open_source(f"parquet:{dataset}#ffffffffffff").list_runs()
    with pytest.raises(InputError):
        open_source(f"parquet:{dataset.parent / 'nope'}")


def test_diff_through_parquet_matches_diff_through_journal(fleet, capsys):
    src, dataset = fleet
    a, b = src / "arm-0" / "seed-0", src / "arm-2" / "seed-0"
    by_name = {r["name"]: r["run_uid"] for r in read_runs(str(dataset)).to_pylist()}
    ua = by_name[load_run(str(a)).name]
    ub = by_name[load_run(str(b)).name]
    assert main(["diff", str(a), str(b), "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["diff", f"parquet:{dataset}#{ua}", f"parquet:{dataset}#{ub}", "--format",
                 "json"]) == 0
    via = json.loads(capsys.readouterr().out)

    text = json.dumps(via)
    for row in read_runs(str(dataset)).to_pylist():  # parquet address → the original address
        text = text.replace(f"parquet:{dataset}#{row['run_uid']}", row["address"])
    assert json.loads(text) == direct  # same verdict, numbers and seeds from either backend


def test_seed_siblings_come_from_the_export(fleet):
    _src, dataset = fleet
    src = open_source(f"parquet:{dataset}")
    refs = src.list_runs()
    groups = {tuple(sorted(r.run_id for r in src.seed_siblings(ref))) for ref in refs}
    assert len(groups) == 3 and all(len(g) == 2 for g in groups)


def _drop_pack(dataset) -> None:
    from rundiff_core.fleet.pack_writer import remove_pack

    remove_pack(str(dataset))


def test_missing_partition_is_a_typed_error(fleet):
    _src, dataset = fleet
    _drop_pack(dataset)  # with a pack, the run's points are still there (tests/fleet/test_pack.py)
    run = load_runs(f"parquet:{dataset}")[0]
    os.remove(run.meta["path"])
    with pytest.raises(InputError, match="partition .* is missing"):
        run.history()


def test_one_missing_partition_fails_only_its_run(fleet):
    _src, dataset = fleet
    _drop_pack(dataset)
    source = open_source(f"parquet:{dataset}")
    runs = [source.load_run(ref) for ref in source.list_runs()]
    os.remove(runs[2].meta["path"])
    for run in runs:
        if run is runs[2]:
            with pytest.raises(InputError, match="is missing"):
                run.history()
        else:
            alone = load_run(run.address)  # a one-run address reads the same frame
            assert_history_equal(run.history(), alone.history(), ordered=True)


def test_points_files_are_lz4_with_split_floats_and_old_zstd_files_still_read(fleet):
    """The writer's layout is a speed choice, not part of the schema: a dataset whose points files
    an earlier rundiff wrote with zstd (or anyone wrote with defaults) reads the same."""
    import pyarrow.parquet as pq

    from rundiff_core.fleet import layout

    _src, dataset = fleet
    runs = load_runs(f"parquet:{dataset}")
    path = runs[0].meta["path"]
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    by_name = {chunk.column(i).path_in_schema: chunk.column(i) for i in range(chunk.num_columns)}
    assert by_name["value"].compression == "LZ4"
    assert "BYTE_STREAM_SPLIT" in by_name["value"].encodings
    assert "RLE_DICTIONARY" in by_name["key"].encodings
    before = runs[0].history()
    table = pq.read_table(path)
    for options in ({"compression": "zstd", "use_dictionary": ["key"]},  # rundiff ≤ 0.1 wrote this
                    {}):  # pyarrow defaults: snappy, every column dictionary-encoded
        pq.write_table(table, path, **options)
        again = load_run(runs[0].address).history()
        assert_history_equal(again, before, ordered=True)
        assert isinstance(again["key"].dtype, type(before["key"].dtype))
    assert layout.read_table(path, read_dictionary=["key"]).num_rows == len(before)


def test_many_globs_select_like_one_at_a_time(fleet):
    _src, dataset = fleet
    rows = read_runs(str(dataset)).to_pylist()
    names = sorted(r["name"] for r in rows)
    picked = names[::2]
    many = load_runs(f"parquet:{dataset}#name=" + ",".join(picked))
    assert sorted(r.name for r in many) == picked
    one_by_one = sorted(r.name for n in picked for r in load_runs(f"parquet:{dataset}#name={n}"))
    assert one_by_one == picked
    with pytest.raises(InputError, match="names no runs"):  # an empty glob list matches nothing
        load_runs(f"parquet:{dataset}#name=")


def test_an_open_source_keeps_its_view_and_the_next_one_sees_a_re_export(fleet):
    src, dataset = fleet
    source = open_source(f"parquet:{dataset}")
    before = [r.run_id for r in source.list_runs()]
    write_journal_run(str(src / "arm-9" / "seed-0"), config={"lr": 1.0},
                      rows=[{"step": 0, "loss": 1.0}], final={"status": "finished"}, seed=0)
    export_fleet([str(src)], str(dataset), workers=0, progress=False)
    assert [r.run_id for r in source.list_runs()] == before
    assert len(open_source(f"parquet:{dataset}").list_runs()) == len(before) + 1


def test_reading_does_not_write(fleet):
    from rundiff_core.testing import hash_tree

    _src, dataset = fleet
    before = hash_tree(dataset)
    for run in load_runs(f"parquet:{dataset}"):
        run.history()
    assert hash_tree(dataset) == before


def test_rank_through_parquet_matches_rank_through_journal(fleet, capsys):
    from rundiff_core.cli import build_parser

    if "rank" not in build_parser()._subparsers._group_actions[0].choices:
        pytest.skip("rank command not available")
    src, dataset = fleet
    assert main(["rank", f"journal:{src}", "--metric", "loss", "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["rank", f"parquet:{dataset}", "--metric", "loss", "--format", "json"]) == 0
    text = capsys.readouterr().out
    for row in read_runs(str(dataset)).to_pylist():
        text = text.replace(f"parquet:{dataset}#{row['run_uid']}", row["address"])
    via = json.loads(text.replace(f"parquet:{dataset}", f"journal:{src}"))
    assert via == direct


def _via_original_addresses(text: str, dataset, src) -> object:
    """A parquet: report with every parquet address put back to the run's original address."""
    for row in read_runs(str(dataset)).to_pylist():
        text = text.replace(f"parquet:{dataset}#{row['run_uid']}", row["address"])
    return json.loads(text.replace(f"parquet:{dataset}", f"journal:{src}"))


def _without(obj: object, fields: set[str]) -> object:
    if isinstance(obj, dict):
        return {k: _without(v, fields) for k, v in obj.items() if k not in fields}
    if isinstance(obj, list):
        return [_without(v, fields) for v in obj]
    return obj


def test_compare_through_parquet_matches_compare_through_journal(fleet, capsys):
    src, dataset = fleet
    a, b = src / "arm-0" / "seed-0", src / "arm-2" / "seed-1"
    by_name = {r["name"]: r["run_uid"] for r in read_runs(str(dataset)).to_pylist()}
    ua, ub = by_name[load_run(str(a)).name], by_name[load_run(str(b)).name]
    assert main(["compare", f"journal:{a}", f"journal:{b}", "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["compare", f"parquet:{dataset}#{ua}", f"parquet:{dataset}#{ub}",
                 "--format", "json"]) == 0
    via = _via_original_addresses(capsys.readouterr().out, dataset, src)
    # every cell, step, value and seed count is the same; only the reader's name differs, and the
    # journal names a run addressed on its own by its folder name ("seed-0") rather than its path
    # under the export input ("arm-0/seed-0")
    assert _without(via, {"adapter", "run_id"}) == _without(direct, {"adapter", "run_id"})
    assert direct["metrics"] and all(c["adapter"] == "parquet" for m in via["metrics"]
                                     for r in m["rows"] for c in r["cells"])


def test_report_through_parquet_matches_report_through_journal(fleet, capsys):
    src, dataset = fleet
    assert main(["report", f"journal:{src}", "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["report", f"parquet:{dataset}", "--format", "json"]) == 0
    via = _via_original_addresses(capsys.readouterr().out, dataset, src)

    assert via == direct and len(direct["rows"]) == 6
