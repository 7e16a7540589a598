"""`.wandb` (LevelDB-log) framing rules under damage, against an independent chunk reader.

The rules (adapters/wandb/framing.py): 7-byte W&B header, then 32 KiB blocks of chunks
`crc32(type+data) | length | type | data` (FULL, or FIRST MIDDLE* LAST for a record spanning
blocks); a block tail shorter than a chunk header, or a zeroed header, is padding. A bad chunk in
mid-file (CRC, type, length overrunning its block) drops the rest of its block and is counted; a
damaged or cut chunk at the very end is a torn tail (a live run), counted, and ends the read.
`frame` follows every block's chunk chain at once (vectorised) and falls back to a careful
chunk-by-chunk pass; both must agree with `reference` — plain Python written from the rules —
on a log cut at many lengths and with single bytes flipped.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from rundiff_adapters.wandb import framing
from wandb_frames import frame_log as write_log

BLOCK, HEAD = 32 * 1024, 7




def reference(data: bytes) -> tuple[list[bytes], dict]:
    n, pos, pending, pending_at = len(data), HEAD, None, 0
    out: list[bytes] = []
    st = dict(records=0, corrupt_chunks=0, corrupt_bytes=0, orphan_chunks=0, torn_tail_bytes=0,
              torn_records=0, bad_records=0)

    def torn(at: int) -> None:
        st["torn_tail_bytes"] += n - (pending_at if pending is not None else at)
        st["torn_records"] += 1

    while pos < n:
        left = BLOCK - pos % BLOCK
        if left < HEAD:
            pos += left
            continue
        if pos + HEAD > n:
            if pending is not None or any(data[pos:]):
                torn(pos)
            pending = None
            break
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if (crc, length, kind) == (0, 0, 0):
            pos += left
            continue
        end = pos + HEAD + length
        if end > n:
            torn(pos)
            pending = None
            break
        if length > left - HEAD or kind not in (1, 2, 3, 4) or zlib.crc32(data[pos + 6:end]) != crc:
            if end >= n or not any(data[end:]):
                torn(pos)
                pending = None
                break
            st["corrupt_chunks"] += 1
            st["corrupt_bytes"] += left
            if pending is not None:
                st["bad_records"] += 1
                pending = None
            pos += left
            continue
        body = data[pos + HEAD:end]
        if kind == 1:
            if pending is not None:
                st["bad_records"] += 1
                pending = None
            out.append(body)
        elif kind == 2:
            if pending is not None:
                st["bad_records"] += 1
            pending, pending_at = [body], pos
        elif pending is None:
            st["orphan_chunks"] += 1
        elif kind == 3:
            pending.append(body)
        else:
            out.append(b"".join(pending + [body]))
            pending = None
        pos = end
    if pending is not None:
        torn(pos)
    st["records"] = len(out)
    return out, st


def framed(data: bytes, reader=None) -> tuple[list[bytes], dict]:
    f = (reader or framing.frame)(bytearray(data), len(data))
    buf = bytes(f.buf)
    records = [buf[s:e] for s, e in zip(f.starts.tolist(), f.ends.tolist(), strict=True)]
    st = {k: getattr(f.stats, k) for k in ("records", "corrupt_chunks", "corrupt_bytes",
                                           "orphan_chunks", "torn_tail_bytes", "torn_records",
                                           "bad_records")}
    return records, st


rng = np.random.default_rng(11)
# 32 751 bytes fill block 0 up to a 3-byte tail (7 header + 7 chunk header + 32 751 + 3 = 32 KiB)
RECORDS = [rng.bytes(k) for k in (10, 100, 40_000, 5, 0, 70_000, 3, 20_000)]
RECORDS += [rng.bytes(BLOCK - 6 - (len(write_log(RECORDS)) % BLOCK) + BLOCK - 7 - 3), b"end"]
LOG = write_log(RECORDS)
# the fast reader hands damage to the careful one; both are held to the reference
READERS = {"fast": framing.frame, "careful": framing._frame_carefully}


def test_rule_a_clean_log_gives_every_record():
    assert framed(LOG) == (RECORDS, reference(LOG)[1]) and reference(LOG)[0] == RECORDS


def _cuts() -> list[int]:
    near_blocks = [b * BLOCK + d for b in range(1, len(LOG) // BLOCK + 1) for d in range(-12, 9)]
    return sorted({*range(0, len(LOG) + 1, 977), *near_blocks, len(LOG) - 1, len(LOG) - 8})


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("cut", _cuts())
def test_rule_cut_log_equals_the_reference(cut, reader):
    data = LOG[:cut]
    assert framed(data, READERS[reader]) == reference(data)


def _flips() -> list[tuple[int, int]]:
    r = np.random.default_rng(3)
    offsets = set(r.integers(7, len(LOG), 120).tolist())
    offsets |= {7, 8, 10, 11, 12, 13, BLOCK, BLOCK + 4, BLOCK + 6, 2 * BLOCK + 5, len(LOG) - 1}
    return [(o, f) for o in sorted(offsets) for f in (0x01, 0xFF)]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("at", "flip"), _flips())
def test_rule_flipped_byte_equals_the_reference(at, flip, reader):
    damaged = bytearray(LOG)
    damaged[at] ^= flip
    assert framed(bytes(damaged), READERS[reader]) == reference(bytes(damaged))


def test_rule_zero_padding_and_a_zeroed_block_are_not_damage():
    data = bytearray(write_log([b"x" * (BLOCK - 7 - 7 - 3)]))  # leaves a 3-byte block tail
    data += bytes(3) + write_log([b"after"])[7:]
    data2 = bytes(data) + bytes(BLOCK)  # a whole zeroed block at the end
    for d in (bytes(data), data2):
        assert framed(d) == reference(d) == framed(d, framing._frame_carefully)
        assert reference(d)[0][-1] == b"after" and reference(d)[1]["corrupt_chunks"] == 0


def test_rule_sniff_needs_the_magic_and_its_number_in_any_version():
    assert framing.sniff(b":W&B\xe1\xbe") and framing.sniff(b":W&B\xe1\xbe\x01")  # 6 bytes; version 1
    assert not framing.sniff(b":W&B\xe1") and not framing.sniff(b":W&Bxx\x00")
    assert not framing.sniff(b"XW&B\xe1\xbe\x00") and not framing.sniff(b"")
