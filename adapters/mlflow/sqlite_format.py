"""The SQLite file format's smallest parts, for reading a file page by page without SQLite:
varints, records, a b-tree page's kind and header, what a sqlite_master row looks like
(https://sqlite.org/fileformat2.html). Shared by the salvage of a damaged store
(`sqlite_salvage`) and the realignment of one with whole pages inserted (`sqlite_realign`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"
PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)
TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR = 13, 5, 10, 2
BTREE_KINDS = (TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR)
SCHEMA_TYPES = ("table", "index", "view", "trigger")


def varint(buf: Any, i: int, end: int) -> tuple[int, int]:
    """A SQLite varint at buf[i] (end: where it must stop) and the position after it."""
    v = 0
    for n in range(9):
        if i >= end:
            raise BadBytes("varint past the end")
        b = buf[i]
        i += 1
        if n == 8:
            v = (v << 8) | b
            break
        v = (v << 7) | (b & 0x7F)
        if b < 0x80:
            break
    if v >= 1 << 63:
        v -= 1 << 64
    return v, i


class BadBytes(Exception):
    """A cell, record or page that does not read."""


INT_SIZES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def decode_record(buf: bytes, encoding: str = "utf-8") -> list[Any]:
    """A SQLite record's values (https://sqlite.org/fileformat2.html#record_format)."""
    end = len(buf)
    hsize, i = varint(buf, 0, end)
    if hsize < 1 or hsize > end:
        raise BadBytes("record header size")
    types = []
    while i < hsize:
        t, i = varint(buf, i, hsize)
        types.append(t)
    pos = hsize
    out: list[Any] = []
    for t in types:
        if t == 0:
            out.append(None)
        elif t in INT_SIZES:
            n = INT_SIZES[t]
            if pos + n > end:
                raise BadBytes("integer past the end")
            out.append(int.from_bytes(buf[pos:pos + n], "big", signed=True))
            pos += n
        elif t == 7:
            if pos + 8 > end:
                raise BadBytes("float past the end")
            out.append(struct.unpack(">d", buf[pos:pos + 8])[0])
            pos += 8
        elif t in (8, 9):
            out.append(t - 8)
        elif t >= 12:
            n = (t - 12) // 2
            if pos + n > end:
                raise BadBytes("text or blob past the end")
            raw = buf[pos:pos + n]
            if t % 2:
                try:
                    out.append(raw.decode(encoding))
                except UnicodeDecodeError as exc:
                    raise BadBytes("text that is not in the file's encoding") from exc
            else:
                out.append(bytes(raw))
            pos += n
        else:
            raise BadBytes("reserved serial type")
    return out


def last_int(buf: bytes) -> int | None:
    """The last value of a record when it is an integer (an index entry's rowid), decoding
    nothing else."""
    end = len(buf)
    hsize, i = varint(buf, 0, end)
    if hsize < 1 or hsize > end:
        raise BadBytes("record header size")
    pos, t = hsize, 0
    while i < hsize:
        t, i = varint(buf, i, hsize)
        n = INT_SIZES.get(t, 8 if t == 7 else 0) if t < 12 else (t - 12) // 2
        pos += n
    if t not in INT_SIZES and t not in (8, 9):
        return None
    if t in (8, 9):
        return t - 8
    n = INT_SIZES[t]
    if pos > end:
        raise BadBytes("integer past the end")
    return int.from_bytes(buf[pos - n:pos], "big", signed=True)


@dataclass
class Page:
    """A b-tree page read from the file: where it is and what its header says."""

    number: int
    kind: int
    base: int
    ptrs: int  # offset of the cell pointer array
    ncells: int
    right: int  # the right-most child of an interior page


def schema_like(r: list[Any]) -> bool:
    """A record shaped as a sqlite_master row: type, name, table name, root page, SQL."""
    return (len(r) == 5 and r[0] in SCHEMA_TYPES and isinstance(r[1], str)
            and isinstance(r[2], str) and (r[3] is None or isinstance(r[3], int))
            and (r[4] is None or isinstance(r[4], str)))
