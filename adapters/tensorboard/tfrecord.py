"""TFRecord framing: where every record of an event file starts, with both CRCs verified.

A record is `uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)`
(little-endian). Walking the length fields one by one costs a Python step per record, so the fast
path finds headers without walking: a valid header is exactly the 12 bytes `pack(L) +
masked_crc32c(pack(L))`, so every byte offset whose 8 bytes read as a length whose record fits in
the file is a candidate, its stored length CRC is checked against the CRC32C of those 8 bytes
(computed for all candidates at once, `crc.crc32c_u64`), and the surviving headers must chain
from offset 0 (`next = start + 16 + L`). Data CRCs are computed for all records at once too
(`crc.crc32c_many`: numpy for short records, the C `crc32c` package for long ones); masking and
comparing are vectorised.

When the chain does not hold (a damaged header, or header-like bytes inside a record) the careful
path walks the lengths one by one. Damage never costs more than the damaged bytes: a record whose
data CRC fails is skipped; a header whose length CRC fails is skipped by searching forward for
the next valid header (resynchronisation); a record cut short at the end of the file (a writer
still running, or a crash) is the truncated tail. Everything is counted in `Framing`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from rundiff_core import protobuf

from .crc import crc32c_many, crc32c_u64

HEADER = 12  # uint64 length + uint32 masked crc of it
FOOTER = 4  # uint32 masked crc of the data
_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_RESYNC_CHUNK = 1 << 20


@dataclass
class Framing:
    """Record data spans of one file, plus what was skipped and why."""

    starts: np.ndarray  # int64 offset of each good record's data
    lengths: np.ndarray  # int64 length of each good record's data
    size: int = 0
    bad_length_crc: int = 0  # headers whose length CRC failed (framing lost, then resynced)
    bad_data_crc: int = 0  # records skipped because their data CRC failed
    skipped_bytes: int = 0  # bytes jumped over while resynchronising
    truncated_tail: int = 0  # bytes of an incomplete record at the end of the file
    bad_offsets: list[int] = field(default_factory=list)  # first few damaged offsets, for notes

    @property
    def damaged(self) -> bool:
        return bool(self.bad_length_crc or self.bad_data_crc or self.truncated_tail)


def masked(crcs: np.ndarray) -> np.ndarray:
    """TFRecord's CRC mask: rotate right by 15 bits and add a constant (mod 2**32)."""
    c = crcs.astype(np.uint64)
    return (((c >> np.uint64(15)) | (c << np.uint64(17))) + np.uint64(_MASK_DELTA)) & np.uint64(
        0xFFFFFFFF
    )


def masked_crc(data: bytes | memoryview) -> int:
    """The masked CRC32C of one buffer (used by resync and by tests)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    c = int(crc32c_many(buf, np.zeros(1, np.int64), np.array([len(buf)], np.int64))[0])
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _crcs(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray | int) -> np.ndarray:
    """CRC32C of many slices of one buffer (all at once; no Python step per slice)."""
    if isinstance(lengths, int):
        if lengths == 8:
            return crc32c_u64(buf, starts)
        lengths = np.full(len(starts), lengths, np.int64)
    return crc32c_many(buf, starts, lengths)


def _u32_at(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint32 at each offset (vectorised gather)."""
    return protobuf.read_at(buf, pos, "<u4").astype(np.uint64)


def _walk(data: bytes, pos: int, size: int) -> tuple[list[int], int]:
    """Record offsets from `pos` following length fields only; stops where a record overruns."""
    unpack = _U64.unpack_from
    offsets: list[int] = []
    append = offsets.append
    limit = size - HEADER - FOOTER
    while pos <= limit:
        (n,) = unpack(data, pos)
        end = pos + HEADER + n + FOOTER
        if end > size:
            break
        append(pos)
        pos = end
    return offsets, pos


def _header_ok(mv: memoryview, pos: int) -> bool:
    stored = int.from_bytes(mv[pos + 8 : pos + 12], "little")
    return masked_crc(mv[pos : pos + 8]) == stored


def _skip_bad_header(fr: Framing, data: bytes, buf: np.ndarray, at: int, size: int) -> int:
    """Count a header whose length CRC failed at `at`; where framing resumes."""
    fr.bad_length_crc += 1
    if len(fr.bad_offsets) < 5:
        fr.bad_offsets.append(at)
    nxt = _resync(data, buf, at, size)
    fr.skipped_bytes += nxt - at
    return nxt


def _resync(data: bytes, buf: np.ndarray, pos: int, size: int) -> int:
    """The next offset after `pos` holding a header with a valid length CRC, or `size`."""
    start = pos + 1
    while start + HEADER <= size:
        stop = min(size - HEADER + 1, start + _RESYNC_CHUNK)
        cand = np.arange(start, stop, dtype=np.int64)
        # plausible lengths first (cheap, vectorised): the record must fit in the file
        lo = protobuf.read_at(buf, cand, "<u8")
        fits = lo <= (size - cand - HEADER - FOOTER).astype(np.uint64)
        cand = cand[fits]
        if len(cand):
            got = masked(_crcs(buf, cand, 8))
            ok = got == _u32_at(buf, cand + 8)
            if ok.any():
                return int(cand[np.argmax(ok)])
        start = stop
    return size


def _chain(data: bytes, size: int) -> tuple[np.ndarray, int] | None:
    """Record offsets found without walking, and the truncated-tail size; None if no clean chain."""
    if size < HEADER + FOOTER:
        return (np.empty(0, np.int64), size) if size else (np.empty(0, np.int64), 0)
    n = size - HEADER - FOOTER + 1  # offsets where a complete empty record could start
    lengths_at = np.ndarray((n,), dtype="<u8", buffer=data, strides=(1,))
    crcs_at = np.ndarray((n,), dtype="<u4", buffer=data, offset=8, strides=(1,))
    limit = np.uint64(n - 1)
    buf = np.frombuffer(data, dtype=np.uint8)
    parts = []
    # block by block (1 MiB of offsets): a few MB of temporaries reused, not hundreds of MB of
    # fresh pages; every candidate's length CRC is checked (cheaper than first asking whether its
    # successor is a candidate too: look-alikes' successors are scattered over the file)
    for lo in range(0, n, _RESYNC_CHUNK):
        hi = min(n, lo + _RESYNC_CHUNK)
        c = np.flatnonzero(lengths_at[lo:hi] <= limit) + lo
        c = c[lengths_at[c] <= (n - 1 - c).astype(np.uint64)]  # the whole record fits
        got = crc32c_u64(buf, c).astype(np.uint32)
        got = ((got >> np.uint32(15)) | (got << np.uint32(17))) + np.uint32(_MASK_DELTA)  # wraps
        parts.append(c[got == crcs_at[c]])
    heads = np.concatenate(parts)
    if not len(heads) or heads[0] != 0:
        return None
    lens = lengths_at[heads].astype(np.int64)
    nxt = heads + HEADER + FOOTER + lens
    if not (nxt[:-1] == heads[1:]).all():
        return None  # header-like bytes inside a record, or a broken header: walk instead
    end = int(nxt[-1])
    mv = memoryview(data)
    extra: list[int] = []
    while size - end >= HEADER + FOOTER and _header_ok(mv, end):
        (length,) = _U64.unpack_from(data, end)
        if end + HEADER + FOOTER + length > size:
            return heads if not extra else np.concatenate([heads, extra]), size - end
        extra.append(end)
        end += HEADER + FOOTER + length
    if extra:
        heads = np.concatenate([heads, np.asarray(extra, np.int64)])
    if end == size:
        return heads, 0
    if size - end < HEADER or _header_ok(mv, end):
        return heads, size - end  # an incomplete header, or a record running past the end
    return None


def frame_records(data: bytes) -> Framing:
    """Every record of an event file whose two CRCs hold, in file order."""
    size = len(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    mv = memoryview(data)
    fr = Framing(np.empty(0, np.int64), np.empty(0, np.int64), size=size)
    fast = _chain(data, size)
    if fast is not None:
        offs, fr.truncated_tail = fast
        return _check_data(fr, buf, data, offs)
    parts: list[np.ndarray] = []
    pos = 0
    while pos < size:
        offsets, stop = _walk(data, pos, size)
        offs = np.asarray(offsets, dtype=np.int64)
        if len(offs):
            head_ok = masked(_crcs(buf, offs, 8)) == _u32_at(buf, offs + 8)
            if not head_ok.all():
                # framing is only trustworthy up to the first bad header: resync after it
                first_bad = int(np.argmin(head_ok))
                parts.append(offs[:first_bad])
                pos = _skip_bad_header(fr, data, buf, int(offs[first_bad]), size)
                continue
            parts.append(offs)
        pos = stop
        if pos >= size:
            break
        # the walk stopped short of the end: a truncated tail, or a corrupt length field
        if size - pos >= HEADER and not _header_ok(mv, pos):
            pos = _skip_bad_header(fr, data, buf, pos, size)
            continue
        fr.truncated_tail = size - pos
        break
    offs = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return _check_data(fr, buf, data, offs)


def _check_data(fr: Framing, buf: np.ndarray, data: bytes, offs: np.ndarray) -> Framing:
    """Keep the records whose data CRC holds."""
    if len(offs):
        lengths = protobuf.read_at(buf, offs, "<u8").astype(np.int64)
        starts = offs + HEADER
        data_ok = masked(_crcs(buf, starts, lengths)) == _u32_at(buf, starts + lengths)
        if not data_ok.all():
            fr.bad_data_crc = int((~data_ok).sum())
            fr.bad_offsets.extend(offs[~data_ok][: max(0, 5 - len(fr.bad_offsets))].tolist())
            starts, lengths = starts[data_ok], lengths[data_ok]
        fr.starts, fr.lengths = starts, lengths
    return fr
