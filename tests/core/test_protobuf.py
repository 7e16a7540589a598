"""rundiff_core.protobuf: the one field scanner; its scalar and vector readers agree."""

from __future__ import annotations

import numpy as np
import pytest

from rundiff_core import protobuf as pb


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(no: int, wire: int, payload: bytes | int) -> bytes:
    tag = _varint(no << 3 | wire)
    if wire == pb.VARINT:
        return tag + _varint(payload)
    if wire == pb.LEN:
        return tag + _varint(len(payload)) + payload
    return tag + payload


VALUES = [0, 1, 127, 128, 300, 2**32, 2**63 - 1, 2**64 - 1]


def test_scalar_and_vector_varints_agree_to_ten_bytes():
    blobs = [_varint(v) for v in VALUES]
    buf = b"".join(blobs)
    starts = np.cumsum([0] + [len(b) for b in blobs[:-1]]).astype(np.int64)
    value, width, ok = pb.read_varints(np.frombuffer(buf, np.uint8), starts,
                                       np.full(len(starts), len(buf), np.int64))
    assert ok.all() and value.tolist() == VALUES and width.tolist() == [len(b) for b in blobs]
    for v, s in zip(VALUES, starts.tolist(), strict=True):
        assert pb.varint(buf, s) == (v, s + len(_varint(v)))
    assert pb.int64(2**64 - 1) == -1 and pb.zigzag(3) == -2 and pb.zigzag(4) == 2


def test_overlong_and_cut_varints_are_refused_by_both_readers():
    eleven = b"\xff" * 10 + b"\x01"
    with pytest.raises(pb.ProtobufError):
        pb.varint(eleven, 0)
    with pytest.raises(IndexError):
        pb.varint(b"\x80\x80", 0)
    arr = np.frombuffer(eleven + b"\x80\x80", np.uint8)
    _v, _w, ok = pb.read_varints(arr, np.array([0, 11]), np.array([11, 13]))
    assert ok.tolist() == [False, False]


def test_fields_and_scan_read_the_same_message():
    msg = (_field(1, pb.I64, np.float64(1.5).tobytes()) + _field(2, pb.VARINT, 300)
           + _field(5, pb.LEN, b"abc") + _field(7, pb.I32, np.float32(2.0).tobytes()))
    got = list(pb.fields(msg, 0, len(msg)))
    assert [(f, w) for f, w, _v in got] == [(1, 1), (2, 0), (5, 2), (7, 5)]
    assert got[1][2] == 300 and msg[slice(*got[2][2])] == b"abc"
    buf = np.frombuffer(msg * 3, np.uint8)
    starts = np.arange(3, dtype=np.int64) * len(msg)
    f = pb.scan(buf, starts, starts + len(msg))
    assert not f.bad.any() and f.owner.tolist() == [0, 1, 2] * 4  # pass k: field k of each
    rows = pb.in_message_order(f, np.arange(len(f.owner)))
    assert f.owner[rows].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert f.field[rows].tolist() == [1, 2, 5, 7] * 3
    assert f.value[f.select(2, pb.VARINT)].tolist() == [300] * 3
    assert pb.read_f64(buf, f.start[f.select(1, pb.I64)]).tolist() == [1.5] * 3
    assert pb.read_f32(buf, f.start[f.select(7, pb.I32)]).tolist() == [2.0] * 3
    # a message cut inside its last field: the scalar walk raises, the vector one flags it
    with pytest.raises(pb.ProtobufError):
        list(pb.fields(msg, 0, len(msg) - 1))
    cut = pb.scan(buf, np.array([0]), np.array([len(msg) - 1]))
    assert cut.bad.tolist() == [True]
    assert pb.skip(msg, 1, pb.I64) == 9 and pb.skip(msg, 10, pb.VARINT) == 12


def _factorize_by_hand(items: list[bytes]) -> tuple[list[int], list[bytes]]:
    seen: dict[bytes, int] = {}
    return [seen.setdefault(x, len(seen)) for x in items], list(seen)


@pytest.mark.parametrize("distinct", [1, 3, 40, 5000])
def test_factorize_spans_equals_factorizing_the_bytes(distinct):
    """Few distinct strings (a run's tags: the sampled fast path), many (sorted), strings of
    every length up to 40 and spans ending at the buffer's last byte; codes in order of first
    appearance, exactly as a dict would give them."""
    rng = np.random.default_rng(distinct)
    vocab = [rng.bytes(int(n)) for n in rng.integers(0, 41, distinct)]
    vocab += [v[:-1] + b"!" for v in vocab[:3] if v]  # near twins: same length and prefix
    picks = rng.integers(0, len(vocab), 20_000)
    picks[-1] = int(rng.integers(0, len(vocab)))  # rarely seen value at the very end
    items = [vocab[i] for i in picks.tolist()]
    blob = b"".join(items)
    lengths = np.array([len(x) for x in items], np.int64)
    starts = np.cumsum(lengths) - lengths
    codes, uniq = pb.factorize_spans(np.frombuffer(blob, np.uint8), starts, lengths)
    want_codes, want_uniq = _factorize_by_hand(items)
    assert codes.tolist() == want_codes and uniq == want_uniq


def test_factorize_spans_sees_a_value_the_sample_missed():
    """One string appears once among a million of another: the sample misses it, the binary
    search does not find it, and the exact path still codes it."""
    items = [b"train/loss"] * 300_000 + [b"eval/rare"] + [b"train/loss"] * 300_000
    blob = b"".join(items)
    lengths = np.array([len(x) for x in items], np.int64)
    starts = np.cumsum(lengths) - lengths
    codes, uniq = pb.factorize_spans(np.frombuffer(blob, np.uint8), starts, lengths)
    assert uniq == [b"train/loss", b"eval/rare"]
    assert int(codes[300_000]) == 1 and int(codes.sum()) == 1


@pytest.mark.parametrize("shift", [0, 1, 3, 8])
def test_span_words_equal_the_bytes_on_aligned_and_unaligned_buffers(shift):
    """`span_word` reads spans' 8-byte words from aligned gathers when the buffer allows it, else
    from an unaligned view (a buffer that starts mid-word, spans at its very end): the same
    little-endian words, zero past each span's end, either way."""
    rng = np.random.default_rng(shift)
    raw = np.frombuffer(rng.bytes(4096 + shift), np.uint8)[shift:]
    starts = rng.integers(0, len(raw) - 1, 5_000)
    lengths = np.minimum(rng.integers(0, 40, 5_000), len(raw) - starts)
    starts[:3], lengths[:3] = len(raw) - np.array([1, 8, 20]), np.array([1, 8, 20])
    data = raw.tobytes()
    for j in range(3):
        got = pb.span_word(raw, starts, lengths, j)
        want = [int.from_bytes(data[s + 8 * j : s + min(8 * j + 8, int(n))], "little") if n > 8 * j else 0
                for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
        assert got.tolist() == want


def test_factorize_spans_adds_what_its_sample_missed_without_sorting_everything(monkeypatch):
    """A few rare keys among many of a common one: coded exactly, by the few-values path."""
    items = ([b"loss"] * 50_000 + [b"eval/acc"] + [b"loss"] * 50_000 + [b"best"] + [b"loss"] * 3
             + [b"eval/acc"])
    blob = b"".join(items)
    lengths = np.array([len(x) for x in items], np.int64)
    starts = np.cumsum(lengths) - lengths
    monkeypatch.setattr(pb, "factorize", lambda *_a: pytest.fail("sorted every hash"))
    codes, uniq = pb.factorize_spans(np.frombuffer(blob, np.uint8), starts, lengths)
    assert uniq == [b"loss", b"eval/acc", b"best"]
    assert codes.tolist() == _factorize_by_hand(items)[0]
