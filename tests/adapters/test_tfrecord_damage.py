"""TFRecord framing rules under every single-byte damage, against an independent reader.

The rules (adapters/tensorboard/tfrecord.py): records are `u64 length | masked crc32c(length) |
data | masked crc32c(data)`; a record whose data CRC fails is skipped and counted; a header whose
length CRC fails is counted and framing resumes at the next offset holding a valid header whose
record fits in the file (the bytes in between are counted as skipped); an incomplete record at
the end is the truncated tail. `reference_framing` below implements exactly that, one byte at a
time in plain Python; `frame_records` (a vectorised fast path plus a careful walk) must agree
with it on the file cut at every length and with every byte flipped.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("crc32c")
from crc32c import crc32c  # noqa: E402
from rundiff_adapters.tensorboard.tfrecord import frame_records  # noqa: E402


def mcrc(b: bytes) -> int:
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", mcrc(head)) + payload + struct.pack("<I", mcrc(payload))


def reference_framing(data: bytes) -> dict:
    size, pos = len(data), 0
    out = {"records": [], "bad_length_crc": 0, "bad_data_crc": 0, "skipped_bytes": 0,
           "truncated_tail": 0, "bad_offsets": []}
    bad_data_offsets = []

    def header_ok(p: int) -> bool:
        return mcrc(data[p:p + 8]) == struct.unpack_from("<I", data, p + 8)[0]

    def fits(p: int) -> bool:
        # As the code stands: a header within the last 16 bytes, where no whole record can fit,
        # is accepted whatever its length (it then reads as the truncated tail); further back,
        # its record must fit in the file. (The first half comes from an unsigned wrap-around
        # in `_resync`'s bound; it happens to report a cut last record as the tail.)
        return p > size - 16 or struct.unpack_from("<Q", data, p)[0] <= size - p - 16

    while pos < size:
        if size - pos < 12:
            out["truncated_tail"] = size - pos
            break
        if not header_ok(pos):
            out["bad_length_crc"] += 1
            if len(out["bad_offsets"]) < 5:
                out["bad_offsets"].append(pos)
            nxt = next((p for p in range(pos + 1, size - 11) if fits(p) and header_ok(p)), size)
            out["skipped_bytes"] += nxt - pos
            pos = nxt
            continue
        (n,) = struct.unpack_from("<Q", data, pos)
        if pos + 16 + n > size:
            out["truncated_tail"] = size - pos
            break
        body = data[pos + 12:pos + 12 + n]
        if mcrc(body) == struct.unpack_from("<I", data, pos + 12 + n)[0]:
            out["records"].append((pos + 12, n))
        else:
            out["bad_data_crc"] += 1
            bad_data_offsets.append(pos)
        pos += 16 + n
    out["bad_offsets"] += bad_data_offsets[: max(0, 5 - len(out["bad_offsets"]))]
    return out


def framing_of(data: bytes) -> dict:
    fr = frame_records(data)
    return {"records": list(zip(fr.starts.tolist(), fr.lengths.tolist(), strict=True)),
            "bad_length_crc": fr.bad_length_crc, "bad_data_crc": fr.bad_data_crc,
            "skipped_bytes": fr.skipped_bytes, "truncated_tail": fr.truncated_tail,
            "bad_offsets": fr.bad_offsets}


PAYLOADS = [b"", b"a", b"hello world", bytes(range(40)), b"\x00" * 9, b"z" * 120, b"tail"]
# a payload holding a valid record: header-like bytes inside data (forces the careful walk)
NESTED = record(b"inner") + b"!"


@pytest.mark.parametrize("payloads", [PAYLOADS, [NESTED, b"after", NESTED]], ids=["plain", "nested"])
def test_rule_framing_equals_the_reference_at_every_cut(payloads):
    data = b"".join(map(record, payloads))
    whole = reference_framing(data)
    assert [n for _s, n in whole["records"]] == [len(p) for p in payloads]
    for cut in range(len(data) + 1):
        assert framing_of(data[:cut]) == reference_framing(data[:cut]), cut


@pytest.mark.parametrize("payloads", [PAYLOADS, [NESTED, b"after", NESTED]], ids=["plain", "nested"])
def test_rule_framing_equals_the_reference_with_any_byte_flipped(payloads):
    data = b"".join(map(record, payloads))
    for at in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[at] ^= flip
            damaged = bytes(damaged)
            assert framing_of(damaged) == reference_framing(damaged), (at, flip)


def test_rule_two_damaged_regions_and_garbage_between_records():
    """Several bad headers (more than the five offsets kept), garbage runs, bad data CRCs."""
    rng = np.random.default_rng(5)
    parts = []
    for i in range(20):
        rec = bytearray(record(rng.bytes(int(rng.integers(0, 60)))))
        if i % 3 == 1:
            rec[2] ^= 0x10  # bad length CRC
        if i % 4 == 2:
            rec[-1] ^= 0x01  # bad data CRC
        parts.append(bytes(rec))
        if i % 5 == 0:
            parts.append(rng.bytes(int(rng.integers(1, 30))))  # garbage between records
    data = b"".join(parts)
    ref = reference_framing(data)
    assert ref["bad_length_crc"] > 5 and ref["bad_data_crc"] >= 1 and ref["skipped_bytes"] > 0
    assert framing_of(data) == ref


def test_rule_resync_crosses_the_search_chunks_of_a_large_file():
    """A damaged header before a 2.5 MiB record: the search for the next header runs over more
    than two 1 MiB chunks (and the fast path's 1 MiB windows see a multi-window file)."""
    rng = np.random.default_rng(7)
    big = rng.bytes(5 * (1 << 20) // 2)
    first = bytearray(record(b"x" * 10))
    first[9] ^= 0x04  # its length CRC fails
    data = bytes(first) + record(big) + record(b"after")
    damaged = bytearray(data)
    damaged[len(first) + 3] ^= 0x01  # and the big record's header too: resync runs to "after"
    # the reference is quadratic on megabytes of garbage: these answers are worked out by hand
    after = len(data) - 21  # offset of the last record (16 bytes of framing + 5 of data)
    assert framing_of(data) == {
        "records": [(len(first) + 12, len(big)), (after + 12, 5)], "bad_length_crc": 1,
        "bad_data_crc": 0, "skipped_bytes": len(first), "truncated_tail": 0, "bad_offsets": [0]}
    # one resynchronisation jumps from 0 over both damaged headers and the big record to "after"
    assert framing_of(bytes(damaged)) == {
        "records": [(after + 12, 5)], "bad_length_crc": 1, "bad_data_crc": 0,
        "skipped_bytes": after, "truncated_tail": 0, "bad_offsets": [0]}
    step = 16 + len(big)
    clean = record(big) * 4 + record(b"end")[:-3]  # 4 big records, then a record cut short
    assert framing_of(clean) == {
        "records": [(i * step + 12, len(big)) for i in range(4)], "bad_length_crc": 0,
        "bad_data_crc": 0, "skipped_bytes": 0, "truncated_tail": len(record(b"end")) - 3, "bad_offsets": []}


@pytest.mark.parametrize("payloads", [PAYLOADS, [b"q" * 3] * 40], ids=["mixed", "uniform"])
def test_rule_clean_files_and_cut_tails_take_the_fast_path(payloads):
    """Performance is a rule too: a file whose only damage is a cut tail is framed without the
    record-by-record walk (`_chain` answers), and gives the reference's records. (A file of a
    single whole record plus a cut tail may take the walk: the chain needs a successor.)"""
    from rundiff_adapters.tensorboard.tfrecord import _chain

    data = b"".join(map(record, payloads))
    for cut in range(len(data) + 1):
        ref = reference_framing(data[:cut])
        if len(ref["records"]) < 2:
            continue
        fast = _chain(data[:cut], cut)
        assert fast is not None, cut
        offs, tail = fast
        assert [o + 12 for o in offs.tolist()] == [s for s, _n in ref["records"]], cut
        assert tail == ref["truncated_tail"] and offs.dtype == np.int64


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, b"\x00" * 40, record(b"x")[:-1]])
def test_rule_empty_and_garbage_files_give_typed_empty_framings(data):
    fr = frame_records(data)
    assert fr.size == len(data) and fr.starts.dtype == np.int64 and fr.lengths.dtype == np.int64
    assert len(fr.starts) == len(fr.lengths) == 0


def test_rule_damage_and_a_cut_tail_together():
    """A bad header earlier in the file (careful walk + resync) and the end cut at every length
    of its last records; the file ends with an empty record (the walk's last offset exactly)."""
    payloads = [b"a" * 5, b"bb", b"c" * 30, b"", b"d" * 3, b""]
    data = b"".join(map(record, payloads))
    starts = np.cumsum([0] + [16 + len(p) for p in payloads])[:-1].tolist()
    for k in (1, 3, 4, 5):
        for at in range(12):  # each byte of record k's header
            damaged = bytearray(data)
            damaged[starts[k] + at] ^= 0x20
            for cut in range(max(0, len(data) - 45), len(data) + 1):
                blob = bytes(damaged[:cut])
                assert framing_of(blob) == reference_framing(blob), (k, at, cut)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sizes=st.lists(st.integers(0, 90), min_size=1, max_size=25),
       flips=st.lists(st.tuples(st.integers(0, 10**5), st.integers(1, 255)), max_size=3),
       garbage=st.lists(st.tuples(st.integers(0, 30), st.binary(min_size=1, max_size=20)),
                        max_size=2),
       cut=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_rule_framing_equals_the_reference_on_random_damage(sizes, flips, garbage, cut, seed):
    """Records on both sides of the 64-byte line between numpy and C CRCs, damaged at random:
    flipped bytes, garbage between records, a cut tail — always the reference's answer."""
    rng = np.random.default_rng(seed)
    recs = [record(rng.bytes(n)) for n in sizes]
    for at, junk in garbage:
        recs.insert(at % (len(recs) + 1), junk)
    data = bytearray(b"".join(recs))
    for pos, x in flips:
        data[pos % len(data)] ^= x
    data = bytes(data[: max(0, len(data) - cut)])
    assert framing_of(data) == reference_framing(data)
