"""Fast, forgiving JSON-lines reading shared by adapters.

pyarrow's C++ reader parses the common case; the rare file it refuses (bare NaN/Infinity, a type
that changes mid-file, a corrupt line) falls back to a per-line parse that keeps every good line
and counts the rest. A truncated last line (a run still being written) is dropped with a note.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.json as pa_json


@dataclass
class JsonlResult:
    table: pa.Table | None = None
    rows: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)

    def to_pandas(self) -> pd.DataFrame:
        if self.table is not None:
            return self.table.to_pandas()
        return pd.DataFrame(self.rows or [])


def _strip_torn_tail(raw: bytes, name: str, notes: list[str]) -> bytes:
    if not raw or raw.endswith(b"\n"):
        return raw
    cut = raw.rfind(b"\n") + 1
    tail = raw[cut:]
    if not tail.strip():
        return raw
    try:
        json.loads(tail)
        return raw + b"\n"
    except ValueError:
        line_no = raw.count(b"\n", 0, cut) + 1
        notes.append(
            f"{name}: truncated last line {line_no} ({len(tail)} bytes) skipped — "
            "the run is probably still being written"
        )
        return raw[:cut]


def read_jsonl(path: str, *, name: str | None = None) -> JsonlResult:
    """Read a JSON-lines file; returns an Arrow table (fast path) or plain rows (fallback)."""
    label = name or path
    with open(path, "rb") as fh:
        raw = fh.read()
    result = JsonlResult()
    raw = _strip_torn_tail(raw, label, result.notes)
    if not raw.strip():
        result.rows = []
        return result
    if b"NaN" not in raw and b"Infinity" not in raw:
        try:
            result.table = pa_json.read_json(
                io.BytesIO(raw),
                read_options=pa_json.ReadOptions(block_size=max(1 << 20, min(len(raw) + 1, 1 << 30))),
                parse_options=pa_json.ParseOptions(unexpected_field_behavior="infer"),
            )
            return result
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            result.skipped_lines.append(i)
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        else:
            result.skipped_lines.append(i)
    if result.skipped_lines:
        shown = ", ".join(map(str, result.skipped_lines[:5]))
        more = "…" if len(result.skipped_lines) > 5 else ""
        result.notes.append(
            f"{label}: {len(result.skipped_lines)} corrupt line(s) skipped (line {shown}{more})"
        )
    result.rows = rows
    return result
