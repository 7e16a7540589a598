"""MLflow file-store metric files (`timestamp value step` lines) read into column arrays.

MLflow writes a point as `f"{timestamp} {value} {step}"` (Python's repr of the float, so
`0.9971390546709731`, `1e-05`, `nan`, `inf`, `-inf`; older MLflow: `timestamp value`; with a
dataset: `timestamp value step dataset_name dataset_digest`). It reads a file with
`codecs.open(…).readlines()` — lines as `str.splitlines` splits them — and each line with
`FileStore._get_metric_from_line`: `line.strip().split(" ")`, 2, 3 or 5 fields, `int(ts)`,
`float(value)`, `int(step)`. `parse_line` is that function, and it is the reference: every point
read here is the one `parse_line` gives for its line, bit for bit (tests/adapters/
test_mlflow_metricfile.py checks it on random and hostile lines).

The fast path: a run's metric files are read into one buffer and each parsed by one
`pyarrow.csv.read_csv` (C++, correctly rounded floats) into int64/float64 buffers taken as numpy
arrays — no pandas. Measured whole process, it is faster than parsing the lines with numpy SWAR
(docs/performance.md). A file it does not take is read line by line with `parse_line` (bad lines
skipped and counted): a line of 2 or 5 fields, `1_000`, a line break other than \\n, \\r\\n and
\\r; and, before Arrow sees them, any file holding a byte past ASCII (Arrow drops a leading
UTF-8 BOM, Python's int() does not; unicode digits) or `x`, `X` or `(` (Arrow reads `0x10` and
`nan(1)`, which Python's int() and float() refuse).

A last line without its newline (a write cut short) is dropped and reported. Memory: the files'
bytes, the points, and one block of text on the line-by-line path (a line longer than MAX_LINE
is counted as malformed without being split).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

BLOCK = 1 << 20  # bytes of text decoded at a time on the line-by-line path
MAX_LINE = 1 << 20  # a longer line is malformed (MLflow's lines are ~40 bytes)
# bytes after which str.splitlines may break a line (a block is cut after one)
ARROW_BLOCK = 1 << 17
_BREAK = re.compile(rb"[\n\r\x0b\x0c\x1c-\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")
# where Arrow's number parsing accepts what Python's refuses (0x10, nan(1))
_ARROW_ONLY = (b"x", b"X", b"(")
_ARROW: list = []  # (pyarrow, pyarrow.csv, options) once imported


def parse_line(line: str) -> tuple[float, float, float] | None:
    """(step, value, wall seconds) of one stripped metric line, or None when malformed.

    MLflow's `FileStore._get_metric_from_line`: `split(" ")` into 2, 3 or 5 fields,
    `int(timestamp)`, `float(value)`, `int(step)` (no step field: step 0). rundiff reads the step
    of a 5-field (dataset) line too, where MLflow's reader gives 0. A timestamp or step too large
    for a float is malformed (MLflow would keep the Python int)."""
    if line.count(" ") not in (1, 2, 4):
        return None
    parts = line.split(" ")
    try:
        ts = int(parts[0])
        value = float(parts[1])
        step = int(parts[2]) if len(parts) >= 3 else 0
        return float(step), value, ts / 1000.0
    except (ValueError, OverflowError):
        return None


@dataclass
class MetricColumns:
    """Every point of the files read, in file order then line order: `code` is the file's
    index in the list given. `bad` (malformed lines) and `truncated` are per file."""

    code: np.ndarray
    step: np.ndarray
    value: np.ndarray
    wall: np.ndarray
    bad: list[int] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)


def read_metric_files(paths: Sequence[str]) -> MetricColumns:
    """Every point of the metric files `paths`, in order; OSError when one cannot be read."""
    sizes = [os.stat(path).st_size for path in paths]
    buf = bytearray(sum(sizes))
    view = memoryview(buf)
    starts: list[int] = []
    cut: list[bool] = []
    pos = 0
    for path, size in zip(paths, sizes, strict=True):
        starts.append(pos)
        limit = pos + size  # a file that grew since stat is read as it was (its tail may be cut)
        with open(path, "rb", buffering=0) as fh:
            while pos < limit:
                got = fh.readinto(view[pos:limit])
                if not got:
                    break
                pos += got
        pos = _end_file(buf, starts[-1], pos, cut)
    view.release()
    return _parse(buf, starts, pos, cut)


def parse_metric_bytes(blobs: Sequence[bytes]) -> MetricColumns:
    """The same for metric files' contents in memory."""
    buf = bytearray(sum(len(b) for b in blobs))
    starts: list[int] = []
    cut: list[bool] = []
    pos = 0
    for data in blobs:
        starts.append(pos)
        buf[pos:pos + len(data)] = data
        pos = _end_file(buf, pos, pos + len(data), cut)
    return _parse(buf, starts, pos, cut)


def _end_file(buf: bytearray, start: int, pos: int, cut: list[bool]) -> int:
    """Where the next file goes: after this one's last newline (a cut-short line dropped)."""
    short = pos > start and buf[pos - 1] != 10
    if short:
        pos = buf.rfind(b"\n", start, pos) + 1 or start
    cut.append(short)
    return pos


def _parse(buf: bytearray, starts: list[int], end: int, cut: list[bool]) -> MetricColumns:
    bad = [0] * len(starts)
    parts = []
    ascii_ = np.frombuffer(buf, dtype=np.uint8, count=end)
    for f, (a, z) in enumerate(zip(starts, [*starts[1:], end], strict=True)):
        if z <= a:
            continue
        got = None
        if ascii_[a:z].max() < 0x80 and not any(buf.find(b, a, z) >= 0 for b in _ARROW_ONLY):
            got = _arrow(buf, a, z)
        if got is None:
            *got, bad[f] = _line_by_line(buf, a, z)
        parts.append((np.full(len(got[0]), f, dtype=np.int32), *got))
    del ascii_
    if not parts:
        empty = np.zeros(0, dtype=np.float64)
        return MetricColumns(np.zeros(0, dtype=np.int32), empty, empty, empty, bad, cut)
    code, step, value, wall = (np.concatenate([p[j] for p in parts]) if len(parts) > 1
                               else parts[0][j] for j in range(4))
    return MetricColumns(code, step, value, wall, bad, cut)


def _arrow_parts() -> tuple:
    if not _ARROW:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        _ARROW.extend([pa, pacsv, (
            # blocks of ARROW_BLOCK on every core: a run's files parse in ~2/3 of the time
            # one thread takes (for about the same CPU)
            pacsv.ReadOptions(column_names=["ts", "value", "step"], block_size=ARROW_BLOCK,
                              use_threads=True),
            pacsv.ParseOptions(delimiter=" ", quote_char=False),
            # no null spellings: "nan"/"inf"/"-inf" are floats, an empty field is an error
            pacsv.ConvertOptions(
                column_types={"ts": pa.int64(), "value": pa.float64(), "step": pa.int64()},
                null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False),
        )])
    return tuple(_ARROW)


def _arrow(buf: bytearray, a: int, z: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(step, value, wall) of the file buf[a:z] (ASCII, no `x`, `X` or `(`) by one Arrow CSV
    parse, or None when a line is not three fields of int, float and int. Arrow ends rows where
    `str.splitlines` ends lines in ASCII text (\\n, \\r\\n, \\r; it does not split at \\v, \\f or
    \\x1c-\\x1e, and a field holding one is no number) and skips empty ones, as `parse_line`'s
    caller skips blank lines: the rows are the points parse_line gives."""
    pa, pacsv, (read, parse, convert) = _arrow_parts()
    try:
        table = pacsv.read_csv(pa.py_buffer(memoryview(buf)[a:z]), read_options=read,
                               parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, ValueError):
        return None
    ts = _column(table.column("ts"), np.int64)
    wall = ts.astype(np.float64)
    wall /= 1000.0  # int(ts) / 1000.0: the int rounded to a double, then divided
    step = _column(table.column("step"), np.int64).astype(np.float64)
    value = _column(table.column("value"), np.float64).copy()  # own it: the table goes
    return step, value, wall


def _column(col, dtype: type) -> np.ndarray:
    """A null-free int64/float64 Arrow column as numpy, from its buffers (Arrow's to_numpy
    imports pandas)."""
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * 8)
             for c in col.chunks if len(c)]
    if not parts:
        return np.zeros(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _line_by_line(buf: bytearray, a: int, z: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(step, value, wall, bad) of buf[a:z] by `parse_line` over `str.splitlines`, as MLflow
    reads a file; one block of text at a time, each cut after a line break (which splits no
    character and no line, but may split a CRLF: its halves end a line and a blank one)."""
    steps: list[float] = []
    values: list[float] = []
    walls: list[float] = []
    bad = 0
    pos = a
    while pos < z:
        stop = min(z, pos + BLOCK)
        if stop < z:
            cut = buf.rfind(b"\n", pos, stop) + 1
            if not cut:
                cut = _last_break(buf, pos, stop)
            if not cut:  # a line longer than a block: malformed (MAX_LINE), skipped whole
                bad += 1
                nxt = _BREAK.search(buf, max(pos, stop - 2), z)  # (a break may straddle stop)
                pos = nxt.end() if nxt else z
                continue
            stop = cut
        text = buf[pos:stop].decode("utf-8", errors="replace")
        pos = stop
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                continue
            got = parse_line(line) if len(line) <= MAX_LINE else None
            if got is None:
                bad += 1
            else:
                steps.append(got[0])
                values.append(got[1])
                walls.append(got[2])
    return (np.array(steps, dtype=np.float64), np.array(values, dtype=np.float64),
            np.array(walls, dtype=np.float64), bad)


def _last_break(buf: bytearray, a: int, z: int) -> int:
    """The position after the last line break in buf[a:z], 0 when there is none."""
    last = 0
    for m in _BREAK.finditer(buf, a, z):
        last = m.end()
    return last
