"""`rundiff export`: what lands in the dataset, incremental re-runs, failures, atomicity."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fleetgen import SECRET, part_files, wait_for_pause, write_fleet

from rundiff_core.cli import main
from rundiff_core.errors import InputError, UsageError
from rundiff_core.fleet import (
    RUNS_SCHEMA,
    SCHEMA_VERSION,
    export_fleet,
    read_errors,
    read_points,
    read_runs,
)
from rundiff_core.fleet.schema import MANIFEST
from rundiff_core.model import Run
from rundiff_core.resolve import load_runs
from rundiff_core.testing import InMemorySource, assert_history_equal, hash_tree, memory_run


def _runs_by_uid(dataset: Path) -> dict[str, dict]:
    return {r["run_uid"]: r for r in read_runs(str(dataset)).to_pylist()}


def test_export_writes_every_point_and_the_documented_tables(fleet_inputs, tmp_path):
    out = tmp_path / "fleet"
    before = hash_tree(fleet_inputs)
    s = export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    assert hash_tree(fleet_inputs) == before, "export wrote inside the run directories"
    originals = load_runs(f"journal:{fleet_inputs}")
    assert (s.new, s.failed, s.runs_in_dataset) == (len(originals), 0, len(originals))

    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == "rundiff-fleet" and manifest["schema_version"] == SCHEMA_VERSION

    runs = _runs_by_uid(out)
    table = read_points(str(out))
    assert table.schema.field("run_uid").type == pa.string()  # declared, never inferred as int
    points = table.to_pandas()
    assert s.points_in_dataset == len(points) == sum(len(r.history()) for r in originals)
    for run in originals:
        row = runs[run.uid]
        part = out / "points" / "source=journal" / f"run_uid={run.uid}" / "part-0.parquet"
        meta = pq.ParquetFile(part).schema_arrow.metadata
        assert meta[b"rundiff.fleet.schema_version"] == str(SCHEMA_VERSION).encode()
        mine = points[points["run_uid"] == run.uid]
        assert set(mine["source"]) == {"journal"}
        assert_history_equal(mine, run.history(), ordered=True)  # logged order kept
        assert row["address"] == run.address and row["name"] == run.name
        assert (row["status"], row["seed"], row["git_sha"]) == (run.status, run.seed, run.git_sha)
        assert row["n_points"] == len(run.history())
        assert row["keys"] == run.metric_keys()
        assert json.loads(row["config_json"])["optim"] == run.config["optim"]
        assert json.loads(row["summary_json"]) == run.summary
        assert row["input"] == f"{fleet_inputs}" and row["project"] == row["input"]
        assert [e["kind"] for e in json.loads(row["events_json"])] == ["start"]
    assert read_errors(str(out)).num_rows == 0


def test_runs_table_schema_and_flattened_columns(fleet_inputs, tmp_path):
    out = tmp_path / "fleet"
    export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    table = read_runs(str(out))
    for field in RUNS_SCHEMA:  # the documented base columns, with their types
        assert table.schema.field(field.name).type == field.type, field.name
    assert table.schema.field("config.optim.lr").type == pa.float64()
    assert table.schema.field("config.layers").type == pa.int64()
    assert table.schema.field("config.optim.name").type == pa.string()
    assert table.schema.field("config.tags").type == pa.string()  # lists as JSON text
    assert table.schema.field("summary.loss").type == pa.float64()
    assert "config.only_arm0" in table.column_names  # 2 of 6 runs ≥ the 25% share
    rows = table.to_pylist()
    assert sorted({r["config.optim.lr"] for r in rows}) == pytest.approx([1e-3, 2e-3, 3e-3])
    assert {r["config.tags"] for r in rows} == {'["x", "y"]'}
    assert sum(r["config.only_arm0"] is True for r in rows) == 2
    # seeds of one arm share a group; different arms do not
    groups = {}
    for r in rows:
        groups.setdefault(r["name"].rsplit("/", 1)[0], set()).add(r["seed_group"])
    assert all(len(g) == 1 and None not in g for g in groups.values())
    assert len({next(iter(g)) for g in groups.values()}) == len(groups)


def test_secrets_never_reach_the_dataset(fleet_inputs, tmp_path):
    out = tmp_path / "fleet"
    export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    for dirpath, _d, files in os.walk(out):
        for f in files:
            path = os.path.join(dirpath, f)
            assert SECRET.encode() not in Path(path).read_bytes(), path
            if f.endswith(".parquet"):
                text = json.dumps(pq.read_table(path).to_pylist(), default=str)
                assert SECRET not in text, path
    row = read_runs(str(out)).to_pylist()[0]
    assert json.loads(row["config_json"])["wandb"]["api_key"] == "***REDACTED***"
    assert json.loads(row["env_json"])["HF_TOKEN"] == "***REDACTED***"
    assert row["config.wandb.api_key"] == "***REDACTED***"


def test_second_export_skips_unchanged_runs_and_rewrites_only_what_changed(tmp_path):
    src = tmp_path / "runs"
    write_fleet(src, arms=2, seeds=2, running=("arm-1/seed-1",))
    out = tmp_path / "fleet"
    export_fleet([str(src)], str(out), workers=0, progress=False)
    files = part_files(out)
    again = export_fleet([str(src)], str(out), workers=0, progress=False)
    # finished runs with untouched files: not even loaded; the running one is re-read but its
    # points are identical, so its partition stays
    assert (again.skipped, again.unchanged, again.new, again.updated) == (3, 1, 0, 0)
    assert part_files(out) == files

    time.sleep(0.01)
    metrics = src / "arm-0" / "seed-1" / "metrics.jsonl"
    with open(metrics, "a") as fh:
        fh.write(json.dumps({"step": 9999, "loss": 0.001, "time": 1.8e9}) + "\n")
    third = export_fleet([str(src)], str(out), workers=0, progress=False)
    assert (third.updated, third.skipped, third.unchanged) == (1, 2, 1)
    now = part_files(out)
    changed = {k for k in files if files[k] != now[k]}
    assert changed == {k for k in files if "run_uid=" in k and _uid_of(src / "arm-0" / "seed-1") in k}
    pts = read_points(str(out), run_uids=[_uid_of(src / "arm-0" / "seed-1")]).to_pandas()
    assert_history_equal(pts, load_runs(f"journal:{src / 'arm-0' / 'seed-1'}")[0].history(),
                         ordered=True)
    assert ((pts["step"] == 9999.0) & (pts["value"] == 0.001)).sum() == 1

    full = export_fleet([str(src)], str(out), workers=0, progress=False, full=True)
    assert full.updated == 4 and full.skipped == 0

    lost = next(iter(part_files(out)))  # a partition deleted behind rundiff's back comes back
    os.remove(out / lost)
    healed = export_fleet([str(src)], str(out), workers=0, progress=False)
    assert healed.new == 1 and (out / lost).is_file()


def _uid_of(path: Path) -> str:
    return Run(address=f"journal:{path}", name="", run_id="", adapter="").uid


def test_new_seed_joins_its_arm_and_prune_drops_deleted_runs(tmp_path):
    src = tmp_path / "runs"
    write_fleet(src, arms=1, seeds=2)
    out = tmp_path / "fleet"
    export_fleet([str(src)], str(out), workers=0, progress=False)
    shutil.copytree(src / "arm-0" / "seed-1", src / "arm-0" / "seed-2")
    s = export_fleet([str(src)], str(out), workers=0, progress=False)
    assert (s.new, s.skipped) == (1, 2)
    rows = read_runs(str(out)).to_pylist()
    assert len({r["seed_group"] for r in rows}) == 1 and rows[0]["seed_group"] is not None

    shutil.rmtree(src / "arm-0" / "seed-0")
    kept = export_fleet([str(src)], str(out), workers=0, progress=False)
    assert kept.runs_in_dataset == 3  # without --prune a run that disappeared is kept
    pruned = export_fleet([str(src)], str(out), workers=0, progress=False, prune=True)
    assert (pruned.pruned, pruned.runs_in_dataset) == (1, 2)
    assert len(part_files(out)) == 2

    cfg = src / "arm-0" / "seed-2" / "config.yaml"  # listed but now unreadable: kept, not pruned
    cfg.unlink()
    cfg.mkdir()
    broken = export_fleet([str(src)], str(out), workers=0, progress=False, prune=True)
    assert (broken.failed, broken.pruned, broken.runs_in_dataset) == (1, 0, 2)
    assert len(part_files(out)) == 2


def test_a_failing_run_is_recorded_and_the_export_goes_on(fleet_inputs, tmp_path, capsys):
    bad = fleet_inputs / "arm-1" / "seed-0" / "config.yaml"
    bad.unlink()
    bad.mkdir()  # unreadable config: the journal reader raises IsADirectoryError
    boom = memory_run("boom", {"loss": ([0, 1], [1.0, 0.5])})
    boom.loader = lambda keys: (_ for _ in ()).throw(RuntimeError("tracker said 500"))
    fine = memory_run("fine", {"loss": ([0, 1], [1.0, 0.5])}, seed=3)
    out = tmp_path / "fleet"
    s = export_fleet([str(fleet_inputs), InMemorySource([boom, fine]), str(tmp_path / "nope")],
                     str(out), workers=0, progress=False)
    assert (s.failed, s.inputs_failed, s.new) == (2, 1, 6)
    reasons = dict(s.reasons())
    assert any(r.startswith("IsADirectoryError") for r in reasons)
    assert "RuntimeError: tracker said 500" in reasons
    assert any(r.startswith("InputError: no such file or directory") for r in reasons)
    errors = read_errors(str(out)).to_pylist()
    assert {(e["stage"], e["error_type"]) for e in errors} == {
        ("load", "IsADirectoryError"), ("history", "RuntimeError"), ("open", "InputError")}
    assert {r["name"] for r in read_runs(str(out)).to_pylist()} >= {"fine"}

    rc = main(["export", str(fleet_inputs), str(tmp_path / "nope"), "-o", str(out),
               "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 1
    assert "1 run(s) and 1 input(s) failed" in text and "IsADirectoryError" in text


def test_only_unusable_inputs_is_a_user_error(tmp_path, capsys):
    rc = main(["export", str(tmp_path / "nope"), "-o", str(tmp_path / "fleet"), "--no-progress"])
    assert rc == 2 and "no such file or directory" in capsys.readouterr().err


def test_refuses_a_foreign_folder_and_a_newer_schema(fleet_inputs, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(UsageError):
        export_fleet([str(fleet_inputs)], str(foreign), workers=0, progress=False)
    out = tmp_path / "fleet"
    export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["schema_version"] = SCHEMA_VERSION + 1
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="schema"):
        export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    with pytest.raises(InputError, match="schema"):
        load_runs(f"parquet:{out}")


def test_progress_hook_and_cli_json_summary(fleet_inputs, tmp_path, capsys):
    seen = []
    export_fleet([str(fleet_inputs)], str(tmp_path / "a"), workers=0,
                 progress=lambda done, total, failed: seen.append((done, total)))
    assert seen[0] == (1, 6) and (6, 6) in seen and seen[-1][0] == -1
    export_fleet([str(fleet_inputs)], str(tmp_path / "b"), workers=0, progress=True)  # rich bar
    capsys.readouterr()
    assert main(["export", str(fleet_inputs), "-o", str(tmp_path / "c"), "--format", "json",
                 "--workers", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["new"] == 6 and data["points_written"] == data["points_in_dataset"] > 0


@pytest.mark.slow
def test_interrupted_export_leaves_whole_partitions_and_recovers(tmp_path):
    """SIGKILL an export mid-way: every partition on disk is complete; a re-run finishes the job.
    The export pauses right after its 5th partition (fault injection) and is killed there."""
    from rundiff_core.fleet import faults

    src = tmp_path / "runs"
    write_fleet(src, arms=12, seeds=3, steps=300)
    out = tmp_path / "fleet"
    marker = tmp_path / "paused"
    code = ("import sys; from rundiff_core.fleet import export_fleet; "
            "export_fleet([sys.argv[1]], sys.argv[2], workers=0, progress=False)")
    env = {**os.environ, faults.ENV: f"points-written:5:{marker}"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(src), str(out)], env=env)
    try:
        point, pid = wait_for_pause(marker, lambda: proc.poll() is None)
        assert (point, pid) == ("points-written", proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    written = part_files(out)
    assert len(written) == 5, "killed right after the 5th partition"
    for rel in written:
        assert pq.ParquetFile(out / rel).metadata.num_rows > 0  # whole, readable files only
    s = export_fleet([str(src)], str(out), workers=0, progress=False)  # takes over the dead lock
    assert s.failed == 0 and s.runs_in_dataset == 36
    assert not (out / "_tmp").exists()
    fresh = tmp_path / "fresh"
    export_fleet([str(src)], str(fresh), workers=0, progress=False)
    a = read_points(str(out)).to_pandas().sort_values(["run_uid", "key", "step"]).reset_index(drop=True)
    b = read_points(str(fresh)).to_pandas().sort_values(["run_uid", "key", "step"]).reset_index(drop=True)
    assert a.equals(b)


def test_failed_write_keeps_the_old_partition(tmp_path, monkeypatch):
    src = tmp_path / "runs"
    write_fleet(src, arms=1, seeds=1)
    out = tmp_path / "fleet"
    export_fleet([str(src)], str(out), workers=0, progress=False)
    files = part_files(out)
    (rel,) = files
    old = pq.read_table(out / rel)
    with open(src / "arm-0" / "seed-0" / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps({"step": 10_000, "loss": 0.5}) + "\n")

    real = pq.write_table

    def torn(table, where, **kw):  # write half a file, then die like a full disk would
        if "key" not in table.column_names:  # only the points file's write fails
            return real(table, where, **kw)
        real(table.slice(0, 3), where, **kw)
        with open(where, "r+b") as fh:
            fh.truncate(100)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", torn)
    s = export_fleet([str(src)], str(out), workers=0, progress=False)
    monkeypatch.setattr(pq, "write_table", real)
    assert s.failed == 1 and "No space left" in s.failures[0]["message"]
    assert pq.read_table(out / rel).equals(old)
    assert list(_runs_by_uid(out).values())[0]["n_points"] == old.num_rows


def test_a_dataset_cannot_be_exported_into_itself(fleet_inputs, tmp_path):
    out = tmp_path / "fleet"
    export_fleet([str(fleet_inputs)], str(out), workers=0, progress=False)
    with pytest.raises(UsageError, match="being written"):
        export_fleet([f"parquet:{out}"], str(out), workers=0, progress=False)
    other = export_fleet([f"parquet:{out}#name=*arm-0*"], str(tmp_path / "copy"), workers=0,
                         progress=False)  # but into another folder it can (source "parquet")
    assert other.new == 2


def test_non_finite_config_and_summary_stay_strict_json_and_round_trip(tmp_path):
    diverged = memory_run("diverged", {"loss": ([0, 1, 2], [1.0, float("inf"), float("nan")])},
                          config={"clip": float("inf"), "name": "NaN-hunt"},
                          summary={"loss": float("nan")})
    fine = memory_run("fine", {"loss": ([0, 1], [1.0, 0.5])}, config={"clip": 1.0},
                      summary={"loss": 0.5})
    out = tmp_path / "fleet"
    export_fleet([InMemorySource([diverged, fine])], str(out), workers=0, progress=False)
    rows = {r["name"]: r for r in read_runs(str(out)).to_pylist()}
    for r in rows.values():
        json.loads(r["config_json"], parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert rows["diverged"]["config.clip"] == float("inf")
    assert rows["diverged"]["summary.loss"] != rows["diverged"]["summary.loss"]  # NaN, typed
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.connect().sql(
        f"SELECT name, json_extract_string(summary_json, '$.loss') FROM "
        f"'{out}/runs/part-0.parquet' ORDER BY name").fetchall()
    assert got == [("diverged", "NaN"), ("fine", "0.5")]
    back = {r.name: r for r in load_runs(f"parquet:{out}")}
    assert back["diverged"].config == {"clip": float("inf"), "name": "NaN-hunt"}
    assert back["diverged"].summary["loss"] != back["diverged"].summary["loss"]
    assert_history_equal(back["diverged"].history(), diverged.history(), ordered=True)
