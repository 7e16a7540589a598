"""`.wandb` (LevelDB-log) framing rules under damage, against an independent chunk reader.

The rules (adapters/wandb/framing.py): 7-byte W&B header, then 32 KiB blocks of chunks
`crc32(type+data) | length | type | data` (FULL, or FIRST MIDDLE* LAST for a record spanning
blocks); a block tail shorter than a chunk header, or a zeroed header with zeros to the block's
end, is padding. A chunk is read only when its type is 1–4, it fits the file and its CRC matches.
Where no valid chunk starts, the reader searches forward byte by byte for the next offset where
one does; the bytes between are padding when they are zeros ending on the block grid (or fewer
than a header), else a damaged stretch, counted to the byte. The grid is lost across damage and
found again where a FIRST or MIDDLE chunk ends or a short zero gap ends. A chunk at the very end
that is cut or followed by zeros only is a torn tail (a live run); one that is whole but fails its
CRC is damage. Records cut by damage are
dropped; the records lost in a stretch are counted from the record numbers (`num`, field 1)
either side, and records after a stretch that repeat, byte for byte, the kept record with the
same number before it are dropped as a duplicated region.

`frame` follows the chunk chains of many blocks at once (vectorised), sends bad blocks to a
careful chunk-by-chunk walk and resumes at the next block boundary on the grid found; it is run
as it is and walking two blocks at a time (so window edges fall everywhere); `frame(fast=False)`
walks the whole file carefully. Both must agree with `reference` — plain Python written from the
rules, scanning byte by byte — on a log cut at many lengths, with bytes flipped, zeroed,
inserted, removed and repeated.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from rundiff_adapters.wandb import framing
from wandb_frames import frame_log as write_log

BLOCK, HEAD = 32 * 1024, 7


def _num(rec: bytes) -> int:
    if not rec or rec[0] != 0x08:
        return -1
    value, shift = 0, 0
    for i, b in enumerate(rec[1:11], 1):
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value if value < 1 << 62 else -1
        if i == len(rec) - 1:
            return -1
    return -1


def reference(data: bytes) -> tuple[list[bytes], dict]:
    n = len(data)

    def chunk_at(q: int):
        if q + HEAD > n:
            return None
        crc, length, kind = struct.unpack_from("<IHB", data, q)
        end = q + HEAD + length
        if kind in (1, 2, 3, 4) and end <= n and zlib.crc32(data[q + 6:end]) == crc:
            return end, kind
        return None

    items: list = []  # ("chunk", pos, end, kind) | ("damage", start, end)
    shifts: list[int] = []
    torn_at = None
    pos, grid, known = HEAD, 0, True

    def regrid(new: int) -> None:
        if shifts:
            d = (new - grid) % BLOCK
            shifts[-1] += d if d <= BLOCK // 2 else d - BLOCK

    def start_of(at: int, stop: int) -> int:  # damage begins after the padding ending its block
        if known:
            boundary = at - (at - grid) % BLOCK + BLOCK
            if boundary < stop and not any(data[at:boundary]):
                return boundary
        return at

    while pos < n:
        got = chunk_at(pos)
        if got:
            end, kind = got
            items.append(("chunk", pos, end, kind))
            block_end = pos - (pos - grid) % BLOCK + BLOCK
            if known and end > block_end:
                known = False
            if kind in (2, 3) and not (known and end == block_end):
                regrid(end % BLOCK)
                grid, known = end % BLOCK, True
            pos = end
            continue
        if not any(data[pos:]):
            break
        q = next((q for q in range(pos + 1, n) if chunk_at(q)), None)
        if q is None:
            end = pos + HEAD + struct.unpack_from("<H", data, pos + 4)[0] if pos + HEAD <= n else n + 1
            if end > n or (end < n and not any(data[end:])):
                torn_at = start_of(pos, n)
            else:
                items.append(("damage", start_of(pos, n), n))
                shifts.append(0)
            break
        on_grid = known and (q - grid) % BLOCK == 0
        if not any(data[pos:q]) and (on_grid or q - pos < HEAD):
            if not on_grid:
                regrid(q % BLOCK)
                grid, known = q % BLOCK, True
            pos = q
            continue
        items.append(("damage", start_of(pos, q), q))
        shifts.append(0)
        known = False
        pos = q

    # records: FULL, or FIRST MIDDLE* LAST with nothing between; anything else cuts
    st = dict(records=0, corrupt_chunks=0, corrupt_bytes=0, orphan_chunks=0, torn_tail_bytes=0,
              torn_records=0, cut_records=0, repeated_records=0)
    records: list[tuple[int, bytes]] = []  # (damaged stretches before it, bytes)
    pending, pending_at, stretches = None, 0, 0
    for it in items:
        if it[0] == "damage":
            stretches += 1
            if pending is not None:
                st["cut_records"] += 1
                pending = None
            continue
        _, p, e, kind = it
        body = data[p + HEAD:e]
        if kind == 1:
            if pending is not None:
                st["cut_records"] += 1
                pending = None
            records.append((stretches, body))
        elif kind == 2:
            if pending is not None:
                st["cut_records"] += 1
            pending, pending_at = [body], p
        elif pending is None:
            st["orphan_chunks"] += 1
        elif kind == 3:
            pending.append(body)
        else:
            records.append((stretches, b"".join(pending + [body])))
            pending = None
    if pending is not None:
        torn_at = pending_at if torn_at is None else min(torn_at, pending_at)
    if torn_at is not None:
        st["torn_tail_bytes"], st["torn_records"] = n - torn_at, 1

    # damage told by the record numbers either side; repeats dropped
    ranges = [(it[1], it[2]) for it in items if it[0] == "damage"]
    damage: list[dict] = []
    kept: list[bytes] = []
    last_of: dict[int, bytes] = {}
    best = 0  # wandb numbers its records from 1
    by_seg: dict[int, list[bytes]] = {}
    for s, body in records:
        by_seg.setdefault(s, []).append(body)
    for s in range(len(ranges) + 1):
        recs = by_seg.get(s, [])
        if s:
            a, b = ranges[s - 1]
            if damage and damage[-1]["at_end"]:
                d = damage[-1]
                d["ranges"].append((a, b))
                d["zeros"] = d["zeros"] and not any(data[a:b])
                d["shift"] += shifts[s - 1]
            else:
                d = dict(ranges=[(a, b)], zeros=not any(data[a:b]), lost=None, first_lost=None,
                         repeated=0, shift=shifts[s - 1], at_end=True, before=best)
                damage.append(d)
            i = 0
            while i < len(recs) and 0 <= _num(recs[i]) <= best and last_of.get(_num(recs[i])) == recs[i]:
                i += 1
            d["repeated"] += i
            recs = recs[i:]
            if recs:
                d["at_end"] = False
                after, before = _num(recs[0]), d["before"]
                if after > before >= 0:
                    d["lost"] = after - before - 1
                    d["first_lost"] = before + 1 if d["lost"] else None
        for body in recs:
            kept.append(body)
            if _num(body) >= 0:
                last_of[_num(body)] = body
                best = max(best, _num(body))
    for d in damage:
        d.pop("before")
    st["records"] = len(kept)
    st["corrupt_chunks"] = len(ranges)
    st["corrupt_bytes"] = sum(b - a for a, b in ranges)
    st["repeated_records"] = sum(d["repeated"] for d in damage)
    st["damage"] = damage
    return kept, st


def framed(data: bytes, reader=None) -> tuple[list[bytes], dict]:
    f = (reader or framing.frame)(bytearray(data), len(data))
    buf = bytes(f.buf)
    records = [buf[s:e] for s, e in zip(f.starts.tolist(), f.ends.tolist(), strict=True)]
    st = {k: getattr(f.stats, k) for k in ("records", "corrupt_chunks", "corrupt_bytes",
                                           "orphan_chunks", "torn_tail_bytes", "torn_records",
                                           "cut_records", "repeated_records")}
    st["damage"] = [dict(ranges=list(d.ranges), zeros=d.zeros, lost=d.lost, first_lost=d.first_lost,
                         repeated=d.repeated, shift=d.shift, at_end=d.at_end) for d in f.stats.damage]
    assert f.clean == (not f.stats.damage)
    return records, st


def _careful(raw, n):
    return framing.frame(raw, n, fast=False)


def _windowed(raw, n):
    """The fast path walking two blocks at a time (64 MiB in use): window edges everywhere."""
    saved, framing.WALK_BLOCKS = framing.WALK_BLOCKS, 2
    try:
        return framing.frame(raw, n)
    finally:
        framing.WALK_BLOCKS = saved


def _record(num: int, size: int, rng) -> bytes:
    """A record as wandb numbers them (`num`, field 1, then the rest), of `size` bytes or more."""
    head = bytes([0x08]) + bytes(_varint(num))
    return head + rng.bytes(max(0, size - len(head)))


def _varint(v: int) -> list[int]:
    out = []
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return out


rng = np.random.default_rng(11)
SIZES = (10, 100, 40_000, 5, 0, 70_000, 3, 20_000, *(int(x) for x in rng.integers(20, 400, 300)))
# numbered 1, 2, … as wandb numbers them; one empty record (a zero-length chunk) has no number
RECORDS = [_record(i + 1 - (i > SIZES.index(0)), k, rng) if k else b"" for i, k in enumerate(SIZES)]
SMALL_FROM = len(write_log(RECORDS[:9]))  # where the small records begin
SMALL_TO = len(write_log(RECORDS))
# a record that fills its block up to a 3-byte tail (7 header + 32 751 + 3 = the block's rest)
RECORDS += [_record(len(RECORDS), BLOCK - 6 - (len(write_log(RECORDS)) % BLOCK) + BLOCK - 7 - 3, rng)]
RECORDS += [_record(len(RECORDS) + i, 50, rng) for i in range(200)]
LOG = write_log(RECORDS)
# the fast reader hands damage to the careful one; both are held to the reference
READERS = {"fast": framing.frame, "windowed": _windowed, "careful": _careful}


def test_rule_a_clean_log_gives_every_record():
    assert framed(LOG) == (RECORDS, reference(LOG)[1]) and reference(LOG)[0] == RECORDS
    assert framed(LOG, _careful) == framed(LOG)


def _cuts() -> list[int]:
    near_blocks = [b * BLOCK + d for b in range(1, len(LOG) // BLOCK + 1) for d in range(-12, 9)]
    return sorted({*range(0, len(LOG) + 1, 2977), *near_blocks, len(LOG) - 1, len(LOG) - 8})


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("cut", _cuts())
def test_rule_cut_log_equals_the_reference(cut, reader):
    data = LOG[:cut]
    assert framed(data, READERS[reader]) == reference(data)


def _flips() -> list[tuple[int, int]]:
    r = np.random.default_rng(3)
    offsets = set(r.integers(7, len(LOG), 60).tolist())
    offsets |= {7, 8, 10, 11, 12, 13, BLOCK, BLOCK + 4, BLOCK + 6, 2 * BLOCK + 5, len(LOG) - 1}
    return [(o, f) for o in sorted(offsets) for f in (0x01, 0xFF)]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("at", "flip"), _flips())
def test_rule_flipped_byte_equals_the_reference(at, flip, reader):
    damaged = bytearray(LOG)
    damaged[at] ^= flip
    assert framed(bytes(damaged), READERS[reader]) == reference(bytes(damaged))


def _edits() -> list[tuple[str, int]]:
    r = np.random.default_rng(5)
    at = sorted({*r.integers(7, len(LOG) - 5000, 12).tolist(), 7, BLOCK - 100, BLOCK + 3, 3 * BLOCK - 9})
    return [(kind, a) for kind in ("insert200", "remove200", "repeat4k", "zero512", "flip8") for a in at]


def _edit(kind: str, at: int) -> bytes:
    if kind == "insert200":
        return LOG[:at] + np.random.default_rng(at).bytes(200) + LOG[at:]
    if kind == "remove200":
        return LOG[:at] + LOG[at + 200:]
    if kind == "repeat4k":
        return LOG[:at + 4096] + LOG[at:at + 4096] + LOG[at + 4096:]
    d = bytearray(LOG)
    if kind == "zero512":
        d[at:at + 512] = bytes(512)
    else:
        r = np.random.default_rng(at)
        for off in r.integers(at, min(len(LOG), at + 60_000), 8).tolist():
            d[off] ^= 1 << int(r.integers(0, 8))
    return bytes(d)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("kind", "at"), _edits())
def test_rule_edited_log_equals_the_reference(kind, at, reader):
    data = _edit(kind, at)
    got, st = framed(data, READERS[reader])
    assert (got, st) == reference(data)
    index = {r: i for i, r in enumerate(RECORDS)}
    order = [index[r] for r in got]  # nothing is read that was not written, nothing twice
    assert order == sorted(set(order))
    counted = [d["lost"] for d in st["damage"]]
    if None not in counted and not st["torn_records"]:
        lost = len(RECORDS) - len(got) - (b"" in RECORDS and b"" not in got)  # b"": no number
        assert sum(counted) == lost  # the record numbers count every loss


@pytest.mark.parametrize("at", [v for k, v in _edits() if k == "insert200"])
def test_shifted_bytes_are_read_again_and_the_shift_is_said(at):
    """200 inserted bytes cost the record they landed in; everything after is read, and the
    damage says the grid moved by +200."""
    data = _edit("insert200", at)
    got, st = framed(data)
    assert len(got) >= len(RECORDS) - 2
    d, = st["damage"]
    assert not d["at_end"] and d["lost"] in (0, 1, 2)
    assert d["shift"] == 200 or at > len(LOG) - BLOCK  # the grid is found again at a block's end
    (a, b), = d["ranges"]
    assert a <= at and b >= at + 200


@pytest.mark.parametrize("at", np.random.default_rng(8).integers(SMALL_FROM, SMALL_TO - 8192, 10).tolist())
def test_a_repeated_region_of_small_records_is_read_once(at):
    """4 KiB repeated among records shorter than it: the record the repeat cut is found whole
    again in the copy, so no record is lost, and the copies of the records before are dropped."""
    data = _edit("repeat4k", at)
    got, st = framed(data)
    assert got == RECORDS  # every record once, in order
    d, = st["damage"]
    assert d["lost"] == 0 and d["shift"] == 4096 and st["repeated_records"] == d["repeated"] > 0


def test_records_without_numbers_are_never_dropped_as_repeats():
    """A writer that numbers no record (or gives all the same number) loses only what the damage
    touched; the count of lost records is then unknown, not guessed."""
    same = [b"\x08\x07" + np.random.default_rng(i).bytes(60) for i in range(2000)]
    data = bytearray(write_log(same))
    data[40_000] ^= 0x10
    got, st = framed(bytes(data))
    assert len(got) == 1999 and st["damage"][0]["lost"] is None and st["repeated_records"] == 0


def test_rule_zero_padding_and_a_zeroed_block_are_not_damage():
    data = bytearray(write_log([b"x" * (BLOCK - 7 - 7 - 3)]))  # leaves a 3-byte block tail
    data += bytes(3) + write_log([b"after"])[7:]
    data2 = bytes(data) + bytes(BLOCK)  # a whole zeroed block at the end
    to_grid = bytes(-len(data) % BLOCK)
    data3 = bytes(data) + to_grid + bytes(BLOCK) + write_log([b"later"])[7:]  # a record after it
    for d in (bytes(data), data2, data3):
        assert framed(d) == reference(d) == framed(d, _careful)
        assert reference(d)[0][-1] in (b"after", b"later") and reference(d)[1]["corrupt_chunks"] == 0


def test_rule_sniff_needs_the_magic_and_its_number_in_any_version():
    assert framing.sniff(b":W&B\xe1\xbe") and framing.sniff(b":W&B\xe1\xbe\x01")  # 6 bytes; version 1
    assert not framing.sniff(b":W&B\xe1") and not framing.sniff(b":W&Bxx\x00")
    assert not framing.sniff(b"XW&B\xe1\xbe\x00") and not framing.sniff(b"")


def test_a_damaged_header_is_told_by_the_valid_chunk_after_it():
    bad = bytearray(LOG[:4096])
    bad[1] ^= 0x04
    bad[5] ^= 0x80
    assert framing.damaged_header(bytes(bad)) and not framing.damaged_header(LOG[:4096])
    assert not framing.damaged_header(b"XXXXXXX" + LOG[7:4096])  # too far from ours
    other = bytearray(bad)
    other[20] ^= 0x01  # the first chunk's CRC fails: no evidence it is ours
    assert not framing.damaged_header(bytes(other))
