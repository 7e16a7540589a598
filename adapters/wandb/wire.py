"""The few `wandb_internal` messages rundiff needs, read with rundiff_core.protobuf's field walk.

A record is decoded one field at a time here; `vector.py` decodes the common records many at a
time. Anything a damaged record can raise is in `DAMAGE`: callers count and skip, never crash.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from rundiff_core import protobuf

# what a damaged record can raise while decoded one by one: counted and skipped, never fatal
DAMAGE = (protobuf.ProtobufError, IndexError, UnicodeDecodeError, ValueError, TypeError, OverflowError)


def text(buf: bytes, span: tuple[int, int]) -> str:
    return buf[span[0] : span[1]].decode("utf-8", "replace")


_TYPED_WIRE = {3: 0, 4: 0, 5: 0, 6: 1, 7: 2, 8: 2}  # HistoryItem's typed value fields


def typed_value(fno: int, wire: int, val: Any, buf: bytes) -> bytes:
    """A HistoryItem's typed value (newer writers) as the equivalent JSON bytes."""
    if _TYPED_WIRE.get(fno) != wire:
        raise protobuf.ProtobufError(f"field {fno} with wire type {wire}")
    if fno == 3:
        return b"null"
    if fno == 4:
        return b"true" if val else b"false"
    if fno == 5:  # sint64, zigzag
        return str(protobuf.zigzag(val)).encode()
    if fno == 6:
        x = np.frombuffer(val.to_bytes(8, "little"), "<f8")[0]
        return b"NaN" if math.isnan(x) else repr(float(x)).replace("inf", "Infinity").encode()
    if fno == 7:
        return json.dumps(text(buf, val)).encode()
    return buf[val[0] : val[1]]  # 8: json


def item(buf: bytes, start: int, end: int) -> tuple[tuple[str, ...], bytes]:
    """A Config/Summary/History item: (key path, value JSON bytes)."""
    flat = None
    nested: list[str] = []
    value = b"null"
    typed = None
    for fno, wire, val in protobuf.fields(buf, start, end):
        if fno == 2 and wire == 2:
            nested.append(text(buf, val))
        elif fno == 1 and wire == 2:
            flat = text(buf, val)
        elif fno == 16 and wire == 2:
            value = buf[val[0] : val[1]]
        elif 3 <= fno <= 8:
            typed = typed_value(fno, wire, val, buf)
    key = tuple(nested) if nested else ((flat,) if flat is not None else ("",))
    return key, typed if typed is not None else value


def timestamp(buf: bytes, span: tuple[int, int]) -> float:
    seconds = nanos = 0
    for fno, wire, val in protobuf.fields(buf, *span):
        if fno == 1 and wire == 0:
            seconds = protobuf.int64(val)
        elif fno == 2 and wire == 0:
            nanos = val
    return seconds + nanos / 1e9


def git(buf: bytes, span: tuple[int, int]) -> dict[str, str]:
    out: dict[str, str] = {}
    for fno, wire, val in protobuf.fields(buf, *span):
        if wire == 2 and fno in (1, 2):
            out["remote_url" if fno == 1 else "commit"] = text(buf, val)
    return out
