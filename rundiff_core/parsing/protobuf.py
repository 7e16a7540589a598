"""Protobuf wire format without generated classes: the one field scanner every binary reader uses.

Two ways to read, sharing one set of rules (tags, the four wire types, varints of at most ten
bytes, a length never past its parent):

- one message at a time, in plain Python (`varint`, `fields`, `skip`): for the rare or oddly
  shaped record;
- many messages at once, in numpy (`scan`, `columns`, `repeated`, `read_varints`): decoding a
  million small protos one by one costs a Python object per message, so `scan()` walks *all*
  messages of one kind together — each pass reads the next field of every message that still has
  bytes left, so the number of passes is the number of fields in the longest message (three for
  a TensorBoard scalar event), not the number of messages. Nested messages are scanned the same
  way from the spans their parents yield.

Malformed input never crashes a reader: the scalar functions raise `ProtobufError` (a
`ValueError`), the vector ones flag the message in `bad`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rundiff_core.parsing.codes import factorize

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_SEVEN = np.uint64(0x7F)


# -- one message at a time ---------------------------------------------------------------------
class ProtobufError(ValueError):
    """Bytes that do not parse as protobuf (readers count the record and skip it)."""


def varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos`; IndexError when it runs off the end."""
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint longer than ten bytes")


def int64(v: int) -> int:
    """A varint's uint64 read as the int64 it encodes (two's complement)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def zigzag(v: int) -> int:
    """A sint32/sint64 varint's value."""
    return (v >> 1) ^ -(v & 1)


def skip(buf: bytes | bytearray | memoryview, pos: int, wire: int) -> int:
    """Position after a field's payload of wire type `wire` starting at `pos`."""
    if wire == VARINT:
        while buf[pos] & 0x80:
            pos += 1
        return pos + 1
    if wire == LEN:
        ln, pos = varint(buf, pos)
        return pos + ln
    if wire == I64:
        return pos + 8
    if wire == I32:
        return pos + 4
    raise ProtobufError(f"wire type {wire}")


def fields(buf: bytes | bytearray | memoryview, pos: int, end: int):
    """(field, wire, value) triples of the message `buf[pos:end]`: value is an int (varint and
    fixed types, little-endian), or the payload's (start, end) for length-delimited fields."""
    while pos < end:
        tag, pos = varint(buf, pos)
        fno, wire = tag >> 3, tag & 7
        if wire == LEN:
            ln, pos = varint(buf, pos)
            if pos + ln > end:
                raise ProtobufError("length past the end of its message")
            yield fno, wire, (pos, pos + ln)
            pos += ln
        elif wire == VARINT:
            v, pos = varint(buf, pos)
            yield fno, wire, v
        elif wire == I64:
            yield fno, wire, int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == I32:
            yield fno, wire, int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ProtobufError(f"wire type {wire}")
    if pos != end:
        raise ProtobufError("message overruns its length")


# -- many messages at once -----------------------------------------------------------------------


@dataclass
class Fields:
    """One row per field found: which message it belongs to, its number, type and payload."""

    owner: np.ndarray  # int64 index into the scanned messages
    field: np.ndarray  # int64 field number
    wtype: np.ndarray  # int64 wire type
    start: np.ndarray  # int64 offset of the payload (varint bytes, fixed bytes, or LEN payload)
    length: np.ndarray  # int64 payload length in bytes
    value: np.ndarray  # uint64 varint value (0 for other wire types)
    bad: np.ndarray  # bool per scanned message: malformed

    def select(self, field: int, wtype: int) -> np.ndarray:
        """Row indices of `field` with the expected wire type."""
        return np.flatnonzero((self.field == field) & (self.wtype == wtype))


def read_varints(
    buf: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value uint64, width in bytes, ok) of the varint at each offset, reading below `limit`."""
    n = len(pos)
    if n == 0:
        e = np.empty(0, np.int64)
        return np.empty(0, np.uint64), e, np.empty(0, bool)
    size = len(buf)
    inb = pos < limit
    b = buf[np.minimum(pos, size - 1)]
    value = (b & 0x7F).astype(np.uint64)
    width = np.ones(n, np.int64)
    ok = inb.copy()
    cont = np.flatnonzero(((b & 0x80) != 0) & inb)
    for k in range(1, 10):
        if not len(cont):
            return value, width, ok
        p = pos[cont] + k
        inside = p < limit[cont]
        if not inside.all():
            ok[cont[~inside]] = False
            cont, p = cont[inside], p[inside]
        bk = buf[p]
        value[cont] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        width[cont] = k + 1
        cont = cont[(bk & 0x80) != 0]
    if len(cont):
        ok[cont] = False  # more than ten bytes: not a varint
    return value, width, ok


def read_lengths(arr: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Length prefixes of one or two bytes at `at` — nearly every short field's — as (length,
    payload start, too long): a longer prefix is flagged for the caller's general path."""
    last = len(arr) - 1
    b1 = arr[np.minimum(at, last)]
    two = b1 >= 0x80
    if not two.any():
        return b1.astype(np.int64), at + 1, two
    b1 = b1.astype(np.int64)
    b2 = arr[np.minimum(at + 1, last)].astype(np.int64)
    return np.where(two, (b1 & 0x7F) | (b2 << 7), b1), at + 1 + two, two & (b2 >= 0x80)


Template = tuple[tuple[int, int], ...]


def match(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, template: Template
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Which messages are exactly the fields of `template`, in order, and those fields' payloads.

    The common layouts (a scalar Event is always wall_time, step, summary) are checked with a
    handful of whole-array operations instead of one generic pass per field.
    """
    n = len(starts)
    size = len(buf)
    pos = starts.copy()
    ok = np.ones(n, bool)
    cols = []
    for field_no, wt in template:
        ok &= pos < ends
        ok &= buf[np.minimum(pos, size - 1)] == (field_no << 3 | wt)
        p = pos + 1
        value = np.zeros(n, np.uint64)
        if wt == VARINT:
            value, length, vok = read_varints(buf, p, ends)
            ok &= vok
            start = p
        elif wt == LEN:
            length_u, width, vok = read_varints(buf, p, ends)
            vok &= length_u <= np.maximum(ends - p - width, 0).astype(np.uint64)
            ok &= vok
            start = p + width
            length = np.where(vok, length_u, 0).astype(np.int64)
        else:
            start = p
            length = np.full(n, 8 if wt == I64 else 4, np.int64)
        pos = start + length
        ok &= pos <= ends
        cols.append((start, length, value))
    ok &= pos == ends
    return ok, cols


def _match_first(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 templates: tuple[Template, ...]
                 ) -> tuple[list[tuple[Template, np.ndarray, list[tuple[np.ndarray, ...]]]],
                            np.ndarray]:
    """Each message's first matching template, tried in order on the messages no earlier one
    matched: ([(template, the messages it matched, their fields' (start, length, value))], the
    messages none matched)."""
    rest = np.arange(len(starts))
    matched = []
    for template in templates:
        if not len(rest):
            break
        hit, cols = match(buf, starts[rest], ends[rest], template)
        if not hit.any():
            continue
        matched.append((template, rest[hit], [(a[hit], b[hit], c[hit]) for a, b, c in cols]))
        rest = rest[~hit]
    return matched, rest


def scan(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, templates: tuple[Template, ...] = ()
) -> Fields:
    """Every field of every message `buf[starts[i]:ends[i]]`, each message's fields in order.

    Messages matching one of `templates` (field layouts, tried in order; single-byte tags only)
    are decoded in bulk; the rest go through the generic pass-per-field walk.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if not templates:
        return _scan(buf, starts, ends)
    n = len(starts)
    matched, rest = _match_first(buf, starts, ends, templates)
    parts: list[tuple[np.ndarray, ...]] = []
    for template, owners, cols in matched:
        for (field_no, wt), (start, length, value) in zip(template, cols, strict=True):
            parts.append((owners, np.full(len(owners), field_no, np.int64),
                          np.full(len(owners), wt, np.int64), start, length, value))
    if not parts:
        return _scan(buf, starts, ends)
    bad = np.zeros(n, bool)
    if len(rest):
        generic = _scan(buf, starts[rest], ends[rest])
        bad[rest] = generic.bad
        parts.append((rest[generic.owner], generic.field, generic.wtype, generic.start,
                      generic.length, generic.value))
    cols = [np.concatenate(c) for c in zip(*parts, strict=True)]
    return Fields(*cols, bad=bad)


def _scan(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Fields:
    """The generic walk: pass k reads the k-th field of every message that has one."""
    n = len(starts)
    bad = np.zeros(n, dtype=bool)
    pos = starts.copy()
    act = np.flatnonzero(pos < ends)
    out: list[tuple[np.ndarray, ...]] = []
    while len(act):
        p, e = pos[act], ends[act]
        tag, w, ok = read_varints(buf, p, e)
        p = p + w
        field = (tag >> np.uint64(3)).astype(np.int64)
        wt = (tag & np.uint64(7)).astype(np.int64)
        ok &= field > 0
        start = p
        length = np.zeros(len(act), np.int64)
        value = np.zeros(len(act), np.uint64)
        is_v = np.flatnonzero(wt == VARINT)
        if len(is_v):
            v, vw, vok = read_varints(buf, p[is_v], e[is_v])
            value[is_v], length[is_v] = v, vw
            ok[is_v] &= vok
        length[wt == I64] = 8
        length[wt == I32] = 4
        is_l = np.flatnonzero(wt == LEN)
        if len(is_l):
            v, vw, vok = read_varints(buf, p[is_l], e[is_l])
            room = (e[is_l] - p[is_l] - vw).astype(np.uint64)
            vok &= v <= room
            start[is_l] = p[is_l] + vw
            length[is_l] = np.where(vok, v, 0).astype(np.int64)
            ok[is_l] &= vok
        ok &= (wt == VARINT) | (wt == I64) | (wt == I32) | (wt == LEN)
        stop = start + length
        ok &= stop <= e
        if not ok.all():
            bad[act[~ok]] = True
        keep = np.flatnonzero(ok)
        out.append((act[keep], field[keep], wt[keep], start[keep], length[keep], value[keep]))
        pos[act] = stop
        act = act[keep][stop[keep] < e[keep]]
    if not out:
        z = np.empty(0, np.int64)
        return Fields(z, z, z, z, z, np.empty(0, np.uint64), bad)
    cols = [np.concatenate(c) for c in zip(*out, strict=True)]
    return Fields(*cols, bad=bad)


def repeated(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, field_no: int, wt: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every occurrence of a repeated field: (owner, start, length) in message order, and `bad`.

    Messages that hold exactly one occurrence and nothing else (a Summary with one value, the
    usual case) are taken in bulk; the rest are walked.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n = len(starts)
    hit, got = match(buf, starts, ends, ((field_no, wt),))
    owner, start, length = np.flatnonzero(hit), got[0][0][hit], got[0][1][hit]
    bad = np.zeros(n, bool)
    rest = np.flatnonzero(~hit)
    if len(rest):
        generic = _scan(buf, starts[rest], ends[rest])
        bad[rest] = generic.bad
        rows = generic.select(field_no, wt)
        owner = np.concatenate([owner, rest[generic.owner[rows]]])
        start = np.concatenate([start, generic.start[rows]])
        length = np.concatenate([length, generic.length[rows]])
        order = np.argsort(owner, kind="stable")
        owner, start, length = owner[order], start[order], length[order]
    return owner, start, length, bad


def in_message_order(f: Fields, rows: np.ndarray) -> np.ndarray:
    """`rows` reordered by owning message, keeping each message's field order (stable)."""
    owners = f.owner[rows]
    if len(owners) < 2 or bool((owners[1:] >= owners[:-1]).all()):
        return rows
    return rows[np.argsort(owners, kind="stable")]


def read_at(buf: np.ndarray, pos: np.ndarray, dtype: str) -> np.ndarray:
    """One little-endian `dtype` value at each byte offset (an unaligned strided view; no copies)."""
    dt = np.dtype(dtype)
    if not len(pos):
        return np.empty(0, dt)
    view = np.ndarray((len(buf) - dt.itemsize + 1,), dtype=dt, buffer=buf, strides=(1,))
    return view[pos]


def read_f64(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return read_at(buf, pos, "<f8")


def read_f32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return read_at(buf, pos, "<f4")


@dataclass
class Column:
    """One singular field across messages: payload start (-1 when absent), length, varint value."""

    start: np.ndarray
    length: np.ndarray
    value: np.ndarray

    @property
    def present(self) -> np.ndarray:
        return self.start >= 0


def columns(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    wanted: dict[int, int],
    templates: tuple[Template, ...] = (),
    oneof: tuple[int, ...] = (),
) -> tuple[dict[int, Column], np.ndarray, np.ndarray, Fields]:
    """Singular fields as per-message columns (proto3: the last occurrence wins).

    Returns (columns by field number, which `oneof` member is set (0: none), malformed flags, and
    the generic walk's Fields for messages no template matched — where rare fields live).
    Messages matching a template are filled straight from it, without a row per field.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n = len(starts)
    cols = {f: Column(np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint64))
            for f in wanted}
    which = np.zeros(n, np.int64)
    bad = np.zeros(n, bool)
    matched, rest = _match_first(buf, starts, ends, templates)
    for template, owners, got in matched:
        for (field_no, wt), (start, length, value) in zip(template, got, strict=True):
            if wanted.get(field_no) == wt:
                c = cols[field_no]
                c.start[owners], c.length[owners] = start, length
                if wt == VARINT:
                    c.value[owners] = value
            if field_no in oneof:
                which[owners] = field_no
    if len(rest) == n:
        generic = _scan(buf, starts, ends)
        bad = generic.bad
    else:
        generic = _scan(buf, starts[rest], ends[rest])
        bad[rest] = generic.bad
        generic.owner = rest[generic.owner]
        generic.bad = bad
    for field_no, wt in wanted.items():
        rows = generic.select(field_no, wt)
        if len(rows):
            c = cols[field_no]
            o = generic.owner[rows]
            c.start[o], c.length[o], c.value[o] = generic.start[rows], generic.length[rows], \
                generic.value[rows]
    if oneof:
        rows = np.flatnonzero(np.isin(generic.field, oneof))
        which[generic.owner[rows]] = generic.field[rows]  # the last member on the wire wins
    return cols, which, bad, generic


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=np.uint64)


def span_word(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, j: int) -> np.ndarray:
    """Bytes 8j..8j+7 of each span as one little-endian uint64, zero past the span's end.

    From two aligned 8-byte gathers shifted together where `buf` is 8-byte aligned (numpy's
    gather of unaligned words, through a 1-byte-strided view, costs about three times as much)."""
    size = len(buf)
    if size < 8:
        padded = np.zeros(8, np.uint8)
        padded[:size] = buf
        return span_word(padded, starts, lengths, j)
    p = starts + 8 * j if j else starts
    if not len(p):
        return np.zeros(0, np.uint64)
    if buf.ctypes.data % 8 == 0 and buf.strides == (1,) and int(p.max()) <= size - 16:
        aligned = buf[: size // 8 * 8].view("<u8")
        q = p >> 3
        low = ((p & 7) << 3).astype(np.uint64)
        w = aligned[q]
        w >>= low
        low = np.uint64(64) - low  # a shift by 64 gives 0: an aligned span takes one word
        w |= aligned[q + 1] << low
    else:
        words = np.ndarray((size - 7,), dtype="<u8", buffer=buf, strides=(1,))
        if int(p.max()) <= size - 8:
            w = words[p]
        else:
            pc = np.minimum(p, size - 8)  # near the end of the buffer: read earlier, shift down
            w = words[pc] >> ((p - pc) * 8).astype(np.uint64)
    w &= _BYTE_MASKS[np.clip(lengths - 8 * j, 0, 8)]
    return w


def _few_codes(h: np.ndarray, sample: int = 4096) -> tuple[np.ndarray, np.ndarray] | None:
    """factorize for hashes of a few distinct strings (a run's tags): the distinct values of a
    spread-out sample, then a binary search of every hash among them — no sort of all of them.
    Values the sample missed (a key logged now and then) are added from the misses alone. None
    when there are many distinct values (the caller sorts)."""
    uniq = np.unique(h[:: max(1, len(h) // sample)])
    if len(uniq) > 64:
        return None
    k = np.searchsorted(uniq, h)
    np.minimum(k, len(uniq) - 1, out=k)
    miss = np.flatnonzero(uniq[k] != h)
    if len(miss):
        if len(miss) * 8 > len(h):
            return None
        uniq = np.union1d(uniq, h[miss])
        if len(uniq) > 256:
            return None
        k = np.searchsorted(uniq, h)
    first = np.empty(len(uniq), np.int64)
    first[k[::-1]] = np.arange(len(h) - 1, -1, -1)  # last write wins: the first occurrence
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[k], uniq[order]


def factorize_spans(
    buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, list[bytes]]:
    """Codes (in order of first appearance) for byte strings given as spans, and the strings.

    No per-span Python object. A span of up to 16 bytes is exactly determined by its length, its
    first 8 bytes and its last 8 bytes; those are hashed, grouped, and every member compared with
    its group's first member on all three (longer spans also on their middle words). A hash
    collision (never seen, but checked) falls back to exact grouping.
    """
    n = len(starts)
    if n == 0:
        return np.empty(0, np.int64), []
    first_w = span_word(buf, starts, lengths, 0)
    tail = np.maximum(lengths - 8, 0)
    last_w = np.where(lengths > 8, span_word(buf, starts + tail, lengths - tail, 0), np.uint64(0))
    h = lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for w in (first_w, last_w):
        h ^= w + np.uint64(0x632BE59BD9B4E019) + (h << np.uint64(6)) + (h >> np.uint64(2))
    codes, uniq = _few_codes(h) or factorize(h)
    codes = codes.astype(np.int64)
    first = np.empty(len(uniq), np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)  # last write wins: the first occurrence
    rep = first[codes]
    same = (lengths == lengths[rep]) & (first_w == first_w[rep]) & (last_w == last_w[rep])
    long = np.flatnonzero(lengths > 16)
    if len(long):
        for j in range(1, (int(lengths[long].max()) - 1) // 8):
            w = span_word(buf, starts[long], lengths[long], j)
            same[long] &= w == span_word(buf, starts[rep[long]], lengths[rep[long]], j)
    if not same.all():  # a hash collision: group exactly
        raw = [bytes(buf[s : s + k]) for s, k in zip(starts.tolist(), lengths.tolist(), strict=True)]
        codes, _ = factorize(np.array(raw, dtype=object))
        codes = codes.astype(np.int64)
        first = np.empty(codes.max() + 1, np.int64)
        first[codes[::-1]] = np.arange(n - 1, -1, -1)
    uniques = [bytes(buf[s : s + k]) for s, k in zip(starts[first].tolist(), lengths[first].tolist(), strict=True)]
    return codes, uniques
