"""The W&B adapter on local files: runs written by the real client, W&B's own compat logs, and
real run folders from the wild (tests/../shared/realdata), read back point by point."""

from __future__ import annotations

import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rundiff_adapters.wandb import framing
from rundiff_adapters.wandb.datastore import read_log
from wandb_frames import frame_log as _frame_log

from rundiff_core.cli import main as cli_main
from rundiff_core.demo import write_journal_run
from rundiff_core.detect import sniff_path
from rundiff_core.errors import InputError, RundiffError
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import (
    AdapterContract,
    CorruptRun,
    WrittenRun,
    assert_history_equal,
    hash_tree,
)

NAN, INF = float("nan"), float("inf")
SECRET = "k" * 40
COMPAT = "wandb-official-compat-logs/tests/assets/compat_logs/synthesized"
VST = "wandb-verysimpletransformer/wandb"


# -- runs written by the real client ------------------------------------------------------------
def _log_main_run(root: Path) -> dict:
    """One offline run with nested config, nested keys, NaN/±inf, text, a bool and explicit steps.

    Returns what a reader must get back. Steps: 40 auto-stepped rows (0–39), then explicit steps
    50, 60 and 61.
    """
    import wandb

    config = {"optim": {"lr": 0.001, "name": "adam"}, "layers": 4, "seed": 7, "wandb_api_key": SECRET}
    points: list[tuple[float, str, float]] = []
    t0 = time.time()
    run = wandb.init(project="rundiff-tests", dir=str(root), mode="offline", config=config,
                     name="main-run", group="g1", job_type="train", tags=["t1", "t2"],
                     settings=wandb.Settings(console="off", x_disable_stats=True))
    for i in range(40):
        row = {"loss": 1.0 / (i + 1), "train": {"acc": i / 40, "loss": 2.0 / (i + 1)}}
        if i == 5:
            row["loss"] = NAN
        if i in (6, 7):
            row["grad"] = INF if i == 6 else -INF
        if i % 10 == 0:
            row["eval/acc"] = 0.5 + i / 100
        if i == 0:
            row["phase"] = "warmup"  # text: not a point
        if i == 1:
            row["flag"] = True  # a boolean counts as 1
        run.log(row)
        points += [(i, "loss", row["loss"]), (i, "train/acc", i / 40), (i, "train/loss", 2.0 / (i + 1))]
        points += [(i, k, float(row[k])) for k in ("grad", "eval/acc", "flag") if k in row]
    run.log({"loss": 0.01}, step=50)
    run.log({"loss": 0.005, "lr": 1e-4}, step=60)
    run.log({"loss": 0.004}, step=61)
    points += [(50, "loss", 0.01), (60, "loss", 0.005), (60, "lr", 1e-4), (61, "loss", 0.004)]
    run.summary["best_loss"] = 0.004
    run_id = run.id
    run.finish()
    folder = glob.glob(str(root / "wandb" / f"offline-run-*-{run_id}"))[0]
    s, k, v = zip(*points, strict=True)
    return {"folder": folder, "id": run_id, "config": config, "history": make_history(s, k, v),
            "t0": t0, "t1": time.time()}


def _log_resumed_run(root: Path) -> str:
    """The same run id twice (offline resume writes a second folder, steps restart at 0)."""
    import wandb

    for base in (0, 100):
        run = wandb.init(project="rundiff-tests", dir=str(root), mode="offline", id="resumed1",
                         resume="allow", settings=wandb.Settings(console="off", x_disable_stats=True))
        for i in range(3):
            run.log({"x": base + i})
        run.finish()
    return str(root / "wandb")


@pytest.fixture(scope="module")
def client_runs(tmp_path_factory):
    pytest.importorskip("wandb")
    main_root = tmp_path_factory.mktemp("wandb-main")
    resumed_root = tmp_path_factory.mktemp("wandb-resumed")
    main = _log_main_run(main_root)
    main["root"] = str(main_root)
    main["resumed_root"] = _log_resumed_run(resumed_root)
    return main


class TestWandbContract(AdapterContract):
    adapter = "wandb"

    @pytest.fixture
    def written_run(self, client_runs) -> WrittenRun:
        config = dict(client_runs["config"])
        config.pop("wandb_api_key")  # checked redacted below, not round-tripped
        return WrittenRun(path=client_runs["folder"], address=f"wandb:{client_runs['folder']}",
                          history=client_runs["history"], config=config,
                          summary={"best_loss": 0.004, "loss": 0.004}, run_id=client_runs["id"],
                          check_wall_time=False)

    @pytest.fixture
    def corrupt_run(self, client_runs, tmp_path) -> CorruptRun:
        """A copy of the log cut in the middle of a record, as a live run's log looks."""
        src = glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]
        folder = tmp_path / f"offline-run-20250101_000000-{client_runs['id']}"
        folder.mkdir()
        data = Path(src).read_bytes()
        (folder / os.path.basename(src)).write_bytes(data[: len(data) - 37])
        return CorruptRun(f"wandb:{folder}", os.path.basename(src), expect=("torn end of log",))


# -- the client's run, beyond the contract ----------------------------------------------------------
def test_client_run_metadata_and_redaction(client_runs):
    run = load_run(client_runs["folder"])  # a bare run folder is sniffed
    assert run.adapter == "wandb" and run.run_id == client_runs["id"]
    assert run.name == "main-run" and run.status == "finished" and run.seed == 7
    assert run.config["optim"] == {"lr": 0.001, "name": "adam"}
    assert run.config["wandb_api_key"] == "***REDACTED***"
    assert run.meta["project"] == "rundiff-tests" and run.meta["group"] == "g1"
    assert run.meta["job_type"] == "train" and run.meta["tags"] == ["t1", "t2"]
    assert client_runs["t0"] - 5 <= run.meta["start_time"] <= client_runs["t1"]
    assert "_wandb" not in run.config and "_wandb" not in run.summary
    assert SECRET not in json.dumps(run.to_record(), default=str)
    assert any("non-numeric values not loaded as points: phase (1 text)" in n for n in run.fidelity)


def test_client_run_wall_times_and_steps(client_runs):
    h = load_run(f"wandb:{client_runs['folder']}").history()
    assert h["wall_time"].between(client_runs["t0"] - 5, client_runs["t1"] + 5).all()
    loss = h[h["key"] == "loss"]
    assert loss["step"].tolist() == [*range(40), 50, 60, 61]
    assert math.isnan(loss["value"].iloc[5]) and loss["value"].iloc[-1] == 0.004
    grad = h[h["key"] == "grad"]["value"].tolist()
    assert grad == [INF, -INF]
    assert h[h["key"] == "flag"]["value"].tolist() == [1.0]


def test_client_run_matches_wandbs_own_protobuf_classes(client_runs):
    """Every point as wandb's generated classes + json.loads decode it (the reference)."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    path = glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]
    framed = framing.frame(*_raw(path))
    steps, keys, values = [], [], []
    step = -1
    for s, e in zip(framed.starts.tolist(), framed.ends.tolist(), strict=True):
        rec = pb.Record()
        rec.ParseFromString(bytes(framed.buf[s:e]))
        if rec.WhichOneof("record_type") != "history":
            continue
        step = rec.history.step.num if rec.history.HasField("step") else step + 1
        for item in rec.history.item:
            key = "/".join(item.nested_key) or item.key
            value = json.loads(item.value_json)
            if key.startswith("_") or isinstance(value, str):
                continue
            steps.append(step)
            keys.append(key)
            values.append(float(value))
    run = load_run(f"wandb:{client_runs['folder']}")
    assert_history_equal(run.history(), make_history(steps, keys, values), check_wall_time=False)


def test_vector_walk_equals_record_by_record_decoding(client_runs, realdata):
    logs = [glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]]
    logs += sorted(glob.glob(str(realdata / VST / "*" / "*.wandb")))
    logs += sorted(glob.glob(str(realdata / COMPAT / "*" / "*.wandb")))
    for path in logs:
        fast, slow = read_log(path), read_log(path, vector=False)
        _same_log(fast, slow, path)
        assert fast.history.vector_rows == fast.history.rows, path  # the walk took every row


def _same_log(a, b, where):
    ha, hb = a.history, b.history
    assert ha.rows == hb.rows, where
    for col in ("record_step", "item_step", "wall_time", "value"):
        assert np.array_equal(getattr(ha, col), getattr(hb, col), equal_nan=True), (where, col)
    assert [ha.names[c] for c in ha.code] == [hb.names[c] for c in hb.code], where
    assert ha.row.tolist() == hb.row.tolist() and ha.ok.tolist() == hb.ok.tolist(), where
    assert sorted(ha.others) == sorted(hb.others), where
    assert {k: bytes(v) if v is not None else None for k, v in a.summary_updates.items()} == {
        k: bytes(v) if v is not None else None for k, v in b.summary_updates.items()}, where
    assert a.config_updates == b.config_updates and a.run == b.run and a.exit == b.exit, where


def test_summary_is_folded_only_when_read(client_runs):
    run = load_run(f"wandb:{client_runs['folder']}")
    assert "_summary_loader" in run.__dict__  # not folded by load_run
    assert run.summary["best_loss"] == 0.004 and run.summary["train"]["acc"] == pytest.approx(39 / 40)
    assert "_summary_loader" not in run.__dict__


def test_ls_lists_a_run_without_folding_its_summary(client_runs, monkeypatch):
    """ls shows keys, points and steps, never the summary: a W&B fold (half the work on a log of
    the current writer) must not run for it, as text or as JSON."""
    from rundiff_adapters.wandb import source as wsource

    from rundiff_core.commands import ls

    folds = []
    real = wsource._fold_summary
    monkeypatch.setattr(wsource, "_fold_summary", lambda *a, **k: folds.append(a) or real(*a, **k))
    rows, _headers = ls.listing([f"wandb:{client_runs['folder']}"])
    assert rows and rows[0]["points"] > 0 and "pass_k" not in rows[0]
    assert ls.text_lines(rows)
    assert folds == []
    run = load_run(f"wandb:{client_runs['folder']}")
    assert run.summary_deferred and run.summary["best_loss"] == 0.004 and not run.summary_deferred
    assert len(folds) == 1  # the same fold, when something does read the summary


def test_resumed_run_merges_its_sittings(client_runs):
    runs = load_runs(client_runs["resumed_root"])  # the wandb/ folder
    assert [r.run_id for r in runs] == ["resumed1"]
    run = runs[0]
    h = run.history()
    assert h["step"].tolist() == [0, 1, 2, 0, 1, 2]  # offline resume restarts at 0: kept, noted
    assert h["value"].tolist() == [0, 1, 2, 100, 101, 102]
    assert [e.kind for e in run.events] == ["resume"]
    assert any("2 sittings merged" in n for n in run.fidelity)
    assert any("steps overlap" in n for n in run.fidelity)
    one = sorted(glob.glob(os.path.join(client_runs["resumed_root"], "offline-run-*")))[1]
    assert load_run(one).address == run.address  # a later sitting's folder names the whole run


def test_sniffing_log_file_run_folder_and_project_root(client_runs):
    log = glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]
    assert sniff_path(log).spec.name == "wandb"
    claim = sniff_path(client_runs["root"])  # the folder that holds wandb/
    assert claim.spec.name == "wandb" and claim.claim.locator.endswith("wandb")
    assert load_run(log).history().shape[0] == len(client_runs["history"])


def test_read_only_on_a_wandb_folder(client_runs):
    before = hash_tree(client_runs["root"])
    for run in load_runs(client_runs["root"]):
        run.history()
        _ = run.summary
    assert hash_tree(client_runs["root"]) == before


def test_reader_needs_neither_wandb_nor_protobuf(client_runs):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('wandb', 'google'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from rundiff_core.resolve import load_run\n"
        f"run = load_run({client_runs['folder']!r})\n"
        "print(len(run.history()), run.summary['best_loss'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(len(client_runs["history"])), "0.004"]


# -- damage ----------------------------------------------------------------------------------------
def _raw(path: str) -> tuple[bytearray, int]:
    data = Path(path).read_bytes()
    raw = bytearray(len(data) + (1 << 16))
    raw[: len(data)] = data
    return raw, len(data)


def test_torn_tail_stops_at_the_last_whole_record(client_runs, tmp_path):
    src = glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]
    data = Path(src).read_bytes()
    full = read_log(src)
    for cut in (len(data) - 1, len(data) - 60, len(data) - 250):
        path = tmp_path / f"cut{cut}.wandb"
        path.write_bytes(data[:cut])
        log = read_log(str(path))
        assert log.stats.torn_records == 1 and log.stats.torn_tail_bytes > 0
        assert log.exit is None and log.history.rows <= full.history.rows
        run = load_run(str(path))
        assert any("torn end of log" in n for n in run.fidelity)
        assert run.status == "running"  # just written: a live run


def test_crc_mismatch_resumes_at_the_next_valid_chunk_and_counts(tmp_path):
    path = tmp_path / "big.wandb"
    records = [_history_record(i, {"x": str(i)}) for i in range(3000)]  # ~3 blocks
    path.write_bytes(_frame_log(records))
    data = bytearray(path.read_bytes())
    data[40_000] ^= 0xFF  # inside block 1: one record's chunk
    path.write_bytes(bytes(data))
    log = read_log(str(path))
    assert log.stats.corrupt_chunks == 1 and 0 < log.stats.corrupt_bytes < 100  # that chunk alone
    steps = log.history.record_step
    assert log.history.rows == 2999 and steps[0] == 0 and steps[-1] == 2999  # read past it
    run = load_run(str(path))
    (a, b), = log.stats.damage[0].ranges
    assert a <= 40_000 < b
    assert any(f"bytes {a:,}–{b:,} unreadable ({b - a} byte(s)" in n for n in run.fidelity)


def test_not_a_log_is_an_input_error(tmp_path):
    bad = tmp_path / "run-x.wandb"
    bad.write_bytes(b"not a wandb log at all")
    with pytest.raises(InputError):
        load_run(f"wandb:{bad}").history()
    short = tmp_path / "run-y.wandb"
    short.write_bytes(b":W&B")
    with pytest.raises(RundiffError):
        load_run(f"wandb:{short}").history()


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_run(f"wandb:{tmp_path / 'nope' / 'run-x.wandb'}")


# -- shapes the current client does not write (newer/older writers) ----------------------------------
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(no: int, payload: bytes) -> bytes:
    return _varint(no << 3 | 2) + _varint(len(payload)) + payload


def _history_record(step: int | None, items: dict[str, str], *, flat: bool = False,
                    typed: dict[str, float] | None = None) -> bytes:
    body = b""
    for key, value in items.items():
        parts = [key] if flat else key.split("/")
        keys = b"".join(_field(1 if flat else 2, p.encode()) for p in parts)
        body += _field(1, keys + _field(16, value.encode()))
    for key, number in (typed or {}).items():  # HistoryItem.number (field 6, a double)
        body += _field(1, _field(2, key.encode()) + _varint(6 << 3 | 1) + struct.pack("<d", number))
    if step is not None:
        body += _field(2, b"\x08" + _varint(step) if step else b"")
    return _varint(1 << 3) + _varint(7) + _field(2, body)




def test_unusual_item_shapes_mix_with_the_usual_ones(tmp_path):
    records = [
        _history_record(0, {"loss": "1.5", "_timestamp": "1700000000.5"}),
        _history_record(1, {"loss": "1.25"}, flat=True),  # flat `key` (pre-core writers)
        _history_record(2, {"a/b/c": "3", "loss": "1.0"}),  # a three-part nested key
        _history_record(3, {"loss": "0.5"}, typed={"typed": 2.5}),  # typed value: newer writers
        _history_record(None, {"loss": "NaN", "note": '"' + "x" * 300 + '"'}),  # long value
        _history_record(2**63 + 5, {"loss": "0.25"}),  # a negative step (10-byte varint)
        _history_record(7, {"k" * 200: "7"}),  # a key longer than 127 bytes
    ]
    path = tmp_path / "shapes.wandb"
    path.write_bytes(_frame_log(records))
    fast, slow = read_log(str(path)), read_log(str(path), vector=False)
    _same_log(fast, slow, "shapes")
    assert 0 < fast.history.vector_rows < fast.history.rows  # both paths were used
    h = load_run(str(path)).history()
    got = sorted(zip(h["step"], h["key"].astype(str), h["value"], strict=True),
                 key=lambda t: (t[0], t[1]))
    assert [t for t in got if t[0] >= 0][:6] == [
        (0.0, "loss", 1.5), (1.0, "loss", 1.25), (2.0, "a/b/c", 3.0), (2.0, "loss", 1.0),
        (3.0, "loss", 0.5), (3.0, "typed", 2.5)]
    assert (4.0, "loss") in {(s, k) for s, k, _v in got}  # no step: previous + 1
    assert (float(-(2**63) + 5), "loss", 0.25) in got
    assert (7.0, "k" * 200, 7.0) in got
    assert h["wall_time"].iloc[0] == 1700000000.5


# -- W&B's own compat logs ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("case", "steps", "note"),
    [
        ("old_auto_steps", [0, 1, 2], None),
        ("old_auto_steps_flat_keys", [0, 1, 2], None),
        ("old_explicit_steps", [0, 5, 10], None),
        ("new_explicit_steps", [0, 5, 10], None),
        ("new_auto_steps", [0, 1, 2], "rows carry no step"),
        ("old_shared_mode", [0, 1], "rows carry no step"),
        ("new_shared_mode", [0, 1], "rows carry no step"),
        ("old_resumed_run", [5, 6, 7], None),
        ("new_resume_mode", [0, 1, 2], "resume mode with no steps"),
    ],
)
def test_compat_logs_step_encodings(realdata, case, steps, note):
    run = load_run(str(realdata / COMPAT / f"offline-run-{case}"))
    h = run.history()
    assert run.run_id == case and run.status == "finished"
    assert h["key"].astype(str).unique().tolist() == ["x"]
    assert h["step"].tolist() == steps
    assert h["value"].tolist() == list(range(len(steps)))
    if note:
        assert any(note in n for n in run.fidelity), run.fidelity
    if case == "old_resumed_run":
        assert [(e.kind, e.step) for e in run.events] == [("resume", 5)]


def test_compat_log_bad_step_types_are_counted(realdata):
    run = load_run(str(realdata / COMPAT / "offline-run-old_bad_step_types"))
    assert len(run.history()) == 0  # the rows hold nothing but _step
    note = next(n for n in run.fidelity if "_step that is not a number" in n)
    assert note.startswith("5 history row(s)")
    for kind in ("1 text", "1 null", "1 bool", "1 object", "1 list"):
        assert kind in note


def test_compat_log_without_history_keeps_its_summary(realdata):
    run = load_run(str(realdata / COMPAT / "offline-run-old_no_history"))
    assert run.history().empty and run.summary == {"score": 1.0} and run.status == "finished"


# -- real run folders from the wild ------------------------------------------------------------------
def test_realdata_wandb_folder_lists_every_run(realdata):
    runs = load_runs(str(realdata / VST.rsplit("/", 1)[0]))  # the project folder holding wandb/
    assert [r.run_id for r in runs] == ["u1c25l6f", "xpeipnem", "t2wihhdg", "ruzz7bps", "9fdufjz8"]
    assert {r.meta["project"] for r in runs} == {"Lion and Adam"}


def test_realdata_crashed_run_without_history(realdata):
    run = load_run(str(realdata / VST / "run-20230329_014841-u1c25l6f"))
    assert run.status == "crashed" and run.history().empty
    assert any("exited with code 1" in n for n in run.fidelity)
    assert any("no history" in n for n in run.fidelity)
    assert run.config["optimizer"] == {"bs": 4, "lr": 0.0003, "method": "adam_torch"}
    assert run.seed == 67 and run.env["program"] == "main.py"


def _aged_copy(realdata, tmp_path, folder, age_seconds):
    """A copy of a realdata run whose files were last written `age_seconds` ago.

    A log without an exit record is "running" while recently written and "unknown" after; a fresh
    copy of shared/ (as CI makes) would otherwise look live, so tests set the age they mean.
    """
    dst = tmp_path / "wandb" / folder
    shutil.copytree(realdata / VST / folder, dst)
    t = time.time() - age_seconds
    for d, _dirs, files in os.walk(dst):
        for f in files:
            os.utime(os.path.join(d, f), (t, t))
    return dst


def test_realdata_cut_log_is_running_only_while_recently_written(realdata, tmp_path):
    fresh = load_run(str(_aged_copy(realdata, tmp_path / "a", "run-20230329_021634-9fdufjz8", 5)))
    assert fresh.status == "running"
    assert any("no exit record yet: the run is still writing its log" in n for n in fresh.fidelity)


def test_realdata_log_cut_mid_run_reports_both(realdata, tmp_path):
    run = load_run(str(_aged_copy(realdata, tmp_path, "run-20230329_021634-9fdufjz8", 86400)))
    h = run.history()
    assert run.status == "unknown"
    assert set(h["key"].astype(str)) == {"lr", "train_loss_local", "grad_norm_square"}
    assert h["step"].max() == 4111 and len(h) == 3 * 4112
    notes = " | ".join(run.fidelity)
    assert "torn end of log: the last 193 byte(s) hold 1 record(s)" in notes
    assert "no exit record: the log ends in a torn record at step 4111" in notes
    assert "wandb-summary.json claims step 62509 but the log holds history only to step 4111" in notes


def test_realdata_full_run_point_by_point(realdata):
    """t2wihhdg: 2,912 rows written by wandb 0.14, against wandb's protobuf classes."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    folder = realdata / VST / "run-20230329_015729-t2wihhdg"
    framed = framing.frame(*_raw(glob.glob(str(folder / "*.wandb"))[0]))
    steps, keys, values, walls = [], [], [], []
    for s, e in zip(framed.starts.tolist(), framed.ends.tolist(), strict=True):
        rec = pb.Record()
        rec.ParseFromString(bytes(framed.buf[s:e]))
        if rec.WhichOneof("record_type") == "history":
            row = {it.key: json.loads(it.value_json) for it in rec.history.item}
            for k, v in row.items():
                if not k.startswith("_"):
                    steps.append(row["_step"])
                    keys.append(k)
                    values.append(v)
                    walls.append(row["_timestamp"])
    run = load_run(str(folder))
    assert run.status == "crashed" and len(values) == 3 * 2912
    assert_history_equal(run.history(), make_history(steps, keys, values, walls))


def test_realdata_is_read_only(realdata, tmp_path):
    copy = tmp_path / "vst"
    shutil.copytree(realdata / VST, copy)
    before = hash_tree(copy)
    for run in load_runs(str(copy)):
        run.history()
        _ = run.summary
    assert hash_tree(copy) == before


# -- the command line, across backends ----------------------------------------------------------------
def test_cli_ls_and_diff_against_a_journal_run(client_runs, tmp_path, capsys):
    journal = write_journal_run(
        str(tmp_path / "journal" / "seed-0"), config={"optim": {"lr": 0.003, "name": "adam"}, "layers": 4},
        rows=[{"step": i, "loss": 2.0 / (i + 1)} for i in range(62)], final={"loss": 2 / 62}, seed=0)
    assert cli_main(["ls", client_runs["folder"], "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["adapter"] == "wandb" and listed[0]["points"] == len(client_runs["history"])
    assert cli_main(["diff", client_runs["folder"], journal, "--metric", "loss", "--format", "json"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert SECRET not in out
    assert "optim.lr" in json.dumps(result)
    assert cli_main(["diff", f"wandb:{client_runs['folder']}", journal, "--metric", "loss"]) == 0
    assert "loss" in capsys.readouterr().out


def test_damaged_records_decode_the_same_both_ways(client_runs, tmp_path):
    """Flip bytes inside history/summary records (CRCs recomputed, so framing cannot catch it):
    the vector walk must agree with the record-by-record decoder, and nothing may raise."""
    src = glob.glob(os.path.join(client_runs["folder"], "*.wandb"))[0]
    framed = framing.frame(*_raw(src))
    payloads = [bytes(framed.buf[s:e]) for s, e in zip(framed.starts.tolist(), framed.ends.tolist(),
                                                        strict=True)]
    rng = np.random.default_rng(7)
    for trial in range(24):
        damaged = []
        for p in payloads:
            if len(p) > 6 and rng.random() < (0.05, 0.3, 0.8)[trial % 3]:
                b = bytearray(p)
                for _ in range(int(rng.integers(1, 5))):
                    b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
                if rng.random() < 0.1:  # and sometimes cut short
                    b = b[: int(rng.integers(1, len(b)))]
                p = bytes(b)
            damaged.append(p)
        path = tmp_path / f"damaged{trial}.wandb"
        path.write_bytes(_frame_log(damaged))
        fast, slow = read_log(str(path)), read_log(str(path), vector=False)
        _same_log(fast, slow, f"trial {trial}")
        load_run(str(path)).history()


def test_project_detection_local_folder_then_environment(client_runs, tmp_path):
    from rundiff_core.detect import detect_project

    def wandb_claims(cwd, env):
        return [c for c, spec in detect_project(cwd=str(cwd), environ=env) if spec.name == "wandb"]

    (claim,) = wandb_claims(client_runs["root"], {})
    assert claim.address == f"wandb:{os.path.join(client_runs['root'], 'wandb')}"
    (claim,) = wandb_claims(tmp_path, {"WANDB_ENTITY": "ent", "WANDB_PROJECT": "proj"})
    assert claim.address == "wandb:ent/proj"
    (claim,) = wandb_claims(tmp_path, {"WANDB_API_KEY": SECRET})
    assert claim.address is None and SECRET not in claim.reason
    assert wandb_claims(tmp_path, {}) == []


def test_a_missing_local_path_is_not_sent_to_a_server(tmp_path):
    for locator in ("wandb/offline-run-20250101_000000-abc12345", "./runs/x", "some/where/run-x.wandb"):
        with pytest.raises(InputError) as err:
            load_run(f"wandb:{locator}")
        assert "no such W&B run" in str(err.value)


@pytest.mark.parametrize(("folder", "status", "rows", "code", "summary_step"), [
    ("run-20230329_014841-u1c25l6f", "crashed", 0, 1, None),
    ("run-20230329_014920-xpeipnem", "crashed", 1, 1, 0),
    ("run-20230329_015729-t2wihhdg", "crashed", 2912, 255, 2911),
    ("run-20230329_020146-ruzz7bps", "crashed", 1750, 255, 1749),
    ("run-20230329_021634-9fdufjz8", "unknown", 4112, None, 62509),  # wandb-summary.json's claim
])
def test_realdata_each_run(realdata, tmp_path, folder, status, rows, code, summary_step):
    run = load_run(f"wandb:{_aged_copy(realdata, tmp_path, folder, 86400)}")
    h = run.history()
    assert run.status == status and len(h) == 3 * rows
    assert (run.meta.get("exit") or {}).get("exit_code") == code
    if rows:
        assert h["step"].tolist()[::3] == list(range(rows)) and h["wall_time"].notna().all()
    assert run.summary.get("_step") == summary_step


def test_run_folder_without_its_log_reads_files(realdata, tmp_path):
    folder = tmp_path / "wandb" / "run-20230329_015729-t2wihhdg"
    shutil.copytree(realdata / VST / "run-20230329_015729-t2wihhdg" / "files", folder / "files")
    (run,) = load_runs(str(tmp_path))
    assert run.run_id == "t2wihhdg" and run.history().empty
    assert run.config["optimizer"]["method"] and run.summary["_step"] == 2911
    assert any("no .wandb transaction log" in n for n in run.fidelity)


def test_secret_command_line_arguments_are_hidden():
    # wandb keeps the command line in env["args"]; the core's redaction (applied to every run a
    # source lets out) hides the value after a secret-named flag
    from rundiff_core.redact import redact

    args = ["--lr", "0.1", "--api-key", SECRET, "--wandb_token", "t0k", "--name", "x"]
    assert redact({"args": args})["args"] == ["--lr", "0.1", "--api-key", "***REDACTED***",
                                              "--wandb_token", "***REDACTED***", "--name", "x"]
