"""History values: value_json bytes to float64 in bulk, and config/summary values to Python."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from rundiff_core import NUMBER_SPAN_PAD, number_spans


def loads(raw: bytes | None) -> Any:
    """A value_json payload as Python (bare NaN/Infinity allowed, as wandb writes them)."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def nest(pairs: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """Key paths → nested dicts (a later path through a non-dict replaces it)."""
    out: dict[str, Any] = {}
    for path, value in pairs:
        node = out
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[path[-1]] = value
    return out


_NUMERIC_FIRST = np.frombuffer(b"-0123456789NI", dtype=np.uint8)


def parse_spans(arr: np.ndarray, buf, vs: np.ndarray, ve: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """Parse the value JSON at byte spans `vs`..`ve` of `buf`: like `numeric_values`, in bulk.

    Values that start like a number are parsed by the journal's SWAR number parser
    (`number_spans`: exactly rounded, bare NaN/Infinity accepted; no pyarrow to import, ~0.15 s);
    anything else — and whatever that parser does not take as a JSON number — goes through
    `numeric_values`, so the result is `float()`'s value for every number. `arr` (the buffer as
    uint8) holds the reader's zero padding past the last record.
    """
    n = vs.size
    out = np.full(n, np.nan)
    ok = np.zeros(n, dtype=bool)
    others: list[tuple[int, str]] = []
    if not n:
        return out, ok, others
    last = len(arr) - 1
    cand = np.isin(arr[np.minimum(vs, last)], _NUMERIC_FIRST) & (ve > vs) & (ve - vs < 64)
    ci = np.flatnonzero(cand)
    if ci.size and int(ve[ci].max()) + NUMBER_SPAN_PAD <= len(arr):
        got, parsed = number_spans(arr, vs[ci], ve[ci])
        out[ci[parsed]] = got[parsed]
        ok[ci[parsed]] = True
    rest = np.flatnonzero(~ok)
    if rest.size:
        raw = list(map(buf.__getitem__, map(slice, vs[rest].tolist(), ve[rest].tolist())))
        v, o, x = numeric_values(raw)
        out[rest], ok[rest] = v, o
        others = [(int(rest[i]), kind) for i, kind in x]
    return out, ok, others


def numeric_values(raw: list[bytes], chunk: int = 8192) -> tuple[np.ndarray, np.ndarray, list]:
    """Parse value JSON bytes in bulk: (float64 values, usable mask, [(index, kind), …]).

    Numbers (with bare NaN/±Infinity) parse through `float` in C loops, a chunk at a time. A chunk
    holding anything else falls back to a per-value parse: booleans become 1/0 (listed as kind
    "bool" but usable); text, null, lists and objects are listed with their kind and not usable.
    """
    n = len(raw)
    out = np.empty(n, dtype="float64")
    ok = np.ones(n, dtype=bool)
    others: list[tuple[int, str]] = []
    for lo in range(0, n, chunk):
        part = raw[lo : lo + chunk]
        try:
            out[lo : lo + len(part)] = np.fromiter(map(float, part), dtype="float64", count=len(part))
            continue
        except ValueError:
            pass
        for j, v in enumerate(part, start=lo):
            v = bytes(v)
            try:
                if v[:1] not in _NUMBER_START:
                    raise ValueError
                out[j] = float(v)
                continue
            except ValueError:
                pass
            if v == b"true" or v == b"false":
                out[j] = 1.0 if v == b"true" else 0.0
                others.append((j, "bool"))
                continue
            ok[j] = False
            out[j] = math.nan
            others.append((j, _kind(v)))
    return out, ok, others


_NUMBER_START = frozenset(b"-0123456789NI"[i : i + 1] for i in range(13))


def _kind(v: bytes) -> str:
    first = v[:1]
    if first == b'"':
        return "text"
    if first == b"n":
        return "null"
    if first == b"{":
        try:
            obj = json.loads(v)
            if isinstance(obj, dict) and isinstance(obj.get("_type"), str):
                return str(obj["_type"])
        except ValueError:
            pass
        return "object"
    if first == b"[":
        return "list"
    return "unparseable"
