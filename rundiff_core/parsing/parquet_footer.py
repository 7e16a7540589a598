"""Which columns a Parquet file has, from its footer, with the standard library only.

Sniffers run on every path `rundiff detect` or a bare address meets and must not import pyarrow
(~0.1 s, and pandas behind it). The footer is Thrift compact-encoded: every column name is a
string stored as its varint length followed by its bytes, so a name shows as that exact byte run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

PARQUET_MAGIC = b"PAR1"
FOOTER_LIMIT = 1 << 20  # a writer's footer is a few KiB; a bigger one is left undecided


def footer_has_columns(path: str, names: Iterable[str]) -> bool | None:
    """True/False: the footer has/lacks every one of `names`; None: no readable footer (not
    Parquet, torn, or a footer over FOOTER_LIMIT)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != PARQUET_MAGIC:
                return None
            size = fh.seek(0, os.SEEK_END)
            if size < 12:
                return None
            fh.seek(size - 8)
            tail = fh.read(8)
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != PARQUET_MAGIC or not 0 < length <= min(FOOTER_LIMIT, size - 12):
                return None
            fh.seek(size - 8 - length)
            footer = fh.read(length)
    except OSError:  # unreadable: undecided
        return None
    return all(_thrift_string(name) in footer for name in names)


def _thrift_string(name: str) -> bytes:
    raw = name.encode()
    n, out = len(raw), bytearray()
    while True:  # unsigned varint of the length
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out) + raw
