"""The TensorBoard reader's fast paths give exactly what the slow paths give.

Two shortcuts keep a million-point event file fast: every record's CRC32C is computed in numpy
(`crc.py`, 16-bit slicing tables over right-aligned words) instead of one C call per record, and
the `add_scalar` Event layout is recognised in one pass (`fastscalar.py`) instead of the generic
protobuf scan. Each is checked against its slow counterpart here: the CRCs against the C
`crc32c` package on arbitrary spans, the decode against the generic scan (the fast path switched
off) on files written by tensorboardX, on near-miss records (an add_scalar Event with one byte
changed, re-framed with valid CRCs so only the decoder sees the damage) and on the real samples.
"""

from __future__ import annotations

import dataclasses
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

crc32c_mod = pytest.importorskip("crc32c")
pytest.importorskip("tensorboardX")

from rundiff_adapters.tensorboard import events  # noqa: E402
from rundiff_adapters.tensorboard.crc import MAX_WORDS, crc32c_many, crc32c_u64  # noqa: E402
from rundiff_adapters.tensorboard.fastscalar import (  # noqa: E402
    SimpleScalars,
    match_simple_scalars,
)
from rundiff_adapters.tensorboard.tfrecord import frame_records, masked_crc  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def crc(b: bytes) -> int:
    return crc32c_mod.crc32c(b)


# -- CRC32C of many spans -------------------------------------------------------------------------


def test_every_span_of_a_buffer_matches_the_c_crc32c():
    """All spans of a 150-byte buffer in one call: both sides of the 64-byte numpy/C split,
    spans at the very start (a first word read before offset 0) and at the very end."""
    data = bytes(np.random.default_rng(3).integers(0, 256, 150, dtype=np.uint8))
    spans = [(s, n) for s in range(len(data) + 1) for n in range(len(data) - s + 1)]
    starts, lengths = (np.array(x, np.int64) for x in zip(*spans, strict=True))
    got = crc32c_many(np.frombuffer(data, np.uint8), starts, lengths)
    assert got.dtype == np.uint64
    assert got.tolist() == [crc(data[s:s + n]) for s, n in spans]
    assert (lengths > 8 * MAX_WORDS).any() and (lengths <= 8 * MAX_WORDS).any()


@SETTINGS
@given(data=st.binary(max_size=300), picks=st.lists(st.tuples(st.integers(0, 10**6),
                                                              st.integers(0, 10**6)), max_size=40))
def test_crc_of_arbitrary_spans_matches_the_c_crc32c(data, picks):
    spans = []
    for a, b in picks:
        s = a % (len(data) + 1)
        spans.append((s, b % (len(data) - s + 1)))
    buf = np.frombuffer(data, np.uint8)
    starts = np.array([s for s, _n in spans], np.int64)
    lengths = np.array([n for _s, n in spans], np.int64)
    assert crc32c_many(buf, starts, lengths).tolist() == [crc(data[s:s + n]) for s, n in spans]
    if len(data) >= 8:
        offs = np.arange(len(data) - 7)
        assert crc32c_u64(buf, offs).tolist() == [crc(data[p:p + 8]) for p in offs.tolist()]


def test_a_flipped_bit_fails_exactly_its_records_crc():
    """Planted damage in a bench-like file (many short records, a few long ones): each flip in
    a record's data is that record's bad data CRC, and only its."""
    rng = np.random.default_rng(11)
    payloads = [rng.bytes(int(n)) for n in rng.integers(20, 45, 300)] + [rng.bytes(500)] * 3
    rng.shuffle(payloads)
    data = b"".join(record(p) for p in payloads)
    starts = np.cumsum([0] + [16 + len(p) for p in payloads])[:-1]
    clean = frame_records(data)
    assert len(clean.starts) == len(payloads) and not clean.damaged
    for k in rng.choice(len(payloads), 25, replace=False).tolist():
        damaged = bytearray(data)
        at = int(starts[k]) + 12 + int(rng.integers(0, len(payloads[k])))
        damaged[at] ^= 1 << int(rng.integers(0, 8))
        fr = frame_records(bytes(damaged))
        assert fr.bad_data_crc == 1 and not fr.fast
        assert [(d.start, d.end, d.lost) for d in fr.damage] == [
            (int(starts[k]), int(starts[k]) + 16 + len(payloads[k]), 1)]
        assert fr.starts.tolist() == np.delete(clean.starts, k).tolist()


# -- the add_scalar layout vs the generic scan -------------------------------------------------------


def record(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", masked_crc(head)) + payload + struct.pack("<I", masked_crc(payload))


def _no_fast_path(buf, starts, ends):
    z = np.empty(0, np.int64)
    return SimpleScalars(np.zeros(len(starts), bool), np.empty(0, np.uint64), z, z, z, z, z, z)


def slow_decode(path: str, data: bytes, monkeypatch) -> events.FileEvents:
    with monkeypatch.context() as m:
        m.setattr(events, "match_simple_scalars", _no_fast_path)
        return events.decode_file(path, data)


def assert_same(a, b, where: str = "") -> None:
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    else:
        assert a == b, where


def scalar_event(tag: bytes, step: int, value: float, wall: float) -> bytes:
    """An Event as add_scalar writes it (tensorboard's own protos)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    v = summary_pb2.Summary.Value(tag=tag.decode("utf-8", "replace"), simple_value=value)
    return event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[v])) \
        .SerializeToString()


def write_mixed(run_dir: str) -> str:
    """tensorboardX: scalars (small, huge and negative steps; short, long and unicode tags),
    a histogram, text, hparams and add_scalars — the fast path and the generic scan side by side."""
    from tensorboardX import SummaryWriter

    w = SummaryWriter(run_dir, max_queue=10_000, flush_secs=3600)
    for s in range(300):
        w.add_scalar("loss", 1.0 / (s + 1), s, walltime=1000.0 + s)
        w.add_scalar("lr/ünïcode", 0.1, s, walltime=1000.5 + s)
        if s % 50 == 0:
            w.add_histogram("weights", np.arange(10.0) + s, s, walltime=1001.0 + s)
            w.add_text("note", f"step {s}", s, walltime=1001.0 + s)
            w.add_scalars("pair", {"a": s, "b": -s}, s, walltime=1001.0 + s)
    w.add_scalar("x" * 130, 1.0, 7, walltime=2000.0)  # a one-byte length no longer fits
    w.add_scalar("big_step", 2.0, 2**41 + 3, walltime=2001.0)  # six varint bytes: fast path
    w.add_scalar("huge_step", 3.0, 2**45, walltime=2002.0)  # seven: the generic scan
    w.add_scalar("neg_step", 4.0, -5, walltime=2003.0)  # ten bytes (two's complement)
    w.add_scalar("", 5.0, 1, walltime=2004.0)  # an empty tag
    w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hp/metric": 1.0})
    w.close()
    return run_dir


def event_files_in(root: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _s, fs in os.walk(root) for f in fs if "tfevents" in f)


def test_tensorboardx_files_decode_the_same_with_and_without_the_fast_path(tmp_path, monkeypatch):
    paths = event_files_in(write_mixed(str(tmp_path / "run")))
    assert paths
    hits = 0
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        fast = events.decode_file(p, data)
        fr = fast.framing
        hits += int(match_simple_scalars(np.frombuffer(data, np.uint8), fr.starts,
                                         fr.starts + fr.lengths).hit.sum())
        assert_same(fast, slow_decode(p, data, monkeypatch), os.path.basename(p))
    assert hits >= 600  # the scalars did take the fast path


def test_the_fast_path_takes_only_the_exact_layout(tmp_path):
    """What it accepts and refuses, byte by byte."""
    ok = scalar_event(b"loss", 3, 0.5, 10.0)
    big = scalar_event(b"loss", 2**42 - 1, 0.5, 10.0)
    refused = [scalar_event(b"loss", 2**42, 0.5, 10.0),  # seven varint bytes
               scalar_event(b"t" * 119, 1, 0.5, 10.0),  # L1 = 128: a two-byte length
               scalar_event(b"loss", 0, 0.5, 10.0),  # step 0 is not written at all
               ok + b"\x00", ok[:-1], b"\x0a" + ok[1:]]
    recs = [ok, big, *refused, scalar_event(b"t" * 118, 1, 0.5, 10.0)]
    data = b"".join(map(record, recs))
    fr = frame_records(data)
    got = match_simple_scalars(np.frombuffer(data, np.uint8), fr.starts, fr.starts + fr.lengths)
    assert got.hit.tolist() == [True, True] + [False] * len(refused) + [True]
    assert got.step.tolist() == [3, 2**42 - 1, 1]
    assert [data[s:s + n] for s, n in zip(got.tag_start.tolist(), got.tag_length.tolist(),
                                          strict=True)] == [b"loss", b"loss", b"t" * 118]


def test_a_length_byte_with_its_high_bit_set_is_not_a_one_byte_length(monkeypatch):
    """Bytes laid out like add_scalar's but with L1 = 0x80 in one byte: as protobuf, that byte
    starts a longer varint (a summary past the record's end, so the Event is unparseable); the
    fast path must refuse it, and both decodes count it the same."""
    forged = (b"\x09" + struct.pack("<d", 10.0) + b"\x10\x03" + b"\x2a\x80\x0a\x7e\x0a\x77"
              + b"t" * 119 + b"\x15" + struct.pack("<f", 0.5))
    data = b"".join(map(record, [scalar_event(b"a", 1, 1.0, 1.0), forged]))
    fr = frame_records(data)
    got = match_simple_scalars(np.frombuffer(data, np.uint8), fr.starts, fr.starts + fr.lengths)
    assert got.hit.tolist() == [True, False]
    fast = events.decode_file("f", data)
    assert fast.unparseable == 1 and len(fast.step) == 1
    assert_same(fast, slow_decode("f", data, monkeypatch))


@SETTINGS
@given(step=st.integers(0, 2**50), tag=st.binary(max_size=140),
       edits=st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 255),
                                st.sampled_from(["set", "insert", "delete"])), min_size=1, max_size=3))
def test_near_miss_records_decode_the_same_with_and_without_the_fast_path(step, tag, edits):
    """An add_scalar Event with bytes changed, inserted or deleted, framed with valid CRCs among
    intact ones: the fast path may take it only if the generic scan reads it the same way."""
    mp = pytest.MonkeyPatch()
    good = scalar_event(b"loss", 5, 0.25, 100.0)
    bad = bytearray(scalar_event(tag, step, -1.5, 123.25))
    for pos, byte, how in edits:
        at = pos % (len(bad) + 1)
        if how == "insert":
            bad[at:at] = bytes([byte])
        elif how == "delete" and at < len(bad):
            del bad[at]
        elif at < len(bad):
            bad[at] = byte
    data = b"".join(map(record, [good, bytes(bad), good, bytes(bad[:-1])]))
    try:
        assert_same(events.decode_file("f", data), slow_decode("f", data, mp))
    finally:
        mp.undo()


def test_realdata_event_files_decode_the_same_with_and_without_the_fast_path(realdata, monkeypatch):
    paths = [p for root in sorted(realdata.glob("tb-*")) for p in event_files_in(str(root))]
    assert len(paths) >= 10
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        assert_same(events.decode_file(p, data), slow_decode(p, data, monkeypatch), p)
