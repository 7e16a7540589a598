"""TFRecord framing: where every record of an event file starts, with both CRCs verified.

A record is `uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)`
(little-endian). Walking the length fields one by one costs a Python step per record, so records
are found without walking: a valid header is exactly the 12 bytes `pack(L) + masked_crc32c(pack(L))`,
so every byte offset whose 8 bytes read as a length whose record fits in the file is a candidate,
its stored length CRC is checked against the CRC32C of those 8 bytes (computed for all candidates
at once, `crc.crc32c_u64`), and the surviving headers ("heads") are chained from offset 0
(`next = start + 16 + L`). Data CRCs are computed for all records at once too (`crc.crc32c_many`:
numpy for short records, the C `crc32c` package for long ones). A clean file (the chain holds from
0 to the end, every data CRC checks) is done there: that is the fast path.

Damage costs only what it touches. A record is read only when its header's length CRC and its
data CRC both check. Where the chain breaks — the next record's header fails its length CRC, its
data fails its data CRC, or no header starts where the last good record ends — reading resumes at
the first offset after the break where a record starts whose two CRCs check (the byte-by-byte
search is the head scan above, which already looked at every offset of the file). So bytes that
are intact but shifted (bytes inserted, removed or repeated) are read again; TensorBoard's own
reader stops at the first failed check. The candidates a search has to hash that no chain
reached (a header that checks inside a record, say) count against `RESYNC_BUDGET`; when it is
spent, the search gives up and the rest of the file is one damaged stretch, said so.

Each stretch between the last good record and the next is a `Damage` with its exact byte range and
what was found in it, not a guess: records whose header checks but whose data CRC fails (each a
record skipped), records whose header is damaged but whose data checks against their own CRC,
found back from the next good record (each a record skipped), and bytes that frame no record at
all — TFRecord does not number its records, so records lost there cannot be counted, and the
notes say so; nor can they when a record's length runs past the next good record's start (bytes
were removed there). Records right after a stretch that repeat, byte for byte, records already read (same
step, tag, wall time and value: a duplicated region read twice) are dropped and counted; when the
whole stretch is the seam of such a region — its bytes the start of what is read again after it
and a copy of what was read before it — no record was lost, and that is said. A header that
checks but whose record runs past the end of the file, or fewer than 12 bytes left, with no good
record after it, is the truncated tail (a writer still running, or killed).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from rundiff_core import protobuf

from .crc import crc32c_many, crc32c_u64

HEADER = 12  # uint64 length + uint32 masked crc of it
FOOTER = 4  # uint32 masked crc of the data
MIN_RECORD = HEADER + FOOTER
_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_SCAN_CHUNK = 1 << 20  # offsets whose header is checked together
RESYNC_BUDGET = 64 << 20  # bytes of unchained candidates hashed by one search before it gives up
BACK_WINDOW = 4096  # a record with a damaged header is looked for this far back from a good one
BACK_RECORDS = 8  # at most this many such records per stretch
UNKNOWN, BAD, GOOD = -1, 0, 1


@dataclass
class Damage:
    """One stretch where no record whose two CRCs check starts, and what was found in it."""

    start: int  # file offsets [start, end) of the unreadable bytes
    end: int
    zero_bytes: int = 0  # of them, bytes that are zero
    bad_data: int = 0  # records begun here whose header checks and whose data CRC fails
    bad_header: int = 0  # records ending here whose data CRC checks but whose header does not
    unframed: int = 0  # bytes that none of those records accounts for
    overrun: int = 0  # bytes the last record from the front claims past the next good record's
    # start: bytes are missing here (removed), and so are the records they held, uncounted
    repeated: int = 0  # records right after it repeating records already read: dropped
    shift: int = 0  # how many bytes before the first of them their first copy is
    seam: int = -1  # the seam of a repeated region: from this offset the file repeats the
    # `shift` bytes before it, so every byte here is read elsewhere; -1 when not
    at_end: bool = False  # no good record after it (the end of the file)
    gave_up: bool = False  # the search for the next good record spent its budget

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def skipped(self) -> int:
        """Records seen here and not read (their CRCs fail)."""
        return self.bad_data + self.bad_header

    @property
    def lost(self) -> int | None:
        """Records lost here, when every byte is accounted for; None when some frame nothing."""
        if self.seam >= 0:
            return 0
        return None if self.unframed or self.overrun else self.skipped

    def as_meta(self) -> dict:
        return {"bytes": [[self.start, self.end]], "records_lost": self.lost,
                "records_skipped": self.skipped, "bad_data_crc": self.bad_data,
                "bad_header": self.bad_header, "unframed_bytes": self.unframed,
                "overrun_bytes": self.overrun,
                "zero_bytes": self.zero_bytes, "repeated_dropped": self.repeated,
                "shift": self.shift, "seam": self.seam if self.seam >= 0 else None, "at_end": self.at_end,
                "gave_up": self.gave_up}


@dataclass
class Framing:
    """Record data spans of one file, plus what was skipped and why."""

    starts: np.ndarray  # int64 offset of each good record's data
    lengths: np.ndarray  # int64 length of each good record's data
    size: int = 0
    truncated_tail: int = 0  # bytes of an incomplete record at the end of the file
    damage: list[Damage] = field(default_factory=list)
    fast: bool = True  # the clean chain held: no search was needed

    @property
    def damaged(self) -> bool:
        return bool(self.damage or self.truncated_tail)

    @property
    def bad_data_crc(self) -> int:
        return sum(d.bad_data for d in self.damage)

    @property
    def skipped_bytes(self) -> int:
        return sum(d.size for d in self.damage)

    @property
    def repeated(self) -> int:
        return sum(d.repeated for d in self.damage)


def masked(crcs: np.ndarray) -> np.ndarray:
    """TFRecord's CRC mask: rotate right by 15 bits and add a constant (mod 2**32)."""
    c = crcs.astype(np.uint64)
    return (((c >> np.uint64(15)) | (c << np.uint64(17))) + np.uint64(_MASK_DELTA)) & np.uint64(
        0xFFFFFFFF
    )


def masked_crc(data: bytes | memoryview) -> int:
    """The masked CRC32C of one buffer (used by tests and bench scripts)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    c = int(crc32c_many(buf, np.zeros(1, np.int64), np.array([len(buf)], np.int64))[0])
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _u32_at(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint32 at each offset (vectorised gather)."""
    return protobuf.read_at(buf, pos, "<u4").astype(np.uint64)


def _data_ok(buf: np.ndarray, heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each record's data CRC checks (all at once)."""
    if not len(heads):
        return np.zeros(0, bool)
    starts = heads + HEADER
    return masked(crc32c_many(buf, starts, lengths)) == _u32_at(buf, starts + lengths)


def _header_ok(data: bytes, pos: int) -> bool:
    if len(data) - pos < HEADER:
        return False
    stored = int.from_bytes(data[pos + 8 : pos + 12], "little")
    return masked_crc(memoryview(data)[pos : pos + 8]) == stored


def _heads(data: bytes, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every offset holding a header whose length CRC checks and whose record fits in the file,
    with its length."""
    n = size - MIN_RECORD + 1  # offsets where a complete empty record could start
    if n <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lengths_at = np.ndarray((n,), dtype="<u8", buffer=data, strides=(1,))
    crcs_at = np.ndarray((n,), dtype="<u4", buffer=data, offset=8, strides=(1,))
    limit = np.uint64(n - 1)
    buf = np.frombuffer(data, dtype=np.uint8)
    parts = []
    # block by block (1 MiB of offsets): a few MB of temporaries reused, not hundreds of MB of
    # fresh pages; every candidate's length CRC is checked (cheaper than first asking whether its
    # successor is a candidate too: look-alikes' successors are scattered over the file)
    for lo in range(0, n, _SCAN_CHUNK):
        hi = min(n, lo + _SCAN_CHUNK)
        c = np.flatnonzero(lengths_at[lo:hi] <= limit) + lo
        c = c[lengths_at[c] <= (n - 1 - c).astype(np.uint64)]  # the whole record fits
        got = crc32c_u64(buf, c).astype(np.uint32)
        got = ((got >> np.uint32(15)) | (got << np.uint32(17))) + np.uint32(_MASK_DELTA)  # wraps
        parts.append(c[got == crcs_at[c]])
    heads = np.concatenate(parts)
    return heads, lengths_at[heads].astype(np.int64)


def _is_tail(data: bytes, pos: int, size: int) -> bool:
    """What is left from `pos` is an incomplete record: fewer bytes than a header, or a header
    that checks whose record runs past the end."""
    if size - pos < HEADER:
        return True
    (length,) = _U64.unpack_from(data, pos)
    return _header_ok(data, pos) and pos + MIN_RECORD + length > size


def frame_records(data: bytes) -> Framing:
    """Every record of an event file whose two CRCs hold, in file order."""
    size = len(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    heads, lengths = _heads(data, size)
    fr = Framing(np.empty(0, np.int64), np.empty(0, np.int64), size=size)
    nxt = heads + MIN_RECORD + lengths
    if len(heads) and heads[0] == 0 and (nxt[:-1] == heads[1:]).all():
        end = int(nxt[-1])
        if end == size or _is_tail(data, end, size):
            ok = _data_ok(buf, heads, lengths)
            if ok.all():  # the fast path: one clean chain, every CRC checks
                fr.truncated_tail = size - end
                fr.starts, fr.lengths = heads + HEADER, lengths
                return fr
            return _Walk(data, buf, heads, lengths, nxt, ok.astype(np.int8)).framing(fr)
    if not len(heads) and size and _is_tail(data, 0, size):
        fr.truncated_tail = size
        return fr
    return _Walk(data, buf, heads, lengths, nxt, None).framing(fr)


class _Walk:
    """The records of a file whose chain of heads does not hold from 0 to the end: the chain is
    followed segment by segment (a Python step per break, not per record), each break searched
    past, described, and the repeats after it dropped."""

    def __init__(self, data: bytes, buf: np.ndarray, heads: np.ndarray, lengths: np.ndarray,
                 nxt: np.ndarray, status: np.ndarray | None):
        self.data, self.buf, self.size = data, buf, len(data)
        self.heads, self.lengths, self.nxt = heads, lengths, nxt
        nh = len(heads)
        succ = np.searchsorted(heads, nxt)
        linked = succ < nh
        linked[linked] = heads[succ[linked]] == nxt[linked]
        self.succ = np.where(linked, succ, -1)
        if status is None:
            # data CRCs of every head some chain reaches (a head at 0, or where another ends) at
            # once; a head no chain reaches is hashed only if a search after damage meets it
            status = np.full(nh, UNKNOWN, np.int8)
            reached = np.zeros(nh, bool)
            reached[self.succ[linked]] = True
            if nh and heads[0] == 0:
                reached[0] = True
            idx = np.flatnonzero(reached)
            status[idx] = _data_ok(buf, heads[idx], lengths[idx])
        self.status = status
        self.kept = np.zeros(nh, bool)
        self.dropped = np.zeros(nh, bool)
        self._keys: np.ndarray | None = None

    # -- the walk ---------------------------------------------------------------------------
    def framing(self, fr: Framing) -> Framing:
        heads, size, status, succ = self.heads, self.size, self.status, self.succ
        nh = len(heads)
        ar = np.arange(nh)
        simple = np.zeros(nh, bool)
        if nh > 1:
            simple[:-1] = (succ[:-1] == ar[:-1] + 1) & (status[:-1] == GOOD) & (status[1:] == GOOD)
        breaks = np.flatnonzero(~simple)  # the last head is always one
        fr.fast = False
        pos = 0
        while pos < size:
            i = self._at(pos)
            if i >= 0 and self._good(i):
                j = int(breaks[np.searchsorted(breaks, i)])
                self.kept[i : j + 1] = True
                pos = int(self.nxt[j])
                continue
            # damage at pos: search for the next record whose two CRCs check
            r, gave_up = self._search(pos)
            if r < 0:
                if not gave_up and _is_tail(self.data, pos, size):
                    fr.truncated_tail = size - pos
                else:
                    fr.damage.append(self._describe(Damage(pos, size, at_end=True, gave_up=gave_up)))
                break
            d = self._describe(Damage(pos, int(heads[r])))
            fr.damage.append(d)
            pos = self._repeats(r, d)
        for d in fr.damage:
            self._seam(d, fr)
        keep = np.flatnonzero(self.kept & ~self.dropped)
        fr.starts, fr.lengths = heads[keep] + HEADER, self.lengths[keep]
        return fr

    def _at(self, pos: int) -> int:
        """The index of the head at `pos`, or -1."""
        i = int(np.searchsorted(self.heads, pos))
        return i if i < len(self.heads) and self.heads[i] == pos else -1

    def _good(self, i: int) -> bool:
        if self.status[i] == UNKNOWN:
            self.status[i] = bool(_data_ok(self.buf, self.heads[i : i + 1], self.lengths[i : i + 1])[0])
        return bool(self.status[i] == GOOD)

    def _search(self, pos: int) -> tuple[int, bool]:
        """The first head after `pos` whose data CRC checks (its index), or -1; and whether the
        search gave up (its budget of hashed bytes spent on heads no chain reached)."""
        status, nh = self.status, len(self.heads)
        k = int(np.searchsorted(self.heads, pos, side="right"))
        hashed = 0
        while k < nh:
            window = status[k : k + 4096]
            live = np.flatnonzero(window != BAD)
            if not len(live):
                k += len(window)
                continue
            k += int(live[0])
            if status[k] == GOOD:
                return k, False
            if hashed > RESYNC_BUDGET:
                return -1, True
            hashed += int(self.lengths[k])
            if self._good(k):
                return k, False
            k += 1
        return -1, False

    # -- what a stretch holds --------------------------------------------------------------------
    def _describe(self, d: Damage) -> Damage:
        """Count what is in [start, end): records whose header checks and data fails, from the
        front; records whose data checks but whose header does not, from the back; the rest."""
        arr, lengths = self.buf, self.lengths
        a, e = d.start, d.end
        d.zero_bytes = (e - a) - int(np.count_nonzero(arr[a:e]))
        p = a
        while p < e:
            i = self._at(p)
            if i < 0:
                break
            if self._good(i):
                break  # only after a search that gave up: what follows was not read
            d.bad_data += 1
            p += MIN_RECORD + int(lengths[i])
            if p > e:
                d.overrun, p = p - e, e
        if d.gave_up:  # nothing after the budget is looked at
            d.unframed = e - p
            return d
        for _ in range(BACK_RECORDS):
            if e - p < MIN_RECORD:
                break
            s = self._record_ending_at(p, e)
            if s < 0:
                break
            d.bad_header += 1
            e = s
        d.unframed = e - p
        return d

    def _record_ending_at(self, lo: int, end: int) -> int:
        """The start of a record that ends at `end` whose data CRC checks (its header being
        damaged), starting at or after `lo` and at most BACK_WINDOW bytes back; -1 if none. The
        whole span [lo, end) is tried first, then every start in the window."""
        stored = int(_u32_at(self.buf, np.array([end - FOOTER]))[0])
        first = np.array([lo], np.int64)
        if int(masked(crc32c_many(self.buf, first + HEADER, np.array([end - FOOTER - lo - HEADER])))[0]) \
                == stored:
            return lo
        s = np.arange(max(lo + 1, end - BACK_WINDOW), end - MIN_RECORD + 1, dtype=np.int64)
        if not len(s):
            return -1
        ok = np.flatnonzero(masked(crc32c_many(self.buf, s + HEADER, end - FOOTER - s - HEADER)) == stored)
        return int(s[ok[-1]]) if len(ok) else -1

    # -- repeats ---------------------------------------------------------------------------------
    def _record_key(self) -> np.ndarray:
        """Each head's (length, stored data CRC), for finding byte-identical records fast."""
        if self._keys is None:
            stored = _u32_at(self.buf, self.heads + HEADER + self.lengths)
            self._keys = (self.lengths.astype(np.uint64) << np.uint64(32)) | stored
        return self._keys

    def _bytes(self, i: int) -> bytes:
        a = int(self.heads[i])
        return self.data[a : a + MIN_RECORD + int(self.lengths[i])]

    def _original(self, m: int, hint: int) -> int:
        """A kept record before head `m` with the same bytes (`hint` tried first), or -1."""
        if 0 <= hint < m and self.kept[hint] and not self.dropped[hint] \
                and self._bytes(hint) == self._bytes(m):
            return hint
        keys = self._record_key()
        same = np.flatnonzero((keys[:m] == keys[m]) & self.kept[:m] & ~self.dropped[:m])
        mine = self._bytes(m)
        for j in same[::-1].tolist():
            if self._bytes(j) == mine:
                return j
        return -1

    def _repeats(self, r: int, d: Damage) -> int:
        """Drop the records from head `r` on (following the chain) that repeat, byte for byte,
        records already kept; returns where the walk goes on."""
        m, hint = r, -1
        while True:
            j = self._original(m, hint)
            if j < 0:
                return int(self.heads[m])
            if not d.repeated:
                d.shift = int(self.heads[m] - self.heads[j])
            d.repeated += 1
            self.kept[m] = self.dropped[m] = True
            nxt, k = int(self.nxt[m]), int(self.succ[m])
            if k < 0 or not self._good(k):
                return nxt  # the chain breaks inside the repeats: the walk handles it
            m, hint = k, int(self.succ[j])

    def _seam(self, d: Damage, fr: Framing) -> None:
        """Whether the stretch is the seam of a repeated region: its first bytes are the start of
        what is read D bytes after them, the rest a copy of what was read D bytes before them. D
        is the repeats' shift; with no repeats (no whole record in the copy before the one the
        seam cut), the stretch's own length."""
        a, e = d.start, d.end
        data, D = self.data, d.shift if d.repeated else (0 if d.at_end else e - a)
        if D <= 0 or e + D > self.size:
            return
        arr = self.buf
        differ = np.flatnonzero(arr[a:e] != arr[a + D : e + D])
        x = a + (int(differ[0]) if len(differ) else e - a)
        if x - D < 0 or data[x:e] != data[x - D : e - D]:
            return
        spans = [(a + D, x + D), (x - D, e - D)]
        holes = [(s.start, s.end) for s in fr.damage]
        if fr.truncated_tail:
            holes.append((self.size - fr.truncated_tail, self.size))
        if any(lo < hi and s < hi and lo < t for lo, hi in spans for s, t in holes):
            return
        d.seam, d.shift = x, D
