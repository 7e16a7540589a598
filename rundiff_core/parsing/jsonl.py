"""Fast, forgiving JSON-lines reading shared by adapters.

pyarrow's C++ reader parses the common case; the rare file it refuses (bare NaN/Infinity, a type
that changes mid-file, a corrupt line) falls back to a per-line parse that keeps every good line
and counts the rest. A truncated last line (a run still being written) is dropped with a note. `json_lines` is that
per-line parse on its own: each object with its line number, every kind of damage counted.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

_NON_SPACE = re.compile(rb"\S")
# polars parses large files ~1.7× faster than pyarrow but costs more per call: small files go
# straight to pyarrow (measured on this project's 2-core machine: crossover near a few MB).
POLARS_MIN_BYTES = 4 << 20
MAX_LINE_BYTES = 64 << 20  # one JSON line longer than this is not read


def _block_size(n: int) -> int:
    """Blocks big enough to amortise per-block setup, small enough to parse on every core."""
    cores = max(1, os.cpu_count() or 1)
    return int(min(max(1 << 20, n // (4 * cores) + 1), 1 << 30))


@dataclass
class JsonlResult:
    table: pa.Table | None = None
    rows: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)

    def to_pandas(self) -> Any:  # a pandas.DataFrame; pandas is imported only here
        if self.table is not None:
            return self.table.to_pandas()
        import pandas as pd

        return pd.DataFrame(self.rows or [])


def torn_tail_cut(raw: memoryview | bytes, name: str, notes: list[str]) -> int:
    """Length of `raw` to parse: a torn last line (a run being written) is cut with a note."""
    n = len(raw)
    if n == 0 or raw[n - 1 : n] == b"\n":
        return n
    start = max(0, n - (1 << 20))
    nl = bytes(raw[start:n]).rfind(b"\n")
    if nl < 0 and start > 0:  # a last line longer than the window: its start is further back
        start, nl = 0, bytes(raw[:n]).rfind(b"\n")
    cut = start + nl + 1 if nl >= 0 else 0
    tail = bytes(raw[cut:n])
    if not tail.strip():
        return n
    try:
        json.loads(tail)
        return n  # a complete last record without its newline
    except ValueError:
        line_no = bytes(raw[:cut]).count(b"\n") + 1
        notes.append(
            f"{name}: truncated last line {line_no} ({len(tail)} bytes) skipped — "
            "the run is probably still being written"
        )
        return cut


def _read_with_polars(path: str, raw: bytes, cut: int) -> pa.Table | None:
    """polars' reader when installed and provably lossless, else None (pyarrow takes over).

    polars infers the schema from the first rows and silently drops fields first seen later, and
    turns a numeric column with one stray string into text. So the result is accepted only when
    every `":` in the input (one per key) is matched by a non-null cell and no column is text.
    """
    try:
        import polars as pl
    except ImportError:
        return None
    from concurrent.futures import ThreadPoolExecutor

    # The whole file: polars maps the path itself (no copy). A torn tail: parse the good prefix.
    source = path if cut == len(raw) else io.BytesIO(memoryview(raw)[:cut])
    with ThreadPoolExecutor(max_workers=1) as pool:  # polars parses without the GIL meanwhile
        parsed = pool.submit(pl.read_ndjson, source, infer_schema_length=10_000)
        keys_in_text = raw.count(b'":', 0, cut)
        try:
            frame = parsed.result()
        except Exception:  # malformed input, bare NaN…: polars raises several error types
            return None
    if any(dtype == pl.String or dtype == pl.Object for dtype in frame.schema.values()):
        return None
    if _count_cells(frame) != keys_in_text:
        return None
    return frame.to_arrow()


def _count_cells(frame: Any) -> int:
    import polars as pl

    total = 0
    for series in frame.get_columns():
        total += len(series) - series.null_count()
        if isinstance(series.dtype, pl.Struct):
            total += _count_cells(series.struct.unnest())
        elif isinstance(series.dtype, pl.List):
            return -1  # lists of objects hide keys we cannot count cheaply
    return total


def read_jsonl(path: str, *, name: str | None = None) -> JsonlResult:
    """Read a JSON-lines file; returns an Arrow table (fast path) or plain rows (fallback)."""
    label = name or path
    result = JsonlResult()
    with open(path, "rb") as fh:
        raw = fh.read()
    cut = torn_tail_cut(raw, label, result.notes)
    if _NON_SPACE.search(raw, 0, cut) is None:
        result.rows = []
        return result
    table = _read_with_polars(path, raw, cut) if cut >= POLARS_MIN_BYTES else None
    if table is not None:
        result.table = table
        return result
    if raw.find(b"NaN", 0, cut) < 0 and raw.find(b"Infinity", 0, cut) < 0:
        import pyarrow as pa  # here, not at import: the numpy-only readers never need it
        import pyarrow.json as pa_json

        try:
            buf = pa.py_buffer(raw)
            if cut < len(raw):
                buf = buf.slice(0, cut) if cut else pa.py_buffer(b"\n")
            result.table = _first_seen_order(pa_json.read_json(
                pa.BufferReader(buf),
                read_options=pa_json.ReadOptions(block_size=_block_size(cut)),
                parse_options=pa_json.ParseOptions(unexpected_field_behavior="infer"),
            ))
            return result
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    result.rows, result.skipped_lines = _rows_of(raw, cut, label, result.notes)
    return result


def _rows_of(raw: bytes, cut: int, label: str, notes: list[str]) -> tuple[list[dict[str, Any]], list[int]]:
    """The JSON objects of `raw[:cut]`, line by line (`json_lines` on the bytes already read),
    and the numbers of the lines that are none, counted in one note."""
    report = JsonLines(label)
    rows = [obj for _n, obj in json_lines(io.BytesIO(raw if cut == len(raw) else raw[:cut]), report)]
    skipped = sorted(report.bad + report.not_objects + report.too_long)
    if skipped:
        notes.append(corrupt_lines_note(label, skipped))
    return rows, skipped


def read_jsonl_rows(path: str, *, name: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Every JSON-object line of a file as a dict, json.loads per line (no pyarrow: for a reader
    that wants the rows themselves), and the notes: a torn last line, corrupt lines, an unreadable
    file."""
    label = name or path
    notes: list[str] = []
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return [], [f"{label}: unreadable ({exc.strerror}); skipped"]
    cut = torn_tail_cut(raw, label, notes)
    return _rows_of(raw, cut, label, notes)[0], notes


def last_jsonl_row(path: str) -> dict[str, Any] | None:
    """The last complete JSON-object line of a file, read from its tail (a window that grows
    until it holds one): what a reader wants for a summary without the whole history."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            window = 1 << 18
            while True:
                start = max(0, size - window)
                fh.seek(start)
                lines = [ln for ln in fh.read(size - start).split(b"\n") if ln.strip()]
                for line in reversed(lines[1:] if start > 0 else lines):  # the first may be cut
                    try:
                        obj = json.loads(line)
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(obj, dict):
                        return obj
                if start == 0:
                    return None
                window *= 4
    except OSError:
        return None


def _first_seen_order(table: Any) -> Any:
    """The columns by the row that first holds a value (stable: keys first seen on one line keep
    the order pyarrow met them in). Blocks parsed in parallel add the keys each first sees in
    whatever order the blocks finish, so without this the key order changed from run to run. A
    column with no value at all (only nulls) keeps its place among the first line's keys."""
    import pyarrow.compute as pc

    def first(i: int) -> int:
        col = table.column(i)
        if col.null_count == 0:
            return 0
        got = pc.index(col.is_valid(), True).as_py()
        return got if got >= 0 else 0

    order = sorted(range(table.num_columns), key=first)
    return table if order == list(range(table.num_columns)) else table.select(order)


def corrupt_lines_note(label: str, skipped: list[int]) -> str:
    """The one note for lines that are not JSON objects (their 1-based numbers, first five)."""
    shown = ", ".join(map(str, skipped[:5]))
    more = "…" if len(skipped) > 5 else ""
    return f"{label}: {len(skipped)} corrupt line(s) skipped (line {shown}{more})"


@dataclass
class JsonLines:
    """What reading a JSON-lines file line by line cost: bad lines (numbers), a torn last line,
    non-objects, lines over MAX_LINE_BYTES, an unreadable file."""

    name: str
    lines: int = 0
    bad: list[int] = field(default_factory=list)
    not_objects: list[int] = field(default_factory=list)
    torn_last: bool = False
    too_long: list[int] = field(default_factory=list)
    error: str = ""

    def notes(self) -> list[str]:
        out = [f"{self.name}: {self.error}"] if self.error else []
        for lines, what in ((self.bad, "not valid JSON"), (self.not_objects, "not a JSON object"),
                            (self.too_long, f"over {MAX_LINE_BYTES >> 20} MiB")):
            if lines:
                shown = ", ".join(str(n) for n in lines[:5])
                more = f", … ({len(lines) - 5} more)" if len(lines) > 5 else ""
                out.append(f"{self.name}: {len(lines)} line(s) {what} skipped (line {shown}{more})")
        if self.torn_last:
            out.append(f"{self.name}: the last line is cut short (no newline, not valid JSON: a "
                       "launch still writing, or a truncated copy); skipped")
        return out


def json_lines(path: str | IO[bytes], report: JsonLines) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON object line of `path` (a file name or a binary file),
    read a line at a time (never whole); damage counted in `report`."""
    try:
        fh = open(path, "rb") if isinstance(path, str) else path  # noqa: SIM115 - closed below
    except OSError as exc:
        report.error = f"unreadable ({exc.strerror or exc}); not read"
        return
    with fh:
        n = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            n += 1
            report.lines = n
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                report.too_long.append(n)
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = fh.readline(MAX_LINE_BYTES)
                continue
            text = raw.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                if raw.endswith(b"\n"):
                    report.bad.append(n)
                else:  # only the last line lacks its newline
                    report.torn_last = True
                continue
            if isinstance(obj, dict):
                yield n, obj
            else:
                report.not_objects.append(n)


def first_json_object(head: bytes) -> dict[str, Any] | None:
    """The first line of a file's head as a JSON object, when that line is complete in `head`.
    Lines that damage made unreadable before it (a zeroed block, bytes that are not UTF-8, a
    line opening `{` that does not parse) are passed over, at most 8: a damaged first line costs
    that line, not the file's kind. A readable line that is no JSON object ends the look."""
    for line in (head.split(b"\n")[:-1] or [head])[:8]:
        line = line.strip()
        if not line:
            continue
        if not line.startswith(b"{"):
            if b"\x00" in line or not _utf8(line):
                continue
            return None
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        return obj if isinstance(obj, dict) else None
    return None


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True

