"""LevelDB-log framing of a W&B transaction log: the header, 32 KiB blocks, chunks, CRCs, damage.

A `.wandb` file is a 7-byte header — `:W&B`, magic 0xBEE1 (uint16 little-endian), version 0 —
then LevelDB-log framing in 32 KiB blocks (the header counts towards block 0): chunks of
`crc32 (uint32 LE) | length (uint16 LE) | type (1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST) | data`, where
the CRC is the plain (unmasked) IEEE CRC-32 of type + data — wandb's Go writer uses
`CRCAlgoIEEE`, not LevelDB's masked CRC-32C. A block tail shorter than a chunk header is zero
padding, and so is the rest of a block whose next header is all zeros. A FIRST or MIDDLE chunk
always ends where its block ends (the writer splits a record only at a block's end).

Damage costs only the bytes it touches. The fast path follows the chunk chains of all blocks at
once and checks their CRCs a block at a time; a block where any check fails goes to the careful
walk, chunk by chunk with every CRC checked. Where no valid chunk starts, it searches forward,
byte by byte, for the next offset where a whole chunk with a matching CRC starts (LevelDB's
reader skips to the next block instead, losing what follows in it), so bytes that are intact but
shifted — inserted bytes, a repeated region — are read again. The block grid is found again
from the chunks themselves (a FIRST or MIDDLE chunk ends a block; so does a short zero tail), and
the fast path takes over from the next block boundary on that grid. No chunk whose CRC fails is
ever read. Each stretch where no valid chunk starts is a `Damage` with its exact byte range; the
records lost there are counted from the record numbers either side (every wandb writer numbers
its records 1, 2, 3, …), and records after it that repeat records before it (a duplicated region)
are dropped and counted. A torn tail — the last chunk cut by the end of the file, or followed by
nothing but zeros, or a record begun and never finished: a live run caught mid-write, or a writer
stopped mid-record — ends the read at the last whole record, with the bytes after it counted. A
last chunk that is whole but fails its CRC is damage, not a torn write.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

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


HEADER_BIT_FLIPS = 8  # a header this close to ours, followed by a valid chunk, is ours damaged


def damaged_header(head: bytes) -> bool:
    """True when `head` (a file's first bytes) is a W&B log whose 7-byte header is damaged: at
    most `HEADER_BIT_FLIPS` bits from a version-0 header, and a whole chunk with a matching CRC
    right after it. A header that sniffs (`sniff`) is not damaged."""
    if len(head) < 2 * CHUNK_HEADER or sniff(head):
        return False
    flips = sum(bin(a ^ b).count("1") for a, b in zip(head[:CHUNK_HEADER], HEADER, strict=True))
    if flips > HEADER_BIT_FLIPS:
        return False
    stored, length, kind = _CHUNK.unpack_from(head, CHUNK_HEADER)
    end = 2 * CHUNK_HEADER + length
    return FULL <= kind <= LAST and end <= len(head) and zlib.crc32(head[CHUNK_HEADER + 6 : end]) == stored


# -- framing ----------------------------------------------------------------------------------
@dataclass
class Damage:
    """Stretches of the log where no valid chunk starts, with no whole record read between them,
    and what the records either side say about them."""

    ranges: list[tuple[int, int]]  # file offsets [start, end) of each unreadable stretch
    zeros: bool = True  # every unreadable byte is zero
    lost: int | None = None  # records lost, from the record numbers either side; None: unknown
    first_lost: int | None = None  # the number of the first record lost
    repeated: int = 0  # records after it repeating records before it (a duplicated region), dropped
    shift: int = 0  # bytes the block grid moved across it: + bytes inserted, - bytes removed
    at_end: bool = False  # no whole record after it

    @property
    def size(self) -> int:
        return sum(e - s for s, e in self.ranges)


@dataclass
class FrameStats:
    """What the framing pass saw besides whole records."""

    records: int = 0
    corrupt_chunks: int = 0  # stretches of mid-file damage (`damage`): no valid chunk starts there
    corrupt_bytes: int = 0  # the bytes in them, skipped
    orphan_chunks: int = 0  # MIDDLE/LAST chunks without their FIRST (it was in a damaged stretch)
    torn_tail_bytes: int = 0  # bytes after the last whole record that form no whole record
    torn_records: int = 0  # records begun but never finished at the end of the file
    cut_records: int = 0  # records begun before damage (or a stray FULL chunk) and never finished
    bad_records: int = 0  # whole records whose protobuf did not parse (counted by the decoder)
    repeated_records: int = 0  # records dropped as repeats of earlier ones after damage
    damage: list[Damage] = field(default_factory=list)


@dataclass
class Framed:
    """Every whole record as a span of `buf` (the file, then multi-chunk records joined, then
    zero padding), in log order."""

    buf: bytes | bytearray
    starts: np.ndarray
    ends: np.ndarray
    stats: FrameStats
    clean: bool = False  # no damage: every chunk was taken and every CRC matched
    file_size: int = 0  # spans ending at or before it are offsets into the file itself


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


def crc_failures(data: memoryview, cpos: np.ndarray, cend: np.ndarray, blk: np.ndarray) -> np.ndarray:
    """The blocks (values of `blk`, each chunk's block) holding a chunk whose stored CRC is not
    the CRC-32 of its type + data, in order.

    A few chunks are checked one by one. Many are checked a block at a time
    (`block_crc_failures`): the same verdict on any block with at most one damaged chunk, at a
    fraction of the cost of a million C calls; a block that fails either way goes to the careful
    walk, which checks chunk by chunk."""
    if cpos.size > BLOCK_CHECK_ABOVE:
        return block_crc_failures(data, cpos, cend, blk)
    bad = chunk_crcs(data, cpos, cend) != _stored_crcs(data, cpos)
    return np.unique(blk[bad])


def crcs_match(data: memoryview, cpos: np.ndarray, cend: np.ndarray) -> bool:
    """Whether every chunk's stored CRC is the CRC-32 of its type + data."""
    return crc_failures(data, cpos, cend, cpos // BLOCK).size == 0


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
    """Whether every block's chunks pass `block_crc_failures` (blocks on the file's own grid)."""
    return block_crc_failures(data, cpos, cend, cpos // BLOCK).size == 0


def block_crc_failures(data: memoryview, cpos: np.ndarray, cend: np.ndarray, blk: np.ndarray) -> np.ndarray:
    """Every chunk CRC checked a block at a time: one C-level CRC-32 of each block's span of
    chunks, against what the stored CRCs make it; the blocks (values of `blk`) that fail.

    CRC-32 is affine and composes over concatenation (crc(A‖B) = shift(crc(A), |B|) ⊕ crc(B)), so
    a block whose chunks are `header₀ body₀ header₁ body₁ …` (header: stored CRC and length;
    body: type and data, what each stored CRC covers) must have the CRC ⊕ᵢ shift(crc(headerᵢ),
    |bodyᵢ| + tailᵢ) ⊕ shift(storedᵢ, tailᵢ), where tailᵢ is the span's length after bodyᵢ. A
    block with one bad chunk always fails (a shift is invertible); several bad chunks in one
    block escape only if their errors cancel, 2⁻³² for random damage — CRC-32's own odds for
    damage within one chunk. The work is a few table gathers per chunk instead of a Python-level
    call. Chunks of a block must be back to back (the walk makes them so); a block whose are not
    fails."""
    if cpos.size == 0:
        return np.empty(0, dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    byte, _low, _high = _shift_tables()
    same_block = blk[1:] == blk[:-1]
    first = np.flatnonzero(np.concatenate([[True], ~same_block]))
    last = np.concatenate([first[1:], [cpos.size]]) - 1
    gap = np.zeros(cpos.size, dtype=bool)
    gap[1:] = same_block & (cpos[1:] != cend[:-1])
    span_end = np.repeat(cend[last], last - first + 1)
    reg = np.full(cpos.size, 0xFFFFFFFF, dtype=np.uint32)  # crc32 of each 6-byte header
    for k in range(6):
        reg = byte[((reg ^ arr[cpos + k]) & np.uint32(0xFF)).astype(np.int64)] ^ (reg >> np.uint32(8))
    reg ^= np.uint32(0xFFFFFFFF)
    part = _shift(reg, span_end - (cpos + 6))
    part ^= _shift(_stored_crcs(data, cpos), span_end - cend)
    want = np.bitwise_xor.reduceat(part, first)
    bad = span_crcs(data, cpos[first], cend[last]) != want
    if gap.any():
        bad |= np.logical_or.reduceat(gap, first)
    return blk[first][bad]


# -- the fast path: every block's chunk chain at once ----------------------------------------------
WALK_BLOCKS = 2048  # blocks (64 MiB) walked at once: damage that moves the grid re-walks at most these


class _Walk:
    """The chunk chains of the blocks on the grid `phase` (block starts ≡ phase mod BLOCK), from
    the block holding `pos` (whose chain starts at `pos`), `WALK_BLOCKS` of them or to the end of
    the file, followed in parallel: step i reads the i-th header of every block. A block is bad when its chain breaks
    (a chunk overrunning its block or the file, an unknown type, a non-zero tail or rest of block
    where padding belongs, a header cut by the end of the file) or, checked lazily by `next_bad`,
    when a chunk CRC fails."""

    def __init__(self, data: memoryview, arr: np.ndarray, n: int, pos: int, phase: int, crc: bool):
        self.data, self.crc = data, crc
        k0 = (pos - phase) // BLOCK
        nb = min(WALK_BLOCKS, max(1, (n - 1 - phase) // BLOCK - k0 + 1))
        block0 = phase + (k0 + np.arange(nb, dtype=np.int64)) * BLOCK
        self.block0 = block0
        self.nblocks = nb
        self.start = pos  # where block 0's chain starts
        self.end = int(block0[-1]) + BLOCK  # where the next walk starts
        at = block0.copy()
        at[0] = pos
        ok = np.ones(nb, dtype=bool)
        found_pos: list[np.ndarray] = []
        found_block: list[np.ndarray] = []
        active = np.arange(nb)
        while active.size:
            p = at[active]
            bend = block0[active] + BLOCK
            room = bend - p
            live = room >= CHUNK_HEADER
            tail = ~live & (p < n)
            if tail.any():  # a block tail shorter than a header: zero padding, or damage
                tp, troom = p[tail], room[tail]
                nz = np.zeros(tp.size, dtype=bool)
                for k in range(CHUNK_HEADER - 1):
                    inside = (k < troom) & (tp + k < n)
                    nz |= inside & (arr[np.minimum(tp + k, n - 1)] != 0)
                ok[active[tail][nz]] = False
            cut = live & (p + CHUNK_HEADER > n)  # the file ends within a header's reach
            for b, q in zip(active[cut].tolist(), p[cut].tolist(), strict=True):
                if arr[q:n].any():
                    ok[b] = False  # a header cut by the end of the file: torn, or damage
            live &= ~cut
            pc = np.minimum(p, n - CHUNK_HEADER)
            length = arr[pc + 4].astype(np.int64) | (arr[pc + 5].astype(np.int64) << 8)
            kind = arr[pc + 6]
            zero = live & (length == 0) & (kind == 0) & (arr[pc] == 0) & (arr[pc + 1] == 0) & (
                arr[pc + 2] == 0) & (arr[pc + 3] == 0)
            for b, q, e in zip(active[zero].tolist(), p[zero].tolist(), bend[zero].tolist(), strict=True):
                if arr[q : min(e, n)].any():
                    ok[b] = False  # a zeroed header with bytes after it: not padding
            live &= ~zero
            end = p + CHUNK_HEADER + length
            broken = live & ((end > bend) | (end > n) | (kind < FULL) | (kind > LAST))
            ok[active[broken]] = False
            live &= ~broken
            found_pos.append(p[live])
            found_block.append(active[live])
            at[active] = end
            active = active[live]
        if any(x.size for x in found_pos):  # chunks in file order: block by block, step by step
            cpos = np.concatenate(found_pos)
            blk = np.concatenate(found_block)
            per_block = np.bincount(blk, minlength=nb)
            first = np.concatenate([[0], np.cumsum(per_block)[:-1]])
            step_no = np.concatenate([np.full(len(x), i, dtype=np.int64) for i, x in enumerate(found_pos)])
            order = np.empty(cpos.size, dtype=np.int64)
            order[first[blk] + step_no] = np.arange(cpos.size)
            cpos, blk = cpos[order], blk[order]
        else:
            cpos, blk = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
            per_block = np.zeros(nb, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(per_block)]).astype(np.int64)
        self.cpos, self.blk = cpos, blk
        # each header's fields in one gather apiece (unaligned little-endian views of the bytes)
        clen = np.ndarray((max(n - 5, 0),), dtype="<u2", buffer=data, offset=4, strides=(1,))[cpos]
        self.cend = cpos + CHUNK_HEADER + clen.astype(np.int64)
        self.ckind = arr[cpos + 6]
        self.ok = ok
        self.crc_done = 0  # blocks before this one have had their CRCs checked

    def next_bad(self, i: int) -> int:
        """The first bad block at or after block i (`nblocks` when none), checking the CRCs of the
        blocks up to it that were not checked yet."""
        bad = np.flatnonzero(~self.ok[i:])
        stop = i + int(bad[0]) if bad.size else self.nblocks
        if self.crc and stop > self.crc_done:
            lo = max(i, self.crc_done)
            a, b = self.offsets[lo], self.offsets[stop]
            failed = crc_failures(self.data, self.cpos[a:b], self.cend[a:b], self.blk[a:b])
            self.ok[failed] = False
            self.crc_done = stop
            if failed.size:
                stop = min(stop, int(failed[0]))
        return stop

    def chunks(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = self.offsets[i], self.offsets[j]
        return self.cpos[a:b], self.cend[a:b], self.ckind[a:b]


# -- the careful walk ---------------------------------------------------------------------------------
class _Chunks:
    """The chunks taken, in file order, with the damaged stretches and a torn end between them."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.py: list[tuple[int, int, int]] = []
        self.count = 0
        self.breaks: list[int] = []  # a damaged stretch lies before chunk `breaks[k]`
        self.stretches: list[tuple[int, int]] = []
        self.shifts: list[int] = []
        self.torn_at: int | None = None

    def add(self, cpos: np.ndarray, cend: np.ndarray, ckind: np.ndarray) -> None:
        if cpos.size:
            self._flush()
            self.parts.append((cpos, cend, ckind))
            self.count += cpos.size

    def one(self, pos: int, end: int, kind: int) -> None:
        self.py.append((pos, end, kind))
        self.count += 1

    def damage(self, start: int, end: int) -> None:
        self.breaks.append(self.count)
        self.stretches.append((start, end))
        self.shifts.append(0)

    def regrid(self, old: int, new: int) -> None:
        """The block grid moved from phase `old` to `new`: across the last damaged stretch."""
        if self.shifts:
            d = (new - old) % BLOCK
            self.shifts[-1] += d if d <= BLOCK // 2 else d - BLOCK

    def _flush(self) -> None:
        if self.py:
            a = np.asarray(self.py, dtype=np.int64).reshape(-1, 3)
            self.parts.append((a[:, 0], a[:, 1], a[:, 2].astype(np.uint8)))
            self.py = []

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._flush()
        if not self.parts:
            e = np.empty(0, dtype=np.int64)
            return e, e, np.empty(0, dtype=np.uint8)
        if len(self.parts) == 1:
            return self.parts[0]
        return (np.concatenate([p[0] for p in self.parts]), np.concatenate([p[1] for p in self.parts]),
                np.concatenate([p[2] for p in self.parts]))


SCAN_WINDOW = 1 << 12  # offsets looked at at once by the search for the next valid chunk (doubling)


def next_chunk(data: memoryview, arr: np.ndarray, start: int, n: int) -> int | None:
    """The first offset ≥ start where a whole chunk starts whose CRC matches (None: none does).

    Offsets whose type byte is 1–4 and whose length fits the file and a block are candidates,
    found a window at a time; each candidate's CRC is then checked in order. A false match needs
    a 32-bit CRC to hold by chance (2⁻³² per candidate, and only one offset in ~100 is one)."""
    crc32 = zlib.crc32
    last = n - CHUNK_HEADER  # the last offset a header fits at
    lo, width = start, SCAN_WINDOW
    stored_all = np.ndarray((n - 3,), dtype="<u4", buffer=data, strides=(1,)) if n >= 4 else None
    while lo <= last:
        hi = min(last + 1, lo + width)
        idx = np.arange(lo, hi, dtype=np.int64)
        kind = arr[idx + 6]
        length = arr[idx + 4].astype(np.int64) | (arr[idx + 5].astype(np.int64) << 8)
        sel = (kind >= FULL) & (kind <= LAST) & (length <= BLOCK - CHUNK_HEADER) & (idx + CHUNK_HEADER + length <= n)
        cand = idx[sel]
        if cand.size:
            stored = stored_all[cand].tolist()
            for q, ln, want in zip(cand.tolist(), length[sel].tolist(), stored, strict=True):
                if crc32(data[q + 6 : q + CHUNK_HEADER + ln]) == want:
                    return q
        lo, width = hi, min(width * 2, 1 << 18)
    return None


def _careful(data: memoryview, arr: np.ndarray, n: int, pos: int, phase: int, out: _Chunks,
             *, resume: bool = True) -> tuple[int, int] | None:
    """Walk chunk by chunk from `pos` (a chunk boundary on the grid `phase`), every CRC checked,
    searching past damage for the next valid chunk. Returns (offset, phase) at the first block
    boundary reached in step with a known grid after leaving `pos` (`resume`: the fast path takes
    over there), or None at the end of the file."""
    crc32, unpack = zlib.crc32, _CHUNK.unpack_from
    start = pos
    certain = True  # the grid is known: before any damage, or found again after it
    while True:
        if resume and certain and pos != start and (pos - phase) % BLOCK == 0:
            return pos, phase
        if pos >= n:
            return None
        length = kind = -1
        end = n + 1
        if pos + CHUNK_HEADER <= n:
            stored, length, kind = unpack(data, pos)
            end = pos + CHUNK_HEADER + length
            if FULL <= kind <= LAST and end <= n and crc32(data[pos + 6 : end]) == stored:
                out.one(pos, end, kind)
                block_end = pos - (pos - phase) % BLOCK + BLOCK
                if certain and end > block_end:
                    certain = False  # a valid chunk across the grid: the grid is not where we thought
                if kind in (FIRST, MIDDLE) and not (certain and end == block_end):
                    out.regrid(phase, end % BLOCK)  # these end their block: the grid is found again
                    phase, certain = end % BLOCK, True
                pos = end
                continue
        # no valid chunk starts at pos
        if not arr[pos:n].any():
            return None  # zeros to the end of the file: padding, nothing begun
        q = next_chunk(data, arr, pos + 1, n)
        if q is None:
            if end > n or (end < n and not arr[end:n].any()):
                out.torn_at = _after_padding(arr, pos, phase, certain, n)  # cut or half-written: torn
            else:
                out.damage(_after_padding(arr, pos, phase, certain, n), n)
            return None
        zeros = not arr[pos:q].any()
        on_grid = certain and (q - phase) % BLOCK == 0
        if zeros and (on_grid or q - pos < CHUNK_HEADER):
            if not on_grid:  # a short zero tail ended a block here
                out.regrid(phase, q % BLOCK)
                phase, certain = q % BLOCK, True
            pos = q
            continue
        out.damage(_after_padding(arr, pos, phase, certain, q), q)
        certain = False
        pos = q


def _after_padding(arr: np.ndarray, pos: int, phase: int, certain: bool, stop: int) -> int:
    """Where damage found at `pos` begins: after the zero padding that ends pos's block, if any."""
    if certain:
        boundary = pos - (pos - phase) % BLOCK + BLOCK
        if boundary < stop and not arr[pos:boundary].any():
            return boundary
    return pos


# -- framing ---------------------------------------------------------------------------------------
def frame(raw: bytearray, n: int, *, crc: bool = True, fast: bool = True) -> Framed:
    """Split the log into record spans.

    `crc=False` trusts the chunk CRCs of the fast path: only for bytes already framed clean
    (`Framed.clean`) and unchanged since — the reader's second pass over a log (the lazily
    folded summary) whose size, mtime, inode and device are still the first pass's. The careful
    walk checks every CRC always. `fast=False` walks the whole file carefully (the reference the
    fast path is tested against).

    The fast path (`_Walk`) follows the chunk chains of 64 MiB of blocks at once and checks their
    CRCs in one go. The blocks up to the first bad one are taken as they are; the careful walk
    (`_careful`) reads from the start of the bad block until it is back in step at a block
    boundary, and the fast path resumes there — on the blocks already walked when the grid is
    the same, else walking again from there on the grid found.
    """
    data = memoryview(raw)[:n]
    if n <= CHUNK_HEADER:
        buf = _with_records(raw, n, [])[0]
        return Framed(buf, np.empty(0, np.int64), np.empty(0, np.int64), FrameStats(), clean=True, file_size=n)
    arr = np.frombuffer(data, dtype=np.uint8)
    out = _Chunks()
    pos, phase = CHUNK_HEADER, 0
    if not fast:
        _careful(data, arr, n, pos, phase, out, resume=False)
    while fast and pos < n:
        walk = _Walk(data, arr, n, pos, phase, crc)
        i, pos = 0, walk.end
        while i < walk.nblocks:
            j = walk.next_bad(i)
            out.add(*walk.chunks(i, j))
            if j == walk.nblocks:
                break
            got = _careful(data, arr, n, max(walk.start, int(walk.block0[j])), phase, out)
            if got is None:
                pos = n
                break
            at, grid = got
            if grid != phase:
                pos, phase = got
                break
            i = (at - int(walk.block0[0])) // BLOCK
            pos = max(walk.end, at)
    return _records(raw, n, data, out)


def _records(raw: bytearray, n: int, data: memoryview, out: _Chunks) -> Framed:
    """The taken chunks as records: FULL chunks as they are, FIRST … LAST joined after the file; a
    record cut by a damaged stretch (or by a FULL chunk inside it) is dropped, its chunks
    counted; then the damaged stretches are told by the record numbers either side."""
    stats = FrameStats()
    cpos, cend, ckind = out.arrays()
    breaks = np.asarray(out.breaks, dtype=np.int64)
    full = ckind == FULL
    rec_ci = [np.flatnonzero(full)]  # each record's first chunk (index)
    joined: list[bytes] = []
    j_ci: list[int] = []
    pending: list[bytes] | None = None
    pending_ci = prev = -2
    parts = np.flatnonzero(~full)
    cut_before = np.searchsorted(breaks, parts, side="right")  # damaged stretches before each
    cut_prev = -1
    for i, cuts in zip(parts.tolist(), cut_before.tolist(), strict=True):
        k = int(ckind[i])
        if pending is not None and (i != prev + 1 or cuts != cut_prev):
            stats.cut_records += 1  # a FULL chunk or damage inside the record: it cannot be whole
            pending = None
        piece = bytes(data[int(cpos[i]) + CHUNK_HEADER : int(cend[i])])
        if k == FIRST:
            if pending is not None:
                stats.cut_records += 1
            pending, pending_ci = [piece], i
        elif pending is None:
            stats.orphan_chunks += 1
        else:
            pending.append(piece)
            if k == LAST:
                j_ci.append(pending_ci)
                joined.append(b"".join(pending))
                pending = None
        prev, cut_prev = i, cuts
    torn_from = out.torn_at
    if pending is not None:
        if (breaks.size and breaks[-1] > pending_ci) or full[pending_ci + 1 :].any():
            stats.cut_records += 1  # damage or a FULL chunk after it began: not a torn write
        else:  # begun, never finished: torn
            at = int(cpos[pending_ci])
            torn_from = at if torn_from is None else min(torn_from, at)
    if torn_from is not None:
        stats.torn_tail_bytes = n - torn_from
        stats.torn_records = 1
    buf, offsets = _with_records(raw, n, joined)
    first = np.concatenate(rec_ci + ([np.asarray(j_ci, dtype=np.int64)] if j_ci else []))
    starts = np.concatenate([cpos[full] + CHUNK_HEADER, offsets[:-1]])
    ends = np.concatenate([cend[full], offsets[1:]])
    if j_ci:
        order = np.argsort(first, kind="stable")
        first, starts, ends = first[order], starts[order], ends[order]
    if out.stretches:
        keep = _tell_damage(buf, first, starts, ends, breaks, out, stats)
        first, starts, ends = first[keep], starts[keep], ends[keep]
    stats.records = int(starts.size)
    return Framed(buf, starts, ends, stats, clean=not out.stretches, file_size=n)


def record_numbers(buf: bytes | bytearray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each record's `num` (field 1, the writer's running count from 1), -1 where it has none."""
    from rundiff_core import protobuf

    arr = np.frombuffer(buf, dtype=np.uint8)
    out = np.full(starts.size, -1, dtype=np.int64)
    has = (starts < ends) & (arr[np.minimum(starts, len(arr) - 1)] == 0x08)
    if has.any():
        val, _width, ok = protobuf.read_varints(arr, starts[has] + 1, ends[has])
        got = np.where(ok & (val < np.uint64(1 << 62)), val.astype(np.int64), -1)
        out[has] = got
    return out


def _repeats(buf, nums: np.ndarray, starts: np.ndarray, ends: np.ndarray, keep: np.ndarray,
             lo: int, hi: int, best: int) -> int:
    """How many records from `lo` on repeat, byte for byte, the kept record before `lo` with the
    same number (a duplicated region read twice): the run of them that starts right at `lo`."""
    run = nums[lo:hi]
    stop = np.flatnonzero((run < 0) | (run > best))
    run = run[: int(stop[0]) if stop.size else run.size]
    if not run.size:
        return 0
    earlier = np.flatnonzero(np.isin(nums[:lo], run) & keep[:lo])
    where = dict(zip(nums[earlier].tolist(), earlier.tolist(), strict=True))  # the last of each number
    count = 0
    for i, x in enumerate(run.tolist()):
        j = where.get(x)
        a, b = int(starts[lo + i]), int(ends[lo + i])
        if j is None or buf[a:b] != buf[int(starts[j]) : int(ends[j])]:
            break
        count += 1
    return count


def _tell_damage(buf, first: np.ndarray, starts: np.ndarray, ends: np.ndarray, breaks: np.ndarray,
                 out: _Chunks, stats: FrameStats) -> np.ndarray:
    """Count what each damaged stretch cost, from the record numbers either side, and drop the
    records after it that repeat records before it (a duplicated region: the bytes read twice).
    Stretches with no whole record between them are told as one. Returns the records kept."""
    nums = record_numbers(buf, starts, ends)
    seg = np.searchsorted(breaks, first, side="right")  # damaged stretches before each record
    keep = np.ones(starts.size, dtype=bool)
    best = 0  # the highest record number kept so far (wandb numbers from 1)
    groups: list[Damage] = []
    arr = np.frombuffer(buf, dtype=np.uint8)
    bounds = np.searchsorted(seg, np.arange(len(out.stretches) + 2))
    for s in range(len(out.stretches) + 1):
        lo, hi = int(bounds[s]), int(bounds[s + 1])
        mine = nums[lo:hi]
        if s:
            a, b = out.stretches[s - 1]
            zeros = not arr[a:b].any()
            if groups and groups[-1].at_end:  # no whole record since the last stretch: one damage
                d = groups[-1]
                d.ranges.append((a, b))
                d.zeros &= zeros
                d.shift += out.shifts[s - 1]
            else:
                d = Damage([(a, b)], zeros=zeros, shift=out.shifts[s - 1], at_end=True)
                groups.append(d)
                d.first_lost = best  # for now: the number of the last record before it
            rep = np.zeros(hi - lo, dtype=bool)
            k = _repeats(buf, nums, starts, ends, keep, lo, hi, best)
            if k:
                rep[:k] = True
                keep[lo : lo + k] = False
                d.repeated += k
            kept = np.flatnonzero(~rep)
            if kept.size:
                d.at_end = False
                after, before = int(mine[kept[0]]), d.first_lost
                if after > before >= 0:
                    d.lost = after - before - 1
                    d.first_lost = before + 1 if d.lost else None
                else:
                    d.lost, d.first_lost = None, None
        if mine.size:
            best = max(best, int(mine[keep[lo:hi]].max(initial=-1)))
    for d in groups:
        if d.at_end:
            d.lost, d.first_lost = None, None
    stats.damage = groups
    stats.corrupt_chunks = sum(len(d.ranges) for d in groups)
    stats.corrupt_bytes = sum(d.size for d in groups)
    stats.repeated_records = sum(d.repeated for d in groups)
    return keep


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


