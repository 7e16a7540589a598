"""LevelDB-log framing of a W&B transaction log: the header, 32 KiB blocks, chunks, CRCs.

A `.wandb` file is a 7-byte header — `:W&B`, magic 0xBEE1 (uint16 little-endian), version 0 —
then LevelDB-log framing in 32 KiB blocks (the header counts towards block 0): chunks of
`crc32 (uint32 LE) | length (uint16 LE) | type (1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST) | data`, where
the CRC is the plain (unmasked) IEEE CRC-32 of type + data — wandb's Go writer uses
`CRCAlgoIEEE`, not LevelDB's masked CRC-32C. A block tail shorter than a chunk header is zero
padding, and so is a block whose next header is all zeros.

Damage is counted, never fatal: a CRC mismatch or a malformed chunk skips to the next block (as
LevelDB and wandb's reader do), and a torn tail — a live run caught mid-write — ends the read at
the last whole record, with the skipped bytes counted.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

MAGIC = b":W&B"
MAGIC_NUMBER = 0xBEE1
HEADER = MAGIC + MAGIC_NUMBER.to_bytes(2, "little") + b"\x00"
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_CHUNK = struct.Struct("<IHB")  # crc32, length, type
PAD = 64  # zero bytes after the decoded buffer, so vector reads past a record stay in bounds


class LogFormatError(ValueError):
    """The file is not a W&B transaction log (bad header); the caller turns it into InputError."""


def sniff(head: bytes) -> bool:
    """True when the first bytes are a W&B transaction-log header (any version)."""
    return len(head) >= 6 and head[:4] == MAGIC and int.from_bytes(head[4:6], "little") == MAGIC_NUMBER


# -- framing ----------------------------------------------------------------------------------
@dataclass
class FrameStats:
    """What the framing pass saw besides whole records."""

    records: int = 0
    corrupt_chunks: int = 0  # CRC mismatches / impossible chunks in the middle of the file
    corrupt_bytes: int = 0  # bytes skipped because of them
    orphan_chunks: int = 0  # MIDDLE/LAST chunks without a FIRST (after a skip)
    torn_tail_bytes: int = 0  # bytes after the last whole record that form no whole record
    torn_records: int = 0  # records begun but never finished at the end of the file
    bad_records: int = 0  # whole records whose protobuf did not parse


@dataclass
class Framed:
    """Every whole record as a span of `buf` (the file, then multi-chunk records joined, then
    zero padding), in log order."""

    buf: bytes | bytearray
    starts: np.ndarray
    ends: np.ndarray
    stats: FrameStats
    clean: bool = False  # the fast path took every chunk: well-formed, and every CRC matched
    file_size: int = 0  # when clean: spans ending at or before it are offsets into the file itself


CRC_BATCH = 1 << 16  # chunks per batch: their offsets as Python ints are made, used and let go


def span_crcs(data: memoryview, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The CRC-32 of each span `data[start:end]` (one C call per span), a batch of spans at a
    time: the offsets of a million spans as Python ints would be ~70 MB of fresh memory at once."""
    out = np.empty(starts.size, dtype=np.uint32)
    crc, piece = zlib.crc32, data.__getitem__
    for lo in range(0, starts.size, CRC_BATCH):
        a = starts[lo : lo + CRC_BATCH].tolist()
        b = ends[lo : lo + CRC_BATCH].tolist()
        out[lo : lo + len(a)] = np.fromiter(map(crc, map(piece, map(slice, a, b))), dtype=np.uint32,
                                            count=len(a))
    return out


def chunk_crcs(data: memoryview, cpos: np.ndarray, cend: np.ndarray) -> np.ndarray:
    """The CRC-32 of each chunk's type + data."""
    return span_crcs(data, cpos + 6, cend)


def _stored_crcs(data: memoryview, cpos: np.ndarray) -> np.ndarray:
    """The CRC each chunk header stores (its first four bytes, little-endian)."""
    return np.ndarray((len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))[cpos]


BLOCK_CHECK_ABOVE = 1 << 14  # chunks: more than this and the CRCs are checked block by block


def crcs_match(data: memoryview, cpos: np.ndarray, cend: np.ndarray) -> bool:
    """Whether every chunk's stored CRC is the CRC-32 of its type + data.

    A few chunks are checked one by one. Many are checked a block at a time (`block_crcs_match`):
    the same verdict on any block with at most one damaged chunk, at a fraction of the cost of a
    million C calls; a block that fails either way sends the file to the careful path, which
    checks chunk by chunk."""
    if cpos.size > BLOCK_CHECK_ABOVE:
        return block_crcs_match(data, cpos, cend)
    return bool(np.array_equal(chunk_crcs(data, cpos, cend), _stored_crcs(data, cpos)))


_SHIFT_TABLES: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _shift_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(byte table, shift by n bytes for n < 256, shift by 256·m bytes for m ≤ 128), the shift
    tables flattened as [n][lane][byte]: the CRC-32 register advanced over n zero bytes is, being
    linear, the XOR of its four bytes' table entries (zlib's crc32_combine, tabulated)."""
    global _SHIFT_TABLES
    if _SHIFT_TABLES is None:
        byte = np.arange(256, dtype=np.uint32)
        for _ in range(8):
            byte = (byte >> np.uint32(1)) ^ np.where(byte & np.uint32(1), np.uint32(0xEDB88320), np.uint32(0))
        step = np.arange(1024, dtype=np.uint32).reshape(4, 256)
        step = step % 256 << (np.uint32(8) * np.arange(4, dtype=np.uint32)[:, None])  # identity
        low = np.empty((257, 4, 256), dtype=np.uint32)
        low[0] = step
        for k in range(1, 257):  # one more zero byte: register → table[low byte] ^ (register >> 8)
            prev = low[k - 1]
            low[k] = byte[prev & np.uint32(0xFF)] ^ (prev >> np.uint32(8))
        high = np.empty((129, 4, 256), dtype=np.uint32)
        high[0] = step
        by256 = low[256].reshape(-1)
        for m in range(1, 129):
            high[m] = _apply(by256, 0, high[m - 1])
        _SHIFT_TABLES = byte, low[:256].reshape(-1), high.reshape(-1)
    return _SHIFT_TABLES


def _apply(table: np.ndarray, which: np.ndarray | int, reg: np.ndarray) -> np.ndarray:
    """Shift each register by its operator `which` of a flattened [n][lane][byte] table."""
    base = np.asarray(which, dtype=np.int64) * 1024
    out = table[base + (reg & np.uint32(0xFF)).astype(np.int64)]
    for lane in (1, 2, 3):
        out ^= table[base + lane * 256 + ((reg >> np.uint32(8 * lane)) & np.uint32(0xFF)).astype(np.int64)]
    return out


def _shift(reg: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Each CRC-32 register advanced over `nbytes` zero bytes (0 ≤ nbytes ≤ 32,768)."""
    _byte, low, high = _shift_tables()
    return _apply(high, nbytes >> 8, _apply(low, nbytes & 0xFF, reg))


def block_crcs_match(data: memoryview, cpos: np.ndarray, cend: np.ndarray) -> bool:
    """Every chunk CRC checked a block at a time: one C-level CRC-32 of each block's span of
    chunks, against what the stored CRCs make it. CRC-32 is affine and composes over
    concatenation (crc(A‖B) = shift(crc(A), |B|) ⊕ crc(B)), so a block whose chunks are
    `header₀ body₀ header₁ body₁ …` (header: stored CRC and length; body: type and data, what
    each stored CRC covers) must have the CRC ⊕ᵢ shift(crc(headerᵢ), |bodyᵢ| + tailᵢ) ⊕
    shift(storedᵢ, tailᵢ), where tailᵢ is the span's length after bodyᵢ. A block with one bad
    chunk always fails (a shift is invertible); several bad chunks in one block escape only if
    their errors cancel, 2⁻³² for random damage — CRC-32's own odds for damage within one
    chunk. The work is a few table gathers per chunk instead of a Python-level call."""
    arr = np.frombuffer(data, dtype=np.uint8)
    byte, _low, _high = _shift_tables()
    blk = cpos // BLOCK
    same_block = blk[1:] == blk[:-1]
    if not (cpos[1:][same_block] == cend[:-1][same_block]).all():
        return False  # chunks of a block are back to back; anything else is not ours to add up
    first = np.flatnonzero(np.concatenate([[True], ~same_block]))
    last = np.concatenate([first[1:], [cpos.size]]) - 1
    span_end = np.repeat(cend[last], last - first + 1)
    reg = np.full(cpos.size, 0xFFFFFFFF, dtype=np.uint32)  # crc32 of each 6-byte header
    for k in range(6):
        reg = byte[((reg ^ arr[cpos + k]) & np.uint32(0xFF)).astype(np.int64)] ^ (reg >> np.uint32(8))
    reg ^= np.uint32(0xFFFFFFFF)
    part = _shift(reg, span_end - (cpos + 6))
    part ^= _shift(_stored_crcs(data, cpos), span_end - cend)
    want = np.bitwise_xor.reduceat(part, first)
    return bool(np.array_equal(span_crcs(data, cpos[first], cend[last]), want))


def frame(raw: bytearray, n: int, *, crc: bool = True) -> Framed:
    """Split the log into record spans, every 32 KiB block at once.

    `crc=False` trusts the chunk CRCs: only for bytes already framed clean (`Framed.clean`) and
    unchanged since — the reader's second pass over a log (the lazily folded summary) whose size,
    mtime, inode and device are still the first pass's. Everything else is checked as always.

    A block always starts with a chunk header (chunks never cross blocks), so the chunk chains of
    all blocks are followed in parallel: step i reads the i-th header of every block. CRCs are
    then checked all at once (`crcs_match`). A torn tail (the last block cut mid-chunk, or a record begun
    and never finished) ends the log with a count; anything else odd — a CRC mismatch, a chunk
    overrunning its block, an unknown type — hands the whole file to `frames`, which recovers
    chunk by chunk as LevelDB does.
    """
    data = memoryview(raw)[:n]
    stats = FrameStats()
    if n <= CHUNK_HEADER:
        return Framed(_with_records(raw, n, [])[0], np.empty(0, np.int64), np.empty(0, np.int64), stats)
    arr = np.frombuffer(data, dtype=np.uint8)
    nblocks = (n + BLOCK - 1) // BLOCK
    block0 = np.arange(nblocks, dtype=np.int64) * BLOCK
    pos = block0.copy()
    pos[0] = CHUNK_HEADER
    found_pos: list[np.ndarray] = []
    found_block: list[np.ndarray] = []
    active = np.arange(nblocks)
    torn_at = -1  # file offset where an unfinished chunk starts
    while active.size:
        p = pos[active]
        room = block0[active] + BLOCK - p
        live = room >= CHUNK_HEADER  # a shorter block tail is padding
        cut = live & (p + CHUNK_HEADER > n)
        if cut.any():
            at = int(p[cut][0])
            if arr[at:].any():
                torn_at = at
            live &= ~cut
        pc = np.minimum(p, n - CHUNK_HEADER)
        length = arr[pc + 4].astype(np.int64) | (arr[pc + 5].astype(np.int64) << 8)
        kind = arr[pc + 6]
        zero = (length == 0) & (kind == 0) & ~arr[pc].astype(bool) & ~arr[pc + 1].astype(bool) & ~arr[
            pc + 2].astype(bool) & ~arr[pc + 3].astype(bool)
        live &= ~zero  # a zeroed header: the rest of the block is padding
        end = p + CHUNK_HEADER + length
        past_eof = live & (end > n)
        if past_eof.any():
            torn_at = int(p[past_eof][0])
            live &= ~past_eof
        if (live & ((length > room - CHUNK_HEADER) | (kind < FULL) | (kind > LAST))).any():
            return _frame_carefully(raw, n)
        found_pos.append(p[live])
        found_block.append(active[live])
        pos[active] = end
        active = active[live]
    if not found_pos:
        cpos = np.empty(0, dtype=np.int64)
    else:  # chunks in file order: block by block, step by step
        cpos = np.concatenate(found_pos)
        blk = np.concatenate(found_block)
        per_block = np.bincount(blk, minlength=nblocks)
        first = np.concatenate([[0], np.cumsum(per_block)[:-1]])
        step_no = np.concatenate([np.full(len(x), i, dtype=np.int64) for i, x in enumerate(found_pos)])
        order = np.empty(cpos.size, dtype=np.int64)
        order[first[blk] + step_no] = np.arange(cpos.size)
        cpos = cpos[order]
    # each header's fields in one gather apiece (unaligned little-endian views of the bytes)
    clen = np.ndarray((n - 5,), dtype="<u2", buffer=data, offset=4, strides=(1,))[cpos].astype(np.int64)
    cend = cpos + CHUNK_HEADER + clen
    ckind = arr[cpos + 6]
    if crc and not crcs_match(data, cpos, cend):
        return _frame_carefully(raw, n)
    # records: FULL chunks as they are; FIRST … LAST joined after the file
    full = ckind == FULL
    rec_at = [cpos[full]]
    rec_s = [cpos[full] + CHUNK_HEADER]
    rec_e = [cend[full]]
    joined: list[bytes] = []
    pending: list[bytes] | None = None
    pending_at = 0
    j_at: list[int] = []
    for i in np.flatnonzero(~full).tolist():
        k = int(ckind[i])
        piece = bytes(data[int(cpos[i]) + CHUNK_HEADER : int(cend[i])])
        if k == FIRST:
            if pending is not None:
                return _frame_carefully(raw, n)
            pending, pending_at = [piece], int(cpos[i])
            continue
        if pending is None or (i > 0 and ckind[i - 1] == FULL):  # orphan, or FULL inside a record
            return _frame_carefully(raw, n)
        pending.append(piece)
        if k == LAST:
            j_at.append(pending_at)
            joined.append(b"".join(pending))
            pending = None
    if pending is not None:  # begun, never finished: torn
        if (ckind[cpos > pending_at] == FULL).any():
            return _frame_carefully(raw, n)
        torn_at = pending_at if torn_at < 0 else min(torn_at, pending_at)
    if torn_at >= 0:
        stats.torn_tail_bytes = n - torn_at
        stats.torn_records = 1
    del arr, data
    buf, offsets = _with_records(raw, n, joined)
    if j_at:
        rec_at.append(np.asarray(j_at, dtype=np.int64))
        rec_s.append(offsets[:-1])
        rec_e.append(offsets[1:])
    at = np.concatenate(rec_at)
    order = np.argsort(at, kind="stable") if j_at else slice(None)
    starts = np.concatenate(rec_s)[order]
    ends = np.concatenate(rec_e)[order]
    stats.records = int(starts.size)
    return Framed(buf, starts, ends, stats, clean=True, file_size=n)


def _with_records(raw: bytearray, n: int, joined: list[bytes]) -> tuple[bytearray | bytes, np.ndarray]:
    """The file's bytes followed by `joined` records and zero padding, as one buffer.

    `raw` was allocated with room to spare past the file, so this normally writes in place instead
    of copying the whole log. Returns the buffer and the joined records' offsets (n + 1 values).
    """
    sizes = [len(j) for j in joined]
    offsets = n + np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    end = int(offsets[-1])
    if end + PAD <= len(raw):
        if joined:
            raw[n:end] = b"".join(joined)
        raw[end : end + PAD] = bytes(PAD)
        return raw, offsets
    return b"".join([bytes(memoryview(raw)[:n]), *joined, bytes(PAD)]), offsets


def frames(data: bytes, stats: FrameStats):
    """Yield `(buffer, start, end)` of every whole record payload, recovering from damage.

    Chunk by chunk with a CRC check each: a bad chunk in mid-file skips the rest of its block (as
    LevelDB does); a bad or cut chunk at the very end is a torn write and ends the read there.
    """
    mv = memoryview(data)
    n = len(data)
    crc32 = zlib.crc32
    unpack = _CHUNK.unpack_from
    pos = CHUNK_HEADER
    pending: list[bytes] | None = None  # chunks of a FIRST … LAST record being assembled
    pending_at = 0
    while pos < n:
        left = BLOCK - (pos & (BLOCK - 1))
        if left < CHUNK_HEADER:  # block tail: zero padding
            pos += left
            continue
        if pos + CHUNK_HEADER > n:  # a header cut by the end of the file
            if pending is not None or any(data[pos:n]):
                stats.torn_tail_bytes += n - (pending_at if pending is not None else pos)
                stats.torn_records += 1
                pending = None
            break
        crc, length, kind = unpack(data, pos)
        end = pos + CHUNK_HEADER + length
        if length == 0 and kind == 0 and crc == 0:  # zeroed rest of block
            pos += left
            continue
        if end > n:  # the chunk runs past the end of the file: a live run caught mid-write
            stats.torn_tail_bytes += n - (pending_at if pending is not None else pos)
            stats.torn_records += 1
            pending = None
            break
        if length > left - CHUNK_HEADER or not FULL <= kind <= LAST or crc32(mv[pos + 6 : end]) != crc:
            if end >= n or not any(data[end:n]):
                # the last chunk of the file is damaged: a torn write, not corruption
                stats.torn_tail_bytes += n - (pending_at if pending is not None else pos)
                stats.torn_records += 1
                pending = None
                break
            stats.corrupt_chunks += 1  # recover as LevelDB does: drop the rest of this block
            stats.corrupt_bytes += left
            if pending is not None:
                stats.bad_records += 1
                pending = None
            pos += left
            continue
        start = pos + CHUNK_HEADER
        if kind == FULL:
            if pending is not None:  # a record left unfinished before this one
                stats.bad_records += 1
                pending = None
            stats.records += 1
            yield data, start, end
        elif kind == FIRST:
            if pending is not None:
                stats.bad_records += 1
            pending = [data[start:end]]
            pending_at = pos
        elif pending is None:
            stats.orphan_chunks += 1
        elif kind == MIDDLE:
            pending.append(data[start:end])
        else:  # LAST
            pending.append(data[start:end])
            whole = b"".join(pending)
            pending = None
            stats.records += 1
            yield whole, 0, len(whole)
        pos = end
    if pending is not None:
        stats.torn_tail_bytes += n - pending_at
        stats.torn_records += 1


def _frame_carefully(raw: bytearray, n: int) -> Framed:
    stats = FrameStats()
    data = memoryview(raw)[:n]
    joined: list[bytes] = []
    kinds: list[int] = []  # -1: joined record k; else the payload start in the file
    ends: list[int] = []
    for buf, s, e in frames(data, stats):
        if buf is data:
            kinds.append(s)
            ends.append(e)
        else:
            kinds.append(-1 - len(joined))
            ends.append(0)
            joined.append(bytes(buf))
    del data
    out, offsets = _with_records(raw, n, joined)
    starts = np.asarray(kinds, dtype=np.int64)
    stop = np.asarray(ends, dtype=np.int64)
    mine = starts < 0
    if mine.any():
        k = -1 - starts[mine]
        starts[mine] = offsets[k]
        stop[mine] = offsets[k + 1]
    return Framed(out, starts, stop, stats)
