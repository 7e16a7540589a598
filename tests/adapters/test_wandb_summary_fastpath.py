"""The W&B summary fold without per-record Python: identical to the record-by-record fold, and taken.

The newest wandb (its Go core) writes a summary record after almost every history row, and every
`run.summary[k] = v` / `del run.summary[k]` of the user's process as a record whose `_info` comes
before its summary. The fold must read all of them at once (`_summary_fold_vec`) and give exactly
what `_summary_fold_py`, the reference, gives: the same keys in the same order with the same value
bytes, removals included, and the same count of unreadable records.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rundiff_adapters.wandb import datastore, framing, vector
from rundiff_adapters.wandb.datastore import read_log
from rundiff_adapters.wandb.reader import summary_of
from wandb_frames import frame_log as _frame_log

from rundiff_core.resolve import load_run

ROWS = 2000
COMPAT = "wandb-official-compat-logs/tests/assets/compat_logs/synthesized"
VST = "wandb-verysimpletransformer/wandb"
OLD_WRITER = Path(__file__).resolve().parents[1] / "fixtures" / "wandb-old-writer"
LONG_KEY = "k" * 150  # a key part longer than 127 bytes: two-byte length


def _write_current_writer_log(root: Path) -> dict:
    """2,000 rows by the installed wandb, offline, with what training scripts do to the summary."""
    import wandb

    run = wandb.init(project="rundiff-fastpath", dir=str(root), mode="offline",
                     config={"lr": 1e-3}, settings=wandb.Settings(console="off", x_disable_stats=True))
    run.define_metric("val/loss", summary="min")
    for i in range(ROWS):
        row = {"loss": 1.0 / (i + 1), "train": {"acc": i / ROWS, "deep": {"x": i}}}
        if i % 100 == 0:
            row["val/loss"] = 2.0 / (i + 1)
            row["note"] = f"epoch {i // 100}"
        if i % 250 == 0:
            row[LONG_KEY] = i
        run.log(row)
        if i % 50 == 0:
            run.summary["best"] = {"loss": 1.0 / (i + 1), "at": {"row": i}}  # a nested dict
            run.summary["tmp"] = i
            run.summary[LONG_KEY + "_summary"] = i
        if i % 50 == 25:
            del run.summary["tmp"]  # a removal record
    run.summary["tmp"] = "set again, then removed at the end"
    del run.summary["tmp"]
    run.summary["flag"] = True
    run_id = run.id
    run.finish()
    folder = glob.glob(str(root / "wandb" / f"offline-run-*-{run_id}"))[0]
    log = glob.glob(os.path.join(folder, "*.wandb"))[0]
    _wait_until_written(log)
    return {"folder": folder, "log": log}


def _wait_until_written(path: str, timeout: float = 60.0) -> None:
    """wandb-core may still be writing the log's tail when `run.finish()` returns: wait for the
    exit record and a size that holds still."""
    deadline = time.monotonic() + timeout
    size = -1
    while time.monotonic() < deadline:
        now = os.path.getsize(path)
        if now == size and read_log(path, history=False, summary=False).exit is not None:
            return
        size = now
        time.sleep(0.3)
    raise AssertionError(f"{path} still being written after {timeout:.0f} s")


@pytest.fixture(scope="module")
def current_log(tmp_path_factory):
    pytest.importorskip("wandb")
    return _write_current_writer_log(tmp_path_factory.mktemp("wandb-fastpath"))


def _items(log) -> list:
    return [(k, None if v is None else bytes(v)) for k, v in log.summary_updates.items()]


def _same_fold(path: str) -> tuple:
    """Fast fold (the default) and the record-by-record reference agree, order included, and so
    do the counts of unreadable records (of a whole read: the reference decodes every record)."""
    fast = read_log(path, history=False)
    ref = read_log(path, vector=False)
    assert _items(fast) == _items(ref), path
    assert summary_of(fast.summary_updates) == summary_of(ref.summary_updates), path
    assert read_log(path).stats == ref.stats, path
    return fast, ref


def _real_logs(realdata: Path) -> list[str]:
    logs = sorted(glob.glob(str(realdata / VST / "*" / "*.wandb")))
    logs += sorted(glob.glob(str(realdata / COMPAT / "*" / "*.wandb")))
    assert logs
    return logs


def _old_writer_log() -> str:
    logs = glob.glob(str(OLD_WRITER / "offline-run-*" / "*.wandb"))
    assert len(logs) == 1 and (OLD_WRITER / "VERSION").read_text().startswith("wandb==0.16")
    return logs[0]


# -- identical to the full fold ----------------------------------------------------------------
def test_current_writer_log_folds_identically(current_log):
    fast, _ref = _same_fold(current_log["log"])
    assert fast.record_counts["summary"] >= ROWS  # a summary record after every row
    updates = {k: v for k, v in fast.summary_updates.items()}
    assert updates[("tmp",)] is None  # removed last
    assert updates[("loss",)] == str(1.0 / ROWS).encode()
    summary = summary_of(fast.summary_updates)
    assert summary["train"] == {"acc": (ROWS - 1) / ROWS, "deep": {"x": ROWS - 1}}
    assert summary["best"]["at"] == {"row": 1950} and summary["flag"] is True
    assert summary[LONG_KEY] == 1750 and summary[LONG_KEY + "_summary"] == 1950
    assert "tmp" not in summary


def test_chunk_boundaries_change_nothing(current_log, realdata, monkeypatch):
    """Records are folded a chunk at a time: tiny chunks split every record group."""
    monkeypatch.setattr(datastore, "SUMMARY_CHUNK", 7)
    for path in [current_log["log"], _old_writer_log(), *_real_logs(realdata)]:
        _same_fold(path)


def test_real_logs_fold_identically(realdata):
    for path in _real_logs(realdata):
        _same_fold(path)


def test_old_writer_fixture_folds_identically():
    fast, _ref = _same_fold(_old_writer_log())
    summary = summary_of(fast.summary_updates)
    assert summary["eval"] == {"acc": 0.86, "detail": {"n": 360}} and summary["final"] is True
    assert "tmp" not in summary and summary["_step"] == 1399


def test_run_summary_equals_the_reference_fold(current_log, realdata):
    """What a user reads (`run.summary`, folded lazily) is the reference fold's summary."""
    for folder, log in [(current_log["folder"], current_log["log"])] + [
            (os.path.dirname(p), p) for p in sorted(glob.glob(str(realdata / VST / "*" / "*.wandb")))]:
        ref = read_log(log, history=False, vector=False)
        if not ref.record_counts.get("summary"):
            continue  # a log cut before its summary: wandb-summary.json answers (tested elsewhere)
        run = load_run(folder)
        assert "_summary_loader" in run.__dict__, folder  # still folded only when read
        assert run.summary == summary_of(ref.summary_updates), folder


def test_the_lazy_fold_reads_only_the_summary_payloads_the_first_read_located(current_log, realdata,
                                                                            monkeypatch):
    """After the history read, `run.summary` folds the summary payloads at the offsets that read
    found — the file read again, but not framed or typed again — including payloads of records
    that spanned chunks (their joined bytes are kept): the same summary as the reference."""
    logs = [(current_log["folder"], current_log["log"])] + [
        (os.path.dirname(p), p) for p in sorted(glob.glob(str(realdata / VST / "*" / "*.wandb")))]
    spanned = 0
    for folder, log in logs:
        ref = read_log(log, history=False, vector=False)
        if not ref.record_counts.get("summary"):
            continue
        first = read_log(log, summary=False)
        s, e, joined = first.summary_payloads
        spanned += int((e > os.path.getsize(log)).sum())
        run = load_run(folder)
        run.history()
        framed: list[int] = []
        real_frame = datastore.frame

        def counted(*a, _calls=framed, _frame=real_frame, **k):
            _calls.append(1)
            return _frame(*a, **k)

        monkeypatch.setattr(datastore, "frame", counted)
        assert run.summary == summary_of(ref.summary_updates), folder
        assert framed == [], folder  # no second framing pass
        monkeypatch.setattr(datastore, "frame", real_frame)
    assert spanned > 0  # the joined-bytes path was exercised


def test_a_prefaulted_read_buffer_decodes_exactly_as_a_plain_one(current_log, monkeypatch):
    """Logs over 1 MiB are read into memory mapped with its pages made up front (mmap, not
    bytearray): history, summary (eager and lazy) and counts are the same either way."""
    import mmap

    def decoded():
        log = read_log(current_log["log"])
        lazy = read_log(current_log["log"], summary=False)
        folded = datastore.fold_summary_at(current_log["log"], lazy.summary_payloads, lazy.verified)
        h = log.history
        columns = [getattr(h, c).tobytes() for c in
                   ("record_step", "item_step", "wall_time", "row", "code", "value", "ok")]
        return (_items(log), log.record_counts, h.rows, h.names, h.others, columns, log.stats,
                [(k, None if v is None else bytes(v)) for k, v in folded.items()])

    monkeypatch.setattr(datastore, "PREFAULT_ABOVE", 1 << 40)
    assert isinstance(datastore._zeroed(4 << 20), bytearray)
    plain = decoded()
    monkeypatch.setattr(datastore, "PREFAULT_ABOVE", 0)
    if getattr(mmap, "MAP_POPULATE", 0):
        assert isinstance(datastore._zeroed(4 << 20), mmap.mmap)
    assert decoded() == plain
    assert plain[-1] == plain[0]


# -- the fast path is taken ----------------------------------------------------------------------
def _no_reference_fold(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("the record-by-record summary fold ran")

    monkeypatch.setattr(datastore, "_summary_fold_py", refuse)


def test_fast_path_is_taken_on_the_current_writers_log(current_log, monkeypatch):
    _no_reference_fold(monkeypatch)
    log = read_log(current_log["log"], history=False)
    assert log.summary_records_one_by_one == 0  # every summary record walked at once
    assert log.summary_updates[("flag",)] == b"true"
    run = load_run(current_log["folder"])
    assert run.summary["flag"] is True
    full = read_log(current_log["log"])
    assert full.history.vector_rows == full.history.rows  # and every history row


def test_fast_path_is_taken_on_the_old_writers_and_real_logs(realdata, monkeypatch):
    _no_reference_fold(monkeypatch)
    for path in [_old_writer_log(), *_real_logs(realdata)]:
        log = read_log(path, history=False)
        assert log.summary_records_one_by_one == 0, path


# -- hand-made records: shapes the writers may produce -------------------------------------------


def _summary(num: int, updates=(), removes=(), *, info_first: bool = False) -> bytes:
    """A Record{num, summary}; `info_first` puts Record._info before the summary, as Go does."""
    from wandb.proto import wandb_internal_pb2 as pb

    def item(key):
        it = pb.SummaryItem()
        if isinstance(key, tuple):
            it.nested_key.extend(key)
        else:
            it.key = key
        return it

    s = pb.SummaryRecord()
    for key, value in updates:
        it = item(key)
        it.value_json = value
        s.update.append(it)
    for key in removes:
        s.remove.append(item(key))
    body = s.SerializeToString()
    head = pb.Record(num=num).SerializeToString()
    info = b""
    if info_first:
        rec = pb.Record()
        rec._info.stream_id = "abc"  # Record._info: field 200, written ahead of the summary here
        info = rec.SerializeToString()
    return head + info + b"\x1a" + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _raw_item(key, value: bytes | None = None) -> bytes:
    """A SummaryItem's bytes: `key` (str) or `nested_key` parts (tuple), then value_json."""
    parts = key if isinstance(key, tuple) else (key,)
    tag = 0x12 if isinstance(key, tuple) else 0x0A
    out = b"".join(bytes([tag]) + _varint(len(p.encode())) + p.encode() for p in parts)
    if value is not None:
        out += b"\x82\x01" + _varint(len(value)) + value
    return out


def _raw_summary(num: int, fields: list[tuple[str, object, bytes | None]]) -> bytes:
    """A summary record with its fields in the given wire order: ("update"|"remove", key, value)."""
    body = b""
    for op, key, value in fields:
        it = _raw_item(key, value)
        body += (b"\x0a" if op == "update" else b"\x12") + _varint(len(it)) + it
    return b"\x08" + _varint(num) + b"\x1a" + _varint(len(body)) + body


def test_removals_apply_after_updates_whatever_the_wire_order(tmp_path, monkeypatch):
    """Within a record wandb applies updates, then removals: a removal written first still wins
    over the record's update of the same key, and keys are ordered by that application order."""
    deep = ("q",) * 12  # nested deeper than the walk follows: that record is decoded one by one
    records = [
        _raw_summary(1, [("update", "a", b"1"), ("update", "b", b"1")]),
        _raw_summary(2, [("remove", "a", None), ("update", "a", b"2"), ("update", "c", b"3")]),
        _raw_summary(3, [("remove", "b", None), ("update", "b", b"5"), ("update", deep, b"4"),
                         ("update", "d", b"6")]),
    ]
    path = tmp_path / "order.wandb"
    path.write_bytes(_frame_log(records))
    monkeypatch.setattr(datastore, "SUMMARY_CHUNK", 2)  # and across a chunk boundary
    fast, _ref = _same_fold(str(path))
    assert fast.summary_records_one_by_one == 1
    assert _items(fast) == [(("c",), b"3"), (("a",), None), (deep, b"4"), (("d",), b"6"),
                            (("b",), None)]


def test_hand_made_summary_shapes(tmp_path):
    pytest.importorskip("wandb")
    records = [
        _summary(1, [("a", "1"), (("b", "c"), "2"), ("gone", "0")]),
        _summary(2, [(("a",), "3")]),  # nested ["a"] is the flat key "a": one key
        _summary(3, [("x", "1")], removes=["x"]),  # updated and removed in one record: removed
        _summary(4, [("y", "1")], removes=[("gone",)], info_first=True),
        _summary(5, [(("p",) * 12, "9")]),  # nested deeper than the walk follows: one by one
        _summary(6, [("l" * 300, "7"), ("v", '"' + "w" * 400 + '"')]),  # two-byte lengths
        _summary(7, [(("b", "c"), "4")]),
        _summary(7, [(("b", "c"), "4")]),  # a byte-identical repeat
        _summary(8, removes=[("y",)]),
    ]
    path = tmp_path / "shapes.wandb"
    path.write_bytes(_frame_log(records))
    fast, _ref = _same_fold(str(path))
    assert fast.summary_records_one_by_one == 1  # only the twelve-part key; `_info` first is walked
    assert _items(fast) == [
        (("a",), b"3"), (("x",), None), (("gone",), None), (("p",) * 12, b"9"),
        (("l" * 300,), b"7"), (("v",), ('"' + "w" * 400 + '"').encode()), (("b", "c"), b"4"),
        (("y",), None)]


def test_damaged_summary_records_decode_the_same_both_ways(current_log, tmp_path, monkeypatch):
    """Flip bytes inside records (CRCs recomputed, so framing cannot catch it), repeats included:
    the fast fold must agree with the reference, damage counts too, and nothing may raise."""
    raw = Path(current_log["log"]).read_bytes()
    buf = bytearray(len(raw) + (1 << 16))
    buf[: len(raw)] = raw
    framed = framing.frame(buf, len(raw))
    payloads = [bytes(framed.buf[s:e]) for s, e in zip(framed.starts.tolist(), framed.ends.tolist(),
                                                        strict=True)]
    payloads = payloads[:300] + payloads[-300:]
    rng = np.random.default_rng(11)
    for trial in range(24):
        damaged = []
        for p in payloads:
            if len(p) > 6 and rng.random() < (0.05, 0.3, 0.8)[trial % 3]:
                b = bytearray(p)
                for _ in range(int(rng.integers(1, 5))):
                    b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
                if rng.random() < 0.1:
                    b = b[: int(rng.integers(1, len(b)))]
                p = bytes(b)
            damaged.append(p)
            if rng.random() < 0.05:
                damaged.append(p)  # the same bytes again: a repeat, damaged or not
        path = tmp_path / f"damaged{trial}.wandb"
        path.write_bytes(_frame_log(damaged))
        monkeypatch.setattr(datastore, "SUMMARY_CHUNK", 5 if trial % 2 else 1 << 16)
        _same_fold(str(path))


# -- the lazy summary's second pass over the log -------------------------------------------------
def test_the_second_pass_trusts_only_bytes_it_checked(current_log, tmp_path, monkeypatch):
    """The summary is folded by a second read of the log; its chunk CRCs are not computed again
    when the file still has the stamp it had when the first read checked them all clean. Any
    change of the stamp (here: one byte flipped in place and a new mtime) checks them again."""
    path = tmp_path / "run.wandb"
    path.write_bytes(Path(current_log["log"]).read_bytes())
    first = read_log(str(path), summary=False)
    assert first.verified is not None
    calls = []
    real = framing.crc_failures
    monkeypatch.setattr(framing, "crc_failures", lambda *a: calls.append(1) or real(*a))
    trusted = read_log(str(path), history=False, verified=first.verified)
    assert calls == [] and _items(trusted) == _items(read_log(str(path), vector=False))

    data = bytearray(path.read_bytes())
    at = data.rindex(b'"set again')  # inside a summary record near the end
    data[at + 1] ^= 0x20
    st = os.stat(path)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    checked = read_log(str(path), history=False, verified=first.verified)
    assert calls and checked.stats.corrupt_chunks == 1
    assert _items(checked) == _items(read_log(str(path), vector=False))


def test_run_summary_after_the_log_changed_is_read_from_the_new_bytes(current_log, tmp_path):
    folder = tmp_path / os.path.basename(current_log["folder"])
    shutil.copytree(current_log["folder"], folder)
    log = folder / os.path.basename(current_log["log"])
    run = load_run(str(folder))
    data = bytearray(log.read_bytes())
    at = data.rindex(b'"set again')
    data[at + 1] ^= 0x20
    st = os.stat(log)
    log.write_bytes(bytes(data))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert run.summary == summary_of(read_log(str(log), vector=False).summary_updates)


def test_old_writers_history_is_walked_and_equals_the_record_by_record_decoding():
    """wandb 0.16 writes flat `key` items: the walk takes them as its usual shape."""
    path = _old_writer_log()
    fast, slow = read_log(path), read_log(path, vector=False)
    assert fast.history.vector_rows == fast.history.rows == 400
    for col in ("record_step", "item_step", "wall_time", "value", "row", "ok"):
        assert np.array_equal(getattr(fast.history, col), getattr(slow.history, col),
                              equal_nan=True), col
    assert [fast.history.names[c] for c in fast.history.code] == \
        [slow.history.names[c] for c in slow.history.code]
    assert sorted(fast.history.others) == sorted(slow.history.others)


def _history_of(log) -> dict:
    h = log.history
    return {"rows": h.rows, "names": list(h.names), "code": h.code.tolist(), "row": h.row.tolist(),
            "ok": h.ok.tolist(), "others": list(h.others), "bad_steps": dict(h.bad_steps),
            "vector_rows": h.vector_rows,
            **{c: getattr(h, c).tobytes() for c in ("record_step", "item_step", "wall_time", "value")}}


def test_history_walked_in_chunks_is_the_one_walk_result(current_log, realdata, monkeypatch, tmp_path):
    """A big log's history is walked `WALK_CHUNK` records at a time: with tiny chunks every
    column, and the order of the key names, equal the one-walk result."""
    big = tmp_path / "damaged.wandb"
    raw = Path(current_log["log"]).read_bytes()
    buf = bytearray(len(raw) + (1 << 16))
    buf[: len(raw)] = raw
    framed = framing.frame(buf, len(raw))
    payloads = [bytes(framed.buf[s:e]) for s, e in zip(framed.starts.tolist(), framed.ends.tolist(),
                                                        strict=True)]
    rng = np.random.default_rng(5)
    for i in rng.choice(len(payloads), 40, replace=False).tolist():
        b = bytearray(payloads[i])
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        payloads[i] = bytes(b)
    big.write_bytes(_frame_log(payloads))
    for path in [current_log["log"], str(big), _old_writer_log(), *_real_logs(realdata)]:
        whole = read_log(path)
        monkeypatch.setattr(vector, "WALK_CHUNK", 7)
        chunked = read_log(path)
        monkeypatch.undo()
        assert _history_of(chunked) == _history_of(whole), path


def test_ls_on_a_wandb_log_never_imports_pandas(current_log):
    """`rundiff ls` reads a W&B run as columns, its summary included: pandas (~0.4 s of start-up)
    is not imported."""
    code = ("import contextlib, io, sys\n"
            "from rundiff_core.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['ls', {current_log['folder']!r}, '--format', 'json']) == 0\n"
            f"    assert main(['ls', {str(OLD_WRITER)!r}]) == 0\n"
            "print(sorted(m for m in ('pandas', 'wandb', 'google.protobuf') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_summary_record_goes_only_when_the_next_short_record_repeats_it():
    """Only a later byte-identical record lets an earlier one go: runs of repeats keep their last
    copy (standing for the run), and records of one length that differ only in their middle bytes
    (`best_loss` values of 32-byte records) are told apart."""
    recs = [b"\n\x1e\n\tbest_loss\x82\x01\x10" + f"{v:.14f}".encode()[:16] for v in (1.2095327573010, 0.2746187814546)]
    assert len({len(r) for r in recs}) == 1
    small = b"\n\x0f\n\x08_runtime\x82\x01\x0259"
    big = b"\n\x40" + bytes(range(64)) + b"\x82\x01\x011"  # over 64 bytes: never dropped
    pieces = [recs[0], recs[1], small, big]
    order = [0, 0, 1, 1, 1, 3, 3, 2, 0, 1, 2, 2]
    buf = b"".join(pieces[i] for i in order) + bytes(64)
    lens = np.array([len(pieces[i]) for i in order])
    s = np.cumsum(lens) - lens
    e = s + lens
    keep, copies = vector.last_of_repeats(buf, np.arange(len(order)), s, e, counts=True)
    assert keep.tolist() == [1, 4, 5, 6, 7, 8, 9, 11]
    assert copies.tolist() == [2, 3, 1, 1, 1, 1, 1, 2]
    assert vector.last_of_repeats(buf, np.arange(len(order)), s, e).tolist() == keep.tolist()


def test_the_current_writers_runtime_records_are_dropped_as_repeats(current_log, monkeypatch):
    """wandb-core rewrites `_wandb.runtime` after every row: all but the last copy of each value
    are dropped before the fold walks the summary records."""
    seen = []
    real = datastore.last_of_repeats

    def spy(buf, idx, s, e, **kw):
        got = real(buf, idx, s, e, **kw)
        seen.append((idx.size, int(np.count_nonzero(e[idx] - s[idx] <= vector.SHORT_RECORD)), got[0].size))
        return got

    monkeypatch.setattr(datastore, "last_of_repeats", spy)
    log = read_log(current_log["log"], history=False)
    (total, short, kept), = seen
    assert short > 100 and kept <= total - short // 2
    assert log.summary_updates[("flag",)] == b"true"


# -- chunk CRCs checked a block at a time --------------------------------------------------------
def _chunks(path: str):
    """(bytes, chunk positions, chunk ends) of a log as the vector framing found them."""
    got = {}
    real = framing.crc_failures

    def spy(data, cpos, cend, blk):
        got["x"] = (data, cpos, cend)
        return real(data, cpos, cend, blk)

    data = Path(path).read_bytes()
    raw = bytearray(data) + bytearray(1 << 20)
    framing.crc_failures, saved = spy, framing.crc_failures
    try:
        assert framing.frame(raw, len(data)).clean
    finally:
        framing.crc_failures = saved
    return got["x"]


def _one_by_one(data, cpos, cend) -> bool:
    want = np.frombuffer(bytes(data), np.uint8)
    stored = [int.from_bytes(bytes(want[p:p + 4]), "little") for p in cpos.tolist()]
    return framing.chunk_crcs(data, cpos, cend).tolist() == stored


def test_block_crc_check_agrees_with_chunk_by_chunk_on_real_and_current_logs(current_log, realdata):
    for path in [current_log["log"], _old_writer_log(), *_real_logs(realdata)]:
        data, cpos, cend = _chunks(path)
        assert framing.block_crcs_match(data, cpos, cend) is True is _one_by_one(data, cpos, cend), path


def test_block_crc_check_fails_on_any_damaged_chunk(current_log):
    """Any bit flipped in a chunk's type or data, or in its stored CRC, fails its block's check,
    as it fails the chunk's own; several chunks at once too."""
    data, cpos, cend = _chunks(current_log["log"])
    clean = bytes(data)
    rng = np.random.default_rng(11)
    for trial in range(60):
        bad = bytearray(clean)
        for _ in range(1 + trial % 3):
            i = int(rng.integers(0, cpos.size))
            lo = int(cpos[i]) if trial % 4 == 0 else int(cpos[i]) + 6  # stored CRC, or type + data
            hi = int(cpos[i]) + 4 if trial % 4 == 0 else int(cend[i])
            at = int(rng.integers(lo, hi))
            bad[at] ^= 1 << int(rng.integers(0, 8))
        view = memoryview(bad)
        assert framing.block_crcs_match(view, cpos, cend) is False
        assert not _one_by_one(view, cpos, cend)


def test_a_big_log_is_checked_block_by_block_and_framed_as_before(current_log, monkeypatch):
    """Over `BLOCK_CHECK_ABOVE` chunks the block check runs, and the log decodes as it does with
    every chunk checked one by one; a damaged copy goes to the careful path either way."""
    calls = []
    real = framing.block_crc_failures
    monkeypatch.setattr(framing, "block_crc_failures", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(framing, "BLOCK_CHECK_ABOVE", 0)
    by_block = read_log(current_log["log"])
    assert calls
    monkeypatch.setattr(framing, "BLOCK_CHECK_ABOVE", 1 << 62)
    one_by_one = read_log(current_log["log"])
    assert _items(by_block) == _items(one_by_one)
    assert by_block.history.value.tobytes() == one_by_one.history.value.tobytes()


def test_a_damaged_chunk_found_by_the_block_check_is_recovered_as_before(current_log, tmp_path,
                                                                         monkeypatch):
    data = bytearray(Path(current_log["log"]).read_bytes())
    at = data.rindex(b'"set again')  # inside a record near the end; its chunk CRC now fails
    data[at + 1] ^= 0x20
    path = tmp_path / "damaged.wandb"
    path.write_bytes(bytes(data))
    monkeypatch.setattr(framing, "BLOCK_CHECK_ABOVE", 0)
    by_block = read_log(str(path))
    monkeypatch.setattr(framing, "BLOCK_CHECK_ABOVE", 1 << 62)
    one_by_one = read_log(str(path))
    assert by_block.stats.corrupt_chunks == one_by_one.stats.corrupt_chunks == 1
    assert _items(by_block) == _items(one_by_one)
    assert by_block.history.value.tobytes() == one_by_one.history.value.tobytes()


@pytest.mark.parametrize("window", [1 << 22, 4096, 1])
def test_the_lazy_fold_in_windows_equals_the_full_fold(current_log, realdata, monkeypatch, window):
    """The lazy fold reads the file a window at a time (one payload per window at the smallest),
    with the records that spanned chunks folded where they fall in log order: the summary equals
    the one-pass fold's, keys, order and values, on every log at hand."""
    monkeypatch.setattr(datastore, "FOLD_WINDOW", window)
    for path in [current_log["log"], _old_writer_log(), *_real_logs(realdata)]:
        first = read_log(path, summary=False)
        assert first.verified is not None and first.summary_payloads is not None, path
        lazy = datastore.fold_summary_at(path, first.summary_payloads, first.verified)
        full = read_log(path, history=False).summary_updates or {}
        assert [(k, None if v is None else bytes(v)) for k, v in (lazy or {}).items()] == \
            [(k, None if v is None else bytes(v)) for k, v in full.items()], (path, window)
