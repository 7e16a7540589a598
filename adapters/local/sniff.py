"""Tabular logs of unknown layout: sniff a few KiB, then read the whole file the way it was written.

A file is a tabular log when its header (or its first JSON record's keys) names at least one
numeric series: CSV, TSV, whitespace-delimited text, JSON lines or a JSON array of records. The x
column is the first step-like name in `STEP_NAMES` order, else the row index — and the run's notes
say which. Reading is full (never sampled) and column-wise (pyarrow's C++ CSV reader when the
delimiter is a single character), so a million-row log costs about what pyarrow alone costs.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import TYPE_CHECKING, Any

import rundiff_core  # names resolved at use: the data model (numpy) loads only when a log is read

from .lazy import np, pd  # imported on first use: sniffing needs neither

if TYPE_CHECKING:
    from .columns import Columns

#: Step-like column names, in the order one is chosen as x (compared case-, space-, `-`- and
#: `_`-insensitively, so Spinning Up's `Time Steps` is `timesteps`).
STEP_NAMES = ("step", "global_step", "iteration", "iter", "epoch", "timestep", "timesteps",
              "total_timesteps", "time/total_timesteps", "total-env-interacts", "_step")
#: Columns that hold Unix time when their values look like it (else they stay metrics).
TIME_NAMES = ("wall_time", "timestamp", "_timestamp", "time")
#: Text columns that may name what each row of a long-format table is (`split,epoch,loss` with
#: rows `train,…` and `val,…`): read as one key per (label, metric), `val/loss`, `train/loss`.
SPLIT_NAMES = ("split", "phase", "stage", "mode", "type")
MAX_SPLIT_LABELS = 8  # more distinct values than this is not a split, it is text
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,31}$")
#: A numeric column may hold this share of unreadable cells (a damaged byte, a half-written
#: row) and stay numeric: those cells are skipped and counted, never the column.
MAX_BAD_SHARE = 0.01
SNIFF_BYTES = 16 << 10
SNIFF_LINES = 40
KINDS = {"\t": "TSV", ",": "CSV", ";": "semicolon-separated text", "ws": "whitespace-delimited text",
         "jsonl": "JSON lines", "json": "a JSON array of records"}

_NUM = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$|^\s*[-+]?(?:nan|inf|infinity)\s*$",
                  re.I)
_NAME = re.compile(r"^[^\W\d]|^_", re.U)
#: a name led by digits then a letter (`2d_loss`, `3d_loss`): a name when a letter-led name is
#: beside it in the header (a row of `10k`, `5x` sizes alone is no header)
_DIGIT_NAME = re.compile(r"^\d+[^\W\d_]", re.U)


def norm_name(name: str) -> str:
    return re.sub(r"[\s_\-]", "", str(name).lower())


_STEP_NORM = [norm_name(n) for n in STEP_NAMES]


def is_number(text: str) -> bool:
    return bool(_NUM.match(text))


def step_column(columns: list[str]) -> str | None:
    """The x column: the first of STEP_NAMES (in that order) that the header holds."""
    normed = {norm_name(c): c for c in reversed(columns)}
    for n in _STEP_NORM:
        if n in normed:
            return normed[n]
    return None


_NEW: Any = object()  # "a new empty list", Sniff's default


class Sniff(rundiff_core.PlainRecord):
    """What a file's first few KiB say about its layout: `kind` (a key of KINDS), `header`,
    `comments` (leading `#` lines: SB3 monitor JSON), `step` (the x column, or None) and
    `rows_seen`. A `PlainRecord`, as the dataclass it was (init with a new list per list field, repr,
    equality, unhashable): a sniff builds one per file, and creating the dataclass cost `detect`
    more than all of its uses."""

    __match_args__ = ("kind", "header", "comments", "step", "rows_seen", "headerless", "bracketed")

    def __init__(self, kind: str, header: list[str] = _NEW, comments: list[str] = _NEW,
                 step: str | None = None, rows_seen: int = 0, headerless: bool = False,
                 bracketed: bool = False) -> None:
        self.kind = kind
        self.header: list[str] = [] if header is _NEW else header
        self.comments: list[str] = [] if comments is _NEW else comments
        self.step = step
        self.rows_seen = rows_seen
        self.headerless = headerless  # `header` names the columns; the file has no header line
        self.bracketed = bracketed  # each row is written as a list: `[0, 1, 0.85, 0.41]`

    @property
    def described(self) -> str:
        return KINDS[self.kind] + (" (each row written as a list, `[…]`)" if self.bracketed else "")


def read_head(path: str, n: int = SNIFF_BYTES) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


_ZEROED = re.compile(rb"\x00{16,}")  # a zeroed stretch: a disk block or a tail lost in a crash


def looks_binary(head: bytes) -> bool:
    """More than 1% NUL bytes outside zeroed stretches: a binary file. A text file with a stray
    NUL, a zeroed tail after a crash or a zeroed block (a lost disk sector: a run of NULs with
    text either side) is text with damage in it, not binary; a head that is mostly zeroed is."""
    nuls = head.count(0)
    if nuls <= len(head) // 100 + 1:
        return False
    rest = _ZEROED.sub(b"", head)
    return len(rest) < len(head) // 2 or rest.count(0) > len(rest) // 100 + 1


def may_be_text_log(head: bytes) -> bool:
    """False when `textlog.sniff_text` is sure to find no text log in the file that `head` (its
    first SNIFF_BYTES, from `read_head`) opens, decided without importing textlog and compiling
    its grammars: every grammar needs two records, each on a line of its own, and a file shorter
    than SNIFF_BYTES (`head` is all of it, which sniff_text reads whole) that looks binary or has
    fewer than two non-blank lines has no two records. True (ask sniff_text) otherwise."""
    if len(head) >= SNIFF_BYTES:
        return True
    if looks_binary(head):
        return False
    lines = head.decode("utf-8", errors="replace").splitlines()  # as textlog._sample splits
    return sum(1 for ln in lines if ln.strip()) >= 2


_ZEROED_TEXT = re.compile("\x00{16,}")


def _lines(head: bytes, complete: bool) -> list[str] | None:
    if looks_binary(head):
        return None
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 4:  # a character cut by the sniff window
            text = head[: exc.start].decode("utf-8-sig")
        else:  # a damaged byte or two in a text file: those cells are read as unreadable
            text = head.decode("utf-8-sig", errors="replace")
            n_lines = text.count("\n") + 1
            damaged = sum(1 for ln in text.split("\n") if "\ufffd" in ln)
            if text.count("\ufffd") > max(2, len(head) // 1000) and damaged > max(2, n_lines // 20):
                return None  # not UTF-8 on many lines: another encoding, or binary (bytes that
                # are not UTF-8 on a line or two, in a UTF-8 file, are damage in those lines)
    lines = _ZEROED_TEXT.sub("\n", text).split("\n")  # a zeroed stretch ends the line it cut
    if not complete:
        lines = lines[:-1]  # the last line may be cut by the sniff window
    return [ln.rstrip("\r") for ln in lines]


def sniff_table(path: str, head: bytes | None = None) -> Sniff | None:
    """The layout of a tabular log from its head, or None when it is not one."""
    head = read_head(path) if head is None else head
    complete = len(head) < SNIFF_BYTES
    lines = _lines(head, complete)
    if not lines:
        return None
    comments = []
    while lines and lines[0].startswith("#"):
        comments.append(lines.pop(0))
    body = [ln for ln in lines if ln.strip()][: SNIFF_LINES + 1]
    if not body:
        return None
    first = body[0].lstrip()
    if first.startswith("{"):
        return _sniff_jsonl(body, comments)
    if first.startswith("["):
        rest = "\n".join(body)[1:].lstrip()
        return Sniff("json", comments=comments) if rest.startswith("{") else None
    if len(body) < 2:
        return None
    for delim in ("\t", ",", ";", "ws"):
        found = _sniff_delimited(body, delim)
        if found is not None:
            header, rows = found
            return Sniff(delim, header=header, comments=comments, step=step_column(header),
                         rows_seen=rows)
    return None


def unbracket(line: str) -> str:
    """A row written as a list (`[0, 1, 0.85, 0.41]`: Python's `str(list)`, JSON's array) without
    its brackets; any other line as it is."""
    inner = line.strip()
    return inner[1:-1] if inner.startswith("[") and inner.endswith("]") else line


def _split(line: str, delim: str) -> list[str]:
    if delim == "ws":
        return line.split()
    if delim == ",":
        import csv  # here: a folder without comma-separated lines is sniffed without it

        try:
            return next(csv.reader([line]))
        except csv.Error:  # a `\r` inside the line (a progress bar rewritten in place): no row
            return [line]
    return line.split(delim)


def _sniff_delimited(body: list[str], delim: str) -> tuple[list[str], int] | None:
    if delim != "ws" and delim not in body[0]:
        return None
    header = [h.strip() for h in _split(body[0], delim)]
    if len(header) < 2 or any(not h for h in header[:-1]) or not header[-1] and len(header) < 3:
        return None
    if any(is_number(h) for h in header) or not all(_NAME.match(h) or h.startswith("#")
                                                   or _DIGIT_NAME.match(h) for h in header if h) \
            or not any(_NAME.match(h) or h.startswith("#") for h in header if h):
        return None
    if delim == "ws" and any(len(h) > 64 for h in header):
        return None
    rows = [_split(r, delim) for r in body[1:]]
    good = [r for r in rows if len(r) == len(header)]
    # a damaged row (a half-written line, cells added or lost) costs that row, not the file: a
    # few of them (at most 10% of the rows looked at) and the rest one table
    if len(good) < min(2, len(rows)) or len(rows) - len(good) > max(1, len(rows) // 10):
        return None
    rows = good
    numeric = [all(is_number(r[j]) or not r[j].strip() for r in rows) and
               any(r[j].strip() for r in rows) for j in range(len(header))]
    step = step_column(header)
    if not any(ok for j, ok in enumerate(numeric) if header[j] != step):
        return None
    return header, len(rows)


def _sniff_jsonl(body: list[str], comments: list[str]) -> Sniff | None:
    keys: dict[str, None] = {}
    numeric = False
    for line in body:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            return None
        for k, v in obj.items():
            keys[str(k)] = None
            numeric = numeric or (isinstance(v, int | float) and not isinstance(v, bool))
    if not keys or not numeric:
        return None
    header = list(keys)
    return Sniff("jsonl", header=header, comments=comments, step=step_column(header))


# -- reading ---------------------------------------------------------------------------------------


_RECENT: dict[tuple[Any, ...], tuple[Columns, list[str]]] = {}  # the last few tables read


def read_columns(path: str, sniff: Sniff, *, bad_share: float | None = None,
                 whole_lines: bool = False) -> tuple[Columns, list[str]]:
    """Every row of a sniffed file as float columns; text columns are named, not loaded. The
    last few are kept (by path, size and mtime): deciding a file's launches reads it, and its
    history then needs no second read. A layout that knows more than the shape says it:
    `bad_share`, the share of a numeric column's cells that may be unreadable (damage) before
    it is taken for text (MAX_BAD_SHARE; 1: numeric while it holds a number); `whole_lines`,
    the writer ends every line, so a last line without its line end is being written: not a
    row (`Columns.partial`)."""
    share = MAX_BAD_SHARE if bad_share is None else bad_share
    try:
        st = os.stat(path)
        stamp = (path, st.st_size, st.st_mtime_ns, sniff.kind, tuple(sniff.header),
                 sniff.headerless, sniff.bracketed, len(sniff.comments), share, whole_lines)
    except OSError:
        stamp = None
    hit = _RECENT.get(stamp) if stamp else None
    if hit is None:
        hit = _read_columns(path, sniff, share, whole_lines)
        if stamp is not None:
            if len(_RECENT) >= 4:
                _RECENT.pop(next(iter(_RECENT)))
            _RECENT[stamp] = hit
    # a copy of the table's fields (a reader renames or strips them), sharing the arrays
    return copy.copy(hit[0]), list(hit[1])


def launches(path: str, sniff: Sniff) -> list[tuple[int, int]] | None:
    """The row ranges of the launches a table holds when its x goes back to where it began
    (a script run again, its log appended: DETR's `log.txt` with epochs 0–4, 0–4, 0–1): each is
    a run of its own. A resume goes back to a checkpoint, not to the start, and stays one run.
    None for one launch, a table with no x, or a file over LAUNCH_BYTES (read as one)."""
    if sniff.step is None:
        return None
    try:
        if os.path.getsize(path) > LAUNCH_BYTES:
            return None
    except OSError:
        return None
    cols, _ = read_columns(path, sniff)
    if sniff.step not in cols.names:
        return None
    j = cols.names.index(sniff.step)
    rows = np.flatnonzero(cols.valid[j] & np.isfinite(cols.values[j]))
    xs = cols.values[j][rows]
    if len(xs) < 3:
        return None
    again = xs[1:] < xs[:-1]
    if not cols.labels:  # `0, 0`: a one-epoch launch, then the next (not a train row and its val)
        again |= (xs[1:] == xs[:-1]) & (xs[1:] == xs[0])
    back = np.flatnonzero(again & (xs[1:] <= xs[0])) + 1
    if not len(back):
        return None
    starts = [0, *(int(rows[i]) for i in back)]
    return list(zip(starts, [*starts[1:], cols.rows], strict=True))


LAUNCH_BYTES = 8 << 20  # a larger table is read as one launch (its launches are not looked for)


def _read_columns(path: str, sniff: Sniff, share: float, whole_lines: bool
                  ) -> tuple[Columns, list[str]]:
    name = os.path.basename(path)
    notes: list[str] = []
    if sniff.kind in ("\t", ",", ";") and not sniff.headerless and not (
            whole_lines and not _ends_line(path)):
        cols = _read_arrow_csv(path, sniff, notes, share)
        if cols is not None:
            return cols, notes
    if sniff.kind in ("\t", ",", ";", "ws"):
        return _read_lines(path, sniff, notes, share, whole_lines), notes
    if sniff.kind == "jsonl":
        from rundiff_core import read_jsonl

        res = read_jsonl(path, name=name)
        notes += res.notes
        if res.table is not None:
            return _arrow_columns(_flatten_arrow(res.table)), notes
        return records_columns(res.rows or []), notes
    return records_columns(_read_json_array(path, notes)), notes


def records_columns(records: list[dict[str, Any]]) -> Columns:
    """JSON records → columns; a missing key is no point, a logged NaN is one."""
    from rundiff_core import flatten

    index: dict[str, int] = {}
    vals: list[list[float]] = []
    oks: list[list[bool]] = []
    text: dict[str, None] = {}
    n = len(records)
    for i, rec in enumerate(records):
        for k, v in _indexed(flatten(rec, sep="/")):
            j = index.get(k)
            if j is None:
                j = index[k] = len(vals)
                vals.append([np.nan] * n)
                oks.append([False] * n)
            if isinstance(v, bool | int | float):
                vals[j][i] = float(v)
                oks[j][i] = True
            elif isinstance(v, str) and is_number(v):
                vals[j][i] = float(v)
                oks[j][i] = True
            elif v is not None:
                text[k] = None
    names = [k for k in index if k not in text]
    from .columns import Columns  # the reading side: sniffing never builds one

    return Columns(names, [np.asarray(vals[index[k]], dtype="float64") for k in names],
                   [np.asarray(oks[index[k]], dtype=bool) for k in names], list(text), n)


MAX_LIST_ITEMS = 16  # a short list of numbers in a record is one series per item, `key[i]`


def _indexed(flat: dict[str, Any]):  # noqa: ANN202 - (key, value) pairs
    """A record's leaves, a short list of numbers (`"loc_elem": [0.1, 0.2, …]`, AP per difficulty)
    as one leaf per item: `loc_elem[0]`, `loc_elem[1]`, …"""
    for k, v in flat.items():
        if isinstance(v, list) and 0 < len(v) <= MAX_LIST_ITEMS and all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in v):
            for i, x in enumerate(v):
                yield f"{k}[{i}]", x
        else:
            yield k, v


def _read_json_array(path: str, notes: list[str]) -> list[dict[str, Any]]:
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        notes.append(f"{name}: not valid JSON ({str(exc)[:80]}); skipped")
        return []
    if not isinstance(data, list):
        notes.append(f"{name}: not a JSON array; skipped")
        return []
    records = [r for r in data if isinstance(r, dict)]
    if len(records) < len(data):
        notes.append(f"{name}: {len(data) - len(records)} array item(s) that are not objects skipped")
    return records


def _ends_line(path: str) -> bool:
    """Whether the file's last byte ends a line (an empty or unreadable file: as if it did)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except OSError:
        return True


def _read_arrow_csv(path: str, sniff: Sniff, notes: list[str], share: float) -> Columns | None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    def read(types: dict | None) -> Any:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(skip_rows=len(sniff.comments), block_size=8 << 20),
            parse_options=pacsv.ParseOptions(delimiter=sniff.kind, newlines_in_values=False),
            convert_options=pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True,
                                                 quoted_strings_can_be_null=True,
                                                 column_types=types),
        )

    try:
        try:
            table = read(None)
        except pa.ArrowInvalid as exc:
            if "conversion error" not in str(exc):
                raise
            # a type guessed from the first block (ints) meets a later value (0.5): read every
            # column as text, then cast column by column (still C++, still one pass)
            table = read({h: pa.string() for h in sniff.header})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        notes.append(f"{os.path.basename(path)}: ragged or malformed rows "
                     f"({str(exc).splitlines()[0][:100]}); read row by row, bad rows skipped")
        return None
    return _arrow_columns(table, labels=True, share=share)


def _flatten_arrow(table: Any) -> Any:
    import pyarrow as pa

    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table.rename_columns([c.replace(".", "/") for c in table.column_names])


def _is_split_name(name: str) -> bool:
    """A text column whose cells are kept: a split's labels or a key/step/value table's keys."""
    return norm_name(name) in SPLIT_NAMES or _norm_key(name) in KEY_NAMES


def _arrow_columns(table: Any, labels: bool = False, share: float = MAX_BAD_SHARE) -> Columns:
    import pyarrow as pa
    import pyarrow.compute as pc

    names, values, valid, text = [], [], [], []
    kept: dict[str, list[Any]] = {}
    bad: dict[str, int] = {}  # a numeric column's few unreadable cells: skipped, counted
    cells_bad: list[tuple[int, str, str]] = []  # and each of them: (row, column, text)
    for name, col in zip(_names(table.column_names), table.columns, strict=True):
        typ = col.type
        if pa.types.is_null(typ) and not name:
            continue  # every line ends with the delimiter: an empty cell, no column
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            head = [v for v in col.slice(0, 200).drop_null().to_pylist() if v.strip()]
            words = sum(1 for v in head if not is_number(v))
            if words and (words > max(2, share * len(head)) or words == len(head)):  # text (a
                # damaged cell or two in a numeric column is read below, cell by cell)
                text.append(name)  # pyarrow saw text: a failed cast of the whole column is slow
                if labels and _is_split_name(name):
                    kept[str(name)] = col.to_pylist()
                continue
            try:
                col = pc.cast(pc.utf8_trim_whitespace(col), pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                cells = [c.strip() if isinstance(c, str) else c for c in col.to_pylist()]
                numbers = _numbers_or_none(cells, share)
                if numbers is None:
                    text.append(name)
                    continue
                col, lost = numbers
                bad[str(name)] = len(lost)
                cells_bad += [(r, str(name), c) for r, c in lost]
        elif pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
            # bytes that are not UTF-8 (a damaged byte): each cell decoded on its own, so one
            # bad cell is skipped and counted, not the column
            cells = [c.decode("utf-8", "replace").strip() if c is not None else None
                     for c in col.to_pylist()]
            numbers = _numbers_or_none(cells, share)
            if numbers is None:
                text.append(name)
                continue
            col, lost = numbers
            bad[str(name)] = len(lost)
            cells_bad += [(r, str(name), c) for r, c in lost]
        elif pa.types.is_null(typ):
            col = pa.chunked_array([pa.nulls(len(col), pa.float64())])
        elif (pa.types.is_list(typ) or pa.types.is_large_list(typ)) and (
                pa.types.is_integer(typ.value_type) or pa.types.is_floating(typ.value_type)):
            lengths = pc.list_value_length(col).drop_null()
            most = pc.max(lengths).as_py() if len(lengths) else 0
            if not most or most > MAX_LIST_ITEMS:
                text.append(name)
                continue
            for i in range(most):  # a short list of numbers: one series per item, `key[i]`
                values_i, valid_i = _list_item(col, i)
                names.append(f"{name}[{i}]")
                values.append(values_i)
                valid.append(valid_i)
            continue
        elif not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)
                  or pa.types.is_decimal(typ)):
            text.append(name)
            continue
        if not pa.types.is_float64(col.type):
            col = pc.cast(col, pa.float64())
        mask = np.ones(len(col), dtype=bool) if col.null_count == 0 else \
            col.is_valid().to_numpy(zero_copy_only=False)
        arr = col.to_numpy() if col.null_count == 0 else \
            pc.fill_null(col, np.nan).to_numpy()
        names.append(str(name))
        values.append(np.asarray(arr, dtype="float64"))
        valid.append(mask)
    from .columns import Columns

    return Columns(names, values, valid, text, table.num_rows, kept, bad, cells=cells_bad)


def _names(names: list[str]) -> list[str]:
    """Header cells without their padding (`2d_loss   <TAB>…`, `epoch, loss`), as the sniff
    read them; a name that would then repeat another keeps its padding."""
    stripped = [str(n).strip() for n in names]
    return [s if stripped.count(s) == 1 else str(n) for n, s in zip(names, stripped, strict=True)]


def _numbers_or_none(cells: list[Any], share: float) -> tuple[Any, list[tuple[int, str]]] | None:
    """(the cells as a float column, with unreadable cells as missing; (row, text) of each) when
    all but a few (at most 2, or `share` of them) of its non-empty cells are numbers."""
    import pyarrow as pa

    present = sum(1 for c in cells if c not in (None, ""))
    bad = [(r, c) for r, c in enumerate(cells) if c not in (None, "") and not is_number(c)]
    if not _numeric(present, len(bad), share):
        return None
    out = [float(c) if c not in (None, "") and is_number(c) else None for c in cells]
    return pa.chunked_array([pa.array(out, type=pa.float64())]), bad


def _numeric(present: int, bad: int, share: float) -> bool:
    """A column of `present` non-empty cells, `bad` of them not numbers, is numeric."""
    return bool(present) and bad < present and bad <= max(2, int(share * present))


def _list_item(col: Any, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Item `i` of a list column as floats, and where it was logged (lists shorter than i+1 and
    missing lists are no point)."""
    cells = col.to_pylist()
    vals = np.full(len(cells), np.nan)
    ok = np.zeros(len(cells), dtype=bool)
    for r, cell in enumerate(cells):
        if cell is not None and len(cell) > i and cell[i] is not None:
            vals[r], ok[r] = float(cell[i]), True
    return vals, ok


def _read_lines(path: str, sniff: Sniff, notes: list[str], share: float, whole_lines: bool
                ) -> Columns:
    """A delimited table a line at a time, the careful read (pyarrow declined the file): a line
    with the wrong number of cells is skipped (a whitespace table's short line is padded: the
    cells it lacks are its last, empty ones), a cell that is not a number is skipped in a column
    of numbers (at most `share` of them unreadable), each kept with its line number
    (`Columns.lines`, `.ragged`, `.cells`). A header-less table's counter `3/299` is 3 and its
    size `2.5G` 2.5 (old YOLOv5's columns)."""
    from .columns import Columns

    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        notes.append(f"{name}: unreadable ({exc.strerror}); skipped")
        return Columns([], [], [], [], 0)
    lines = text.split("\n")
    tail = lines.pop()  # after the last line end: a line still being written, or the last
    partial = (len(lines) + 1, tail) if whole_lines and tail.strip() else None
    if tail.strip() and not whole_lines:
        lines.append(tail)
    first = len(sniff.comments)
    while first < len(lines) and not lines[first].strip():
        first += 1
    header = list(sniff.header)
    width, ws = len(header), sniff.kind == "ws"
    rows: list[list[str]] = []
    line_no: list[int] = []
    ragged: list[tuple[int, str, int]] = []
    for i in range(first + (not sniff.headerless), len(lines)):
        raw = lines[i].rstrip("\r")
        if not raw.strip():
            continue
        if sniff.bracketed:
            raw = unbracket(raw)
        row = _split(raw, sniff.kind) if '"' in raw or ws else raw.split(sniff.kind)
        if ws and 0 < len(row) < width:
            row += [""] * (width - len(row))
        if len(row) != width:
            ragged.append((i + 1, raw, len(row)))
            continue
        rows.append(row)
        line_no.append(i + 1)
    if ragged:
        notes.append(f"{name}: {len(ragged)} malformed row(s) skipped")
    names, values, valid, text_cols = [], [], [], []
    kept: dict[str, list[Any]] = {}
    bad: dict[str, int] = {}
    cells_bad: list[tuple[int, str, str]] = []
    counted = re.compile(_COUNTED) if sniff.headerless else None
    for j, col in enumerate(header):
        cells = [r[j].strip() for r in rows]
        if not col and not any(cells):
            continue  # every line ends with the delimiter: an empty cell, no column
        if counted is not None:
            cells = [counted.sub(r"\1", c) for c in cells]
        vals = np.full(len(cells), np.nan)
        ok = np.zeros(len(cells), dtype=bool)
        wrong: list[int] = []
        for r, cell in enumerate(cells):
            if not cell:
                continue
            try:
                vals[r], ok[r] = float(cell), True
            except ValueError:
                wrong.append(r)
        if not _numeric(int(ok.sum()) + len(wrong), len(wrong), share):
            text_cols.append(col)
            if _is_split_name(col):
                kept[col] = [c or None for c in cells]
            continue
        if wrong:
            bad[col] = len(wrong)
            cells_bad += [(r, col, cells[r]) for r in wrong]
        names.append(col)
        values.append(vals)
        valid.append(ok)
    return Columns(names, values, valid, text_cols, len(rows), kept, bad,
                   np.asarray(line_no, dtype=np.int64), ragged, cells_bad, partial)


_COUNTED = r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?:/\d+|[KMGT])\s*$"


def row_lines(path: str, cols: Columns, sniff: Sniff) -> np.ndarray:
    """The 1-based file line of each of `cols`' rows: as the line reader kept them, or (pyarrow's
    read, which skips blank lines only and ends a line at `\r` too) the non-blank lines after the
    header (0 where the file changed since)."""
    if cols.lines is not None:
        return cols.lines
    try:
        with open(path, "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        lines = []
    first = len(sniff.comments)
    while first < len(lines) and not lines[first].strip():
        first += 1
    found = [i + 1 for i in range(first + 1, len(lines)) if lines[i]][:cols.rows]
    return np.asarray(found + [0] * (cols.rows - len(found)), dtype=np.int64)


def _looks_unix(values: np.ndarray) -> float | None:
    """1 when `values` look like Unix seconds, 1e-3 for milliseconds, else None."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return None
    lo = float(finite.min())
    if 9e8 < lo < 5e9:
        return 1.0
    if 9e11 < lo < 5e12:
        return 1e-3
    return None


def to_long(cols: Columns, name: str, *, step: str | None = None, described: str = "",
            prefix: str = "", key_names: dict[str, str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Wide columns → the canonical long history, with the inferred layout said in one note.

    Empty cells are not points (sparse logs write one metric per row); logged NaN/inf are kept.
    """
    notes: list[str] = []
    step = step if step is not None else step_column(cols.names)
    steps: np.ndarray
    if step is not None and step in cols.names:
        j = cols.names.index(step)
        steps, step_ok = cols.values[j], cols.valid[j]
    else:
        step = None
        steps, step_ok = np.arange(cols.rows, dtype="float64"), np.ones(cols.rows, dtype=bool)
    wall = np.full(cols.rows, np.nan)
    time_col = None
    for t in TIME_NAMES:
        match = next((c for c in cols.names if norm_name(c) == norm_name(t) and c != step), None)
        if match is not None:
            scale = _looks_unix(cols.values[cols.names.index(match)])
            if scale is not None:
                time_col = match
                wall = cols.values[cols.names.index(match)] * scale
                break
    columns = [c for c in cols.names if c not in (step, time_col)]
    named = _key_column(cols, columns)
    if named is not None:  # `Step,Metric,Value` (a tbparse/export): each row names its key
        split, split_notes, told = named
        columns = [c for c in columns if _norm_key(c) in VALUE_NAMES] or columns
    else:
        split, split_notes, told = _split_rows(cols, name)
    # (key before prefix, values, valid): a long-format table gives one key per (label, column)
    series: list[tuple[str, np.ndarray, np.ndarray]] = []
    for c in columns:
        j = cols.names.index(c)
        key = (key_names or {}).get(c, c)
        if split is None:
            series.append((key, cols.values[j], cols.valid[j]))
            continue
        for label, rows in split:
            ok = cols.valid[j] & rows
            if ok.any():
                own = named is not None and len(columns) == 1  # the label is the key itself
                series.append((label if own and label else f"{label}/{key}" if label else key,
                               cols.values[j], ok))
    all_steps = bool(step_ok.all())
    dropped = 0 if all_steps else int((~step_ok).sum())
    no_wall = time_col is None
    parts_s, parts_v, parts_w, counts = [], [], [], []
    for _key, values, valid in series:
        if all_steps and valid.all():  # a dense column: no copy before the concatenation
            parts_s.append(steps)
            parts_v.append(values)
            parts_w.append(wall)
            counts.append(cols.rows)
            continue
        m = valid & step_ok
        parts_s.append(steps[m])
        parts_v.append(values[m])
        parts_w.append(wall if no_wall else wall[m])
        counts.append(int(m.sum()))
    metrics = [k for k, _, _ in series]
    x = f"x = {step}" if step else "x = row index (no step-like column)"
    bits = [f"{name} read as {described}" if described else name, x, f"{len(metrics)} metrics"]
    if time_col:
        bits.append(f"wall time from {time_col}")
    text = [t for t in cols.text if t not in told]
    if text:
        bits.append(f"{len(text)} text column(s) skipped ({', '.join(text[:5])}"
                    f"{'…' if len(text) > 5 else ''})")
    notes.append("; ".join(bits))
    if cols.bad:
        notes.append(f"{name}: {sum(cols.bad.values())} unreadable cell(s) skipped ("
                     + ", ".join(f"`{k.strip()}` ×{n}" for k, n in cols.bad.items()) + "); the rest of "
                     "their columns read")
    notes += split_notes
    if dropped:
        notes.append(f"{name}: {dropped} row(s) without a {step} value skipped")
    if not metrics or not sum(counts):
        return rundiff_core.empty_history(), notes
    from rundiff_core import step_notes

    dense = [c for c, s in zip(metrics, parts_s, strict=True) if s is steps]
    sparse = [(c, s) for c, s in zip(metrics, parts_s, strict=True) if s is not steps]
    more = step_notes(dense[:1] and [(dense[0], steps)], name)  # dense keys share one x column
    if more:  # name every key with the problem (rare: a log that restarted or repeats steps)
        more = step_notes(((c, steps) for c in dense), name)
    notes += more + step_notes(sparse, name)
    keys = [prefix + k for k in metrics]
    codes = np.repeat(np.arange(len(metrics), dtype=np.int32), counts)
    total = int(sum(counts))
    out_s, out_v = np.empty(total), np.empty(total)
    out_w = np.full(total, np.nan) if no_wall else np.empty(total)
    pos = 0
    for n, ps, pv, pw in zip(counts, parts_s, parts_v, parts_w, strict=True):
        out_s[pos:pos + n] = ps  # one copy per column, straight into the long frame
        out_v[pos:pos + n] = pv
        if not no_wall:
            out_w[pos:pos + n] = pw
        pos += n
    frame = rundiff_core.history_frame(out_s, pd.Categorical.from_codes(codes, categories=keys)
                          if len(set(keys)) == len(keys) else pd.Categorical(np.array(keys)[codes]),
                          out_v, out_w)
    return frame, notes


#: Text columns that name each row's metric in a key/step/value table, and the value column.
KEY_NAMES = ("metric", "metricname", "name", "key", "tag", "variable", "series")
VALUE_NAMES = ("value", "val", "values", "metricvalue", "y")


def _norm_key(name: str) -> str:
    return norm_name(name).replace("/", "")


def _key_column(cols: Columns, columns: list[str]) -> tuple[list[tuple[str, np.ndarray]], list[str],
                                                            set[str]] | None:
    """A key/step/value table: a text column named like a metric's name (KEY_NAMES) and one
    numeric value column (or one named VALUE_NAMES) — each row names the key its value is of."""
    col = next((c for c in cols.labels if _norm_key(c) in KEY_NAMES), None)
    if col is None:
        return None
    values = [c for c in columns if _norm_key(c) in VALUE_NAMES] or columns
    if len(values) != 1:
        return None
    stripped = [c.strip() if isinstance(c, str) else "" for c in cols.labels[col]]
    arr = np.asarray(stripped, dtype=object)
    distinct = list(dict.fromkeys(c for c in stripped if c))
    if not distinct:
        return None
    told = set(cols.labels)
    note = (f"key/step/value table — `{col}` names each row's metric ({len(distinct)}: "
            f"{', '.join(distinct[:4])}{' …' if len(distinct) > 4 else ''}), `{values[0]}` holds "
            "its value")
    return [(label, arr == label) for label in distinct], [note], told


def _split_rows(cols: Columns, name: str) -> tuple[list[tuple[str, np.ndarray]] | None, list[str],
                                                  set[str]]:
    """Whether a text column named like a split (SPLIT_NAMES: `split`, `phase`, `stage`, `mode`,
    `type`) names the rows of a long-format table: 2 to MAX_SPLIT_LABELS distinct short labels
    (`train`, `val`, `test`, …). Returns ([(label, row mask)] — label "" for rows without one —
    or None, the notes that say what was decided, the columns those notes account for). One
    label throughout, or free text, is no split — and said so, never skipped in silence."""
    notes: list[str] = []
    told: set[str] = set()
    chosen = None
    for col, cells in cols.labels.items():
        if norm_name(col) not in SPLIT_NAMES:
            continue  # a key column's cells, kept for a key/step/value table: no split
        told.add(col)
        stripped = [c.strip() if isinstance(c, str) else "" for c in cells]
        distinct = list(dict.fromkeys(c for c in stripped if c))
        if chosen is not None:
            notes.append(f"{name}: `{col}` is a second label column ({', '.join(distinct[:4])}); "
                         f"the rows are split by `{chosen}` only, `{col}` skipped")
            continue
        if not distinct:
            notes.append(f"{name}: `{col}` is empty; skipped")
            continue
        if len(distinct) == 1:
            notes.append(f"{name}: `{col}` holds one label ({distinct[0]!r}) on every row: not a "
                         "split, keys keep their column names; the column itself skipped")
            continue
        if len(distinct) > MAX_SPLIT_LABELS or not all(_LABEL.match(d) for d in distinct):
            notes.append(f"{name}: `{col}` is free text ({len(distinct)} distinct value(s), e.g. "
                         f"{distinct[0][:40]!r}), not split labels; skipped")
            continue
        chosen = col
        arr = np.asarray(stripped, dtype=object)
        split = [(label, arr == label) for label in distinct]
        unlabelled = arr == ""
        if unlabelled.any():
            split.append(("", unlabelled))
        shown = ", ".join(distinct)
        notes.append(f"{name}: long format — `{col}` names the rows ({shown}): one key per "
                     f"(label, metric), e.g. {distinct[0]}/…, {distinct[1]}/…"
                     + (f"; {int(unlabelled.sum())} row(s) without a label keep the plain names"
                        if unlabelled.any() else ""))
    if chosen is None:
        return None, notes, told
    return split, notes, told


def points_frame(steps: list[float], keys: list[str], values: list[float], wall: list[float] | None,
                 notes: list[str], name: str) -> tuple[pd.DataFrame, list[str]]:
    """Points collected one by one (text logs, JSON rows) → the long frame, each key's points
    together in logged order, plus the step notes."""
    if not values:
        return rundiff_core.empty_history(), notes
    from rundiff_core import step_notes

    codes, uniques = pd.factorize(np.array(keys, dtype=object))
    order = np.argsort(codes, kind="stable")
    cat = pd.Categorical.from_codes(codes[order], categories=[str(u) for u in uniques])
    s = np.asarray(steps, dtype="float64")
    notes += step_notes(((str(u), s[codes == i]) for i, u in enumerate(uniques)), name)
    w = np.full(len(s), np.nan) if wall is None else np.asarray(wall, dtype="float64")[order]
    return rundiff_core.history_frame(s[order], cat, np.asarray(values, dtype="float64")[order], w), notes


def read_table(path: str, sniff: Sniff | None = None, *, rows: tuple[int, int] | None = None,
               **kw: Any) -> tuple[pd.DataFrame, list[str]]:
    """A tabular log's full history and notes (the layout inferred, skipped columns and rows);
    `rows`: one launch's row range only."""
    sniff = sniff or sniff_table(path)
    name = os.path.basename(path)
    if sniff is None:
        return rundiff_core.empty_history(), [f"{name}: not a tabular log; skipped"]
    cols, notes = read_columns(path, sniff)
    if rows is not None:
        cols = cols.slice(*rows)
    frame, more = to_long(cols, name, step=kw.pop("step", None) or sniff.step,
                          described=sniff.described, **kw)
    return frame, notes + more


def one_row(path: str, sniff: Sniff) -> dict[str, float] | None:
    """The values of a table with exactly one row and no step column (a final-eval file)."""
    if sniff.step is not None or sniff.kind not in ("\t", ",", ";", "ws") or sniff.rows_seen != 1:
        return None
    cols, _ = read_columns(path, sniff)
    if cols.rows != 1:
        return None
    return {c: float(v[0]) for c, v, ok in zip(cols.names, cols.values, cols.valid, strict=True)
            if ok[0]}


__all__ = ["STEP_NAMES", "Sniff", "one_row", "read_columns", "read_table", "sniff_table",
           "step_column", "to_long"]

