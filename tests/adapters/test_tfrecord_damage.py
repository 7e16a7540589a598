"""TFRecord framing rules under every single-byte damage, against an independent reader.

The rules (adapters/tensorboard/tfrecord.py): records are `u64 length | masked crc32c(length) |
data | masked crc32c(data)`; a record is read only when both CRCs check. From offset 0, each good
record is followed by the one where it ends; where none whose two CRCs check starts, reading
resumes at the first offset after that point where one does (byte by byte), and the bytes between
are a damaged stretch. A stretch is described as found: from its front, records whose header
checks (and whose record fits in the file) but whose data CRC fails (the last may claim bytes past
the stretch's end: its overrun); from its back, records whose
data CRC checks but whose header is damaged (the whole remaining span first, then every start at
most 4,096 bytes back, the nearest wins; at most eight); the bytes left over frame nothing. The
records right after a stretch that repeat, byte for byte, records already kept are dropped; the
first one's distance back to its copy is the stretch's shift, and a stretch whose bytes are the
start of what is read `shift` bytes later and a copy of what was read `shift` bytes earlier is a
repeated region's seam. Fewer than 12 bytes left, or a header that checks whose record runs past
the end, with no good record after it, is the truncated tail; anything else with no good record
after it is a stretch at the end. `reference_framing` below implements exactly that, one byte at
a time in plain Python; `frame_records` (a vectorised chain plus a walk per break) must agree with
it on the file cut at every length, with every byte flipped, and on random damage.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("crc32c")
from crc32c import crc32c  # noqa: E402
from rundiff_adapters.tensorboard import tfrecord  # noqa: E402
from rundiff_adapters.tensorboard.tfrecord import frame_records  # noqa: E402


def mcrc(b: bytes) -> int:
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", mcrc(head)) + payload + struct.pack("<I", mcrc(payload))


def reference_framing(data: bytes) -> dict:
    size = len(data)
    u32 = lambda p: struct.unpack_from("<I", data, p)[0]  # noqa: E731
    length = lambda p: struct.unpack_from("<Q", data, p)[0]  # noqa: E731

    def header_ok(p: int) -> bool:
        return size - p >= 12 and mcrc(data[p:p + 8]) == u32(p + 8)

    def head(p: int) -> bool:  # a header that checks, its record inside the file
        return header_ok(p) and p + 16 + length(p) <= size

    def valid(p: int) -> bool:
        return head(p) and mcrc(data[p + 12:p + 12 + length(p)]) == u32(p + 12 + length(p))

    def body(p: int) -> bytes:
        return data[p:p + 16 + length(p)]

    def ending_at(lo: int, e: int) -> int | None:
        def ok(s: int) -> bool:
            return mcrc(data[s + 12:e - 4]) == u32(e - 4)
        if ok(lo):
            return lo
        return next((s for s in range(e - 16, max(lo + 1, e - 4096) - 1, -1) if ok(s)), None)

    def describe(a: int, e: int, at_end: bool) -> dict:
        d = {"start": a, "end": e, "zero": data[a:e].count(0), "bad_data": 0, "bad_header": 0,
             "unframed": 0, "overrun": 0, "repeated": 0, "shift": 0, "seam": -1, "at_end": at_end}
        p = a
        while p < e and head(p):
            d["bad_data"] += 1
            d["overrun"] = max(0, p + 16 + length(p) - e)
            p = min(e, p + 16 + length(p))
        for _ in range(8):
            if e - p < 16 or (s := ending_at(p, e)) is None:
                break
            d["bad_header"] += 1
            e = s
        d["unframed"] = e - p
        return d

    out = {"records": [], "tail": 0, "damage": []}
    last_kept: dict[bytes, int] = {}
    pos = 0
    while pos < size:
        if valid(pos):
            out["records"].append((pos + 12, length(pos)))
            last_kept[body(pos)] = pos
            pos += 16 + length(pos)
            continue
        nxt = next((p for p in range(pos + 1, size - 15) if valid(p)), None)
        if nxt is None:
            if size - pos < 12 or (header_ok(pos) and not head(pos)):
                out["tail"] = size - pos
            else:
                out["damage"].append(describe(pos, size, True))
            break
        d = describe(pos, nxt, False)
        out["damage"].append(d)
        pos = nxt
        while pos < size and valid(pos) and body(pos) in last_kept:
            if not d["repeated"]:
                d["shift"] = pos - last_kept[body(pos)]
            d["repeated"] += 1
            pos += 16 + length(pos)
    holes = [(d["start"], d["end"]) for d in out["damage"]] + ([(size - out["tail"], size)] if out["tail"] else [])
    for d in out["damage"]:
        a, e = d["start"], d["end"]
        D = d["shift"] if d["repeated"] else (0 if d["at_end"] else e - a)
        if D <= 0 or e + D > size:
            continue
        k = next((k for k in range(e - a) if data[a + k] != data[a + D + k]), e - a)
        x = a + k
        spans = [(a + D, x + D), (x - D, e - D)]
        if x - D >= 0 and data[x:e] == data[x - D:e - D] and not any(
                lo < hi and s < hi and lo < t for lo, hi in spans for s, t in holes):
            d["seam"], d["shift"] = x, D
    return out


def framing_of(data: bytes) -> dict:
    fr = frame_records(data)
    return {"records": list(zip(fr.starts.tolist(), fr.lengths.tolist(), strict=True)),
            "tail": fr.truncated_tail,
            "damage": [{"start": d.start, "end": d.end, "zero": d.zero_bytes, "bad_data": d.bad_data,
                        "bad_header": d.bad_header, "unframed": d.unframed, "overrun": d.overrun,
                        "repeated": d.repeated,
                        "shift": d.shift, "seam": d.seam, "at_end": d.at_end} for d in fr.damage]}


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
    """Many bad headers, garbage runs, bad data CRCs: each stretch told as found."""
    rng = np.random.default_rng(5)
    parts = []
    for i in range(20):
        rec = bytearray(record(rng.bytes(int(rng.integers(1, 60)))))
        if i % 3 == 1:
            rec[2] ^= 0x10  # bad length CRC
        if i % 4 == 2:
            rec[-1] ^= 0x01  # bad data CRC
        parts.append(bytes(rec))
        if i % 5 == 0:
            parts.append(rng.bytes(int(rng.integers(1, 30))))  # garbage between records
    data = b"".join(parts)
    ref = reference_framing(data)
    dmg = ref["damage"]
    assert len(dmg) > 5 and sum(d["bad_data"] for d in dmg) >= 1 and sum(d["bad_header"] for d in dmg) >= 1
    assert sum(d["unframed"] for d in dmg) > 0
    assert framing_of(data) == ref


def test_rule_resync_crosses_the_search_chunks_of_a_large_file():
    """A damaged header before a 2.5 MiB record: the heads are scanned over more than two 1 MiB
    chunks, and a record whose header is damaged is found back from the next good one."""
    rng = np.random.default_rng(7)
    big = rng.bytes(5 * (1 << 20) // 2)
    first = bytearray(record(b"x" * 10))
    first[9] ^= 0x04  # its length CRC fails; its data still checks
    data = bytes(first) + record(big) + record(b"after")
    damaged = bytearray(data)
    damaged[len(first) + 3] ^= 0x01  # and the big record's header too
    # the reference is quadratic on megabytes of garbage: these answers are worked out by hand
    after = len(data) - 21  # offset of the last record (16 bytes of framing + 5 of data)
    one = {"start": 0, "end": len(first), "zero": bytes(first).count(0), "bad_data": 0,
           "bad_header": 1, "unframed": 0, "overrun": 0, "repeated": 0, "shift": 0, "seam": -1,
           "at_end": False}
    assert framing_of(data) == {"records": [(len(first) + 12, len(big)), (after + 12, 5)], "tail": 0,
                                "damage": [one]}
    # one stretch from 0 over both damaged headers to "after": the small record is found from the
    # back only when it is the whole span, and the big one lies beyond the 4 KiB window
    got = framing_of(bytes(damaged))
    assert got["records"] == [(after + 12, 5)] and got["tail"] == 0
    (d,) = got["damage"]
    assert (d["start"], d["end"], d["bad_data"], d["bad_header"], d["unframed"]) == (0, after, 0, 0, after)
    step = 16 + len(big)
    clean = record(big) * 4 + record(b"end")[:-3]  # 4 big records, then a record cut short
    assert framing_of(clean) == {"records": [(i * step + 12, len(big)) for i in range(4)],
                                 "tail": len(record(b"end")) - 3, "damage": []}


@pytest.mark.parametrize("payloads", [PAYLOADS, [b"q" * 3] * 40], ids=["mixed", "uniform"])
def test_rule_clean_files_and_cut_tails_take_the_fast_path(payloads):
    """Performance is a rule too: a file whose only damage is a cut tail is framed by the clean
    chain alone (no walk), and gives the reference's records."""
    data = b"".join(map(record, payloads))
    for cut in range(len(data) + 1):
        ref = reference_framing(data[:cut])
        if not ref["records"]:
            continue
        fr = frame_records(data[:cut])
        assert fr.fast, cut
        assert framing_of(data[:cut]) == ref, cut
        assert fr.starts.dtype == np.int64 and fr.lengths.dtype == np.int64


def test_rule_a_repeated_region_is_dropped_and_its_seam_costs_nothing():
    """A region repeated at every offset of a file of distinct records: the repeated records are
    dropped, none is lost, and the seam between the two copies is said to cost nothing."""
    payloads = [f"event {i:03d} ".encode() * (1 + i % 4) for i in range(40)]
    data = b"".join(map(record, payloads))
    starts = np.cumsum([0] + [16 + len(p) for p in payloads])[:-1].tolist()
    for at in range(0, len(data) - 300, 7):
        for span in (64, 150, 299):
            blob = data[:at + span] + data[at:at + span] + data[at + span:]
            ref = reference_framing(blob)
            assert framing_of(blob) == ref, (at, span)
            kept = [blob[s - 12:s + 4 + n] for s, n in ref["records"]]
            if at + span in starts:  # the copy starts on a record boundary: nothing is damaged,
                continue  # and a writer that wrote the same bytes twice looks the same
            assert sorted(kept) == sorted(record(p) for p in payloads), (at, span)
            (d,) = ref["damage"]
            assert d["seam"] >= 0 and d["shift"] == span, (at, span)


def test_rule_a_search_gives_up_when_its_budget_is_spent(monkeypatch):
    """Headers that check but that no chain reaches (each followed by bytes that are not its data)
    are hashed one by one by the search; when the budget is spent it gives up and says so."""
    fake = struct.pack("<Q", 100)
    fake = fake + struct.pack("<I", mcrc(fake)) + b"\x07" * 50  # claims 100 bytes; its successor
    # would start inside the next fake's bytes, so no chain reaches any of them
    data = record(b"good") + b"\xff" * 3 + fake * 40 + record(b"late")
    monkeypatch.setattr(tfrecord, "RESYNC_BUDGET", 500)
    fr = frame_records(data)
    assert [data[s:s + n] for s, n in zip(fr.starts.tolist(), fr.lengths.tolist(), strict=True)] == [b"good"]
    (d,) = fr.damage
    assert d.gave_up and d.at_end and d.start == 20 and d.end == len(data) and d.lost is None
    monkeypatch.setattr(tfrecord, "RESYNC_BUDGET", 1 << 20)
    fr = frame_records(data)
    assert fr.lengths.tolist() == [4, 4] and not fr.damage[0].gave_up
    assert (fr.damage[0].start, fr.damage[0].end) == (20, len(data) - 20)


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, b"\x00" * 40, record(b"x")[:-1]])
def test_rule_empty_and_garbage_files_give_typed_empty_framings(data):
    fr = frame_records(data)
    assert fr.size == len(data) and fr.starts.dtype == np.int64 and fr.lengths.dtype == np.int64
    assert len(fr.starts) == len(fr.lengths) == 0


def test_rule_damage_and_a_cut_tail_together():
    """A bad header earlier in the file (the walk) and the end cut at every length of its last
    records; the file ends with an empty record (the walk's last offset exactly)."""
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
