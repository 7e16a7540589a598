"""What a file is, decided from its content: the one first look every local file gets.

A file is a *table* (delimited or whitespace-aligned rows, with a header or without one),
*records* (JSON lines, a JSON array of objects), *column lists* (a JSON object whose values
include lists of numbers, whatever other keys it holds), a *document* (a JSON object of
parameters or results), *text records* (log lines of key/value fields, in one of the grammars of
`textlog`), a *store* (SQLite), *Markdown* (a `.md` file's pipe tables, code blocks and
`key: value` lines, by heading: `markdown`) — or it is not understood, and said to be so with what it looks
like. Like DuckDB's CSV sniffer, the decision is made from a bounded read and reported as a
value one can print (`Shape.detail`); like libmagic, the most specific signature is tried first
and a weak match is "not understood", never a guess. A named layout (`layouts/`) then adds only
what the content cannot say: the x axis, directions, the names of a headerless table's columns.
"""

from __future__ import annotations

import json
import re
from typing import Any

import rundiff_core
from rundiff_core import read_bounded

from .markdown import is_markdown_name
from .sniff import SNIFF_BYTES, Sniff, is_number, looks_binary, read_head, sniff_table
from .textshare import MIN_RECORD_SHARE

SQLITE_MAGIC = b"SQLite format 3\x00"
#: The kinds of shape, in the order they are tried (most specific signature first).
KINDS = ("store", "markdown", "records", "table", "columns", "document", "text", "unknown")
MAX_DOCUMENT_BYTES = 16 << 20  # a JSON object larger than this is not parsed to be sniffed (said so)


class Shape(rundiff_core.PlainRecord):
    """A file's shape: `kind` (one of KINDS), `detail` (what was decided, in words, for notes and
    for the "not understood" list), and `found` — what the reader of that kind needs (the table
    `Sniff`, the text `Grammar`, the column lists' names)."""

    __match_args__ = ("kind", "detail", "found")

    def __init__(self, kind: str, detail: str, found: Any = None) -> None:
        self.kind = kind
        self.detail = detail
        self.found = found

    @property
    def understood(self) -> bool:
        return self.kind != "unknown"


def shape_of(path: str, head: bytes | None = None, *, text: bool = True) -> Shape:
    """The shape of the file at `path` from its first SNIFF_BYTES (`head`, if read already) and,
    for a JSON object or a text log, a bounded read of the rest. `text=False` skips the text
    grammars (their sniff reads up to 256 KiB)."""
    head = read_head(path) if head is None else head
    if head.startswith(SQLITE_MAGIC):
        return Shape("store", "SQLite database")
    if not head.strip():
        return Shape("unknown", "empty file")
    if looks_binary(head):
        return Shape("unknown", "binary data")
    if is_markdown_name(path):  # the file names its format: its tables, blocks and headings
        return markdown_shape(path)
    table = sniff_table(path, head) or _after_preamble(path, head)
    if table is not None and table.kind == "jsonl" and _one_document(head):
        table = None  # one JSON object on one line: a document or column lists, not records
    if table is not None:
        if table.kind in ("jsonl", "json"):
            return Shape("records", table.described, table)
        return Shape("table", f"{table.described} with a header", table)
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"{":
        return _json_object(path)
    if first == b"\"" and path.lower().endswith(".json"):
        return _json_object(path)  # a JSON string holding a dict's repr (Keras history, str()'d)
    bare = headerless_table(head, complete=len(head) < SNIFF_BYTES)
    if bare is not None:
        return Shape("table", f"{KIND_WORDS[bare.kind]} without a header ({len(bare.header)} "
                     "columns)" + ("; the first counts 0, 1, 2, …: its step" if bare.step else ""),
                     bare)
    if text and not path.lower().endswith((".json", ".csv", ".tsv", ".yaml", ".yml")):
        return text_shape(path)
    return Shape("unknown", "text, no table or records")


def _after_preamble(path: str, head: bytes) -> Sniff | None:
    """A table under a title (`weight/x.pth model testing on...` above `testset,accuracy,…`): up
    to three leading lines that are no part of it are skipped as comments, and said so."""
    lines = head.split(b"\n")
    for k in (1, 2, 3):
        if len(lines) <= k + 2 or not all(ln.strip() for ln in lines[:k]):
            return None
        found = sniff_table(path, b"\n".join(lines[k:]))
        if found is not None and found.kind not in ("jsonl", "json"):
            found.comments = [ln.decode("utf-8", "replace").rstrip("\r") for ln in lines[:k]] \
                + found.comments
            return found
    return None


def _one_document(head: bytes) -> bool:
    """The whole file (its head is all of it) is one line holding one JSON object."""
    if len(head) >= SNIFF_BYTES:
        return False
    return sum(1 for ln in head.splitlines() if ln.strip()) == 1


KIND_WORDS = {"ws": "whitespace-aligned table", ",": "CSV", "\t": "TSV", ";": "semicolon table"}


# -- column lists and documents -------------------------------------------------------------------
class ColumnLists(rundiff_core.PlainRecord):
    """A JSON object's numeric lists (`series`: {key: values}, nested keys joined with `/`) and
    its other leaves (`other`: {key: scalar}), as the file holds them."""

    __match_args__ = ("series", "other", "encoding")

    def __init__(self, series: dict[str, list[float]], other: dict[str, Any],
                 encoding: str = "json") -> None:
        self.series = series
        self.other = other
        self.encoding = encoding


def load_json_object(path: str) -> tuple[Any, str]:
    """(the decoded JSON value, how: "json" or "repr") of a file up to MAX_DOCUMENT_BYTES; a JSON
    string holding a Python dict's repr is decoded with `ast.literal_eval` only (never eval).
    (None, why) when it does not parse."""
    raw, why = read_bounded(path, MAX_DOCUMENT_BYTES)
    if raw is None:
        return None, why
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        return None, f"unreadable ({type(exc).__name__})"
    except (ValueError, RecursionError):
        return None, "a JSON object that does not parse"
    if isinstance(data, str):
        decoded = python_literal(data)
        return (decoded, "repr") if isinstance(decoded, dict) else (None, "a JSON string")
    return data, "json"


def column_lists(data: Any, encoding: str = "json") -> ColumnLists | None:
    """The numeric lists of a JSON object (one level of nesting joined with `/`), when they are
    what it holds: lists of one length (two of 4+ numbers, or three or more), one list of 4+
    numbers that is the object's only list, or lists of 4+ of several lengths — and more numbers
    in lists than scalars beside them. Config-like lists (`betas: [0.9, 0.999]`, a `mean`/`std`
    pair per channel, `milestones` among many scalars) are no history."""
    if not isinstance(data, dict):
        return None
    series: dict[str, list[float]] = {}
    other: dict[str, Any] = {}
    lists = 0
    for key, value in _leaves(data):
        if isinstance(value, list):
            lists += 1
            nums = _numbers(value)
            if nums is not None and len(nums) >= 2:
                series[key] = nums
            else:
                other[key] = value
        else:
            other[key] = value
    if not series:
        return None
    scalars = sum(1 for v in other.values() if not isinstance(v, list | dict))
    if sum(len(v) for v in series.values()) <= scalars:
        return None  # a config's short lists (mean/std, milestones) among its many scalars
    lengths: dict[int, int] = {}
    for v in series.values():
        lengths[len(v)] = lengths.get(len(v), 0) + 1
    # equal-length lists: two of 4+ values (epochs), three or more of any length, or two that
    # name a metric (`loss`, `val_acc`); two short lists are a config's pair (`mean`/`std` per
    # channel), not a history
    named = any(metric_like(k) for k in series)
    if any((n >= 4 or named) and c >= 2 or c >= 3 for n, c in lengths.items()):
        return ColumnLists(series, other, encoding)
    if len(series) == 1 and lists == 1:
        (values,) = series.values()
        if len(values) >= 4:
            return ColumnLists(series, other, encoding)
    if len(series) >= 2 and min(len(v) for v in series.values()) >= 4:
        return ColumnLists(series, other, encoding)  # per-step and per-epoch lists of a run
    return None


_METRIC_WORDS = re.compile(r"(?:^|[_/])(?:loss|acc|accuracy|error|err|f1|auc|mae|mse|rmse|"
                           r"reward|return|score|ppl|perplexity|bleu|iou|map|hit@?\d*|ndcg@?\d*|"
                           r"recall|precision|top\d|mrr)(?:$|[_/])|^val_|^lr$",
                           re.I)


def metric_like(key: str) -> bool:
    """A list whose key names a metric (`loss`, `val_acc`, `train/f1_score`)."""
    return bool(_METRIC_WORDS.search(key.rsplit("/", 1)[-1])) or key.lower().startswith("val")


def _leaves(data: dict[str, Any], prefix: str = "", depth: int = 0):  # noqa: ANN202 - pairs
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth < 1:
            yield from _leaves(v, key + "/", depth + 1)
        else:
            yield key, v


_NAN = "\x00rundiff-nan\x00"  # Python's bare `nan` in a repr, until it is a float


def python_literal(text: str) -> Any:
    """A Python literal's value by `ast.literal_eval` only; Python's bare `nan`/`inf` reprs
    (which literal_eval refuses) are first turned into a NaN marker and `1e999`."""
    import ast  # here: only a repr-in-a-string file needs them
    import io
    import tokenize

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        toks = []
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            s = tok.string
            if tok.type == tokenize.NAME and s in ("nan", "inf"):
                s = repr(_NAN) if s == "nan" else "1e999"
            toks.append((tok.type, s))
        return ast.literal_eval(tokenize.untokenize(toks))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, tokenize.TokenError):
        return None


def _numbers(values: list[Any]) -> list[float] | None:
    out = []
    for x in values:
        if isinstance(x, bool) or not isinstance(x, int | float):
            if x is None or x == _NAN or (isinstance(x, str) and x in ("NaN", "nan")):
                out.append(float("nan"))
                continue
            return None
        out.append(float(x))
    return out if any(v == v for v in out) else None


#: The head of column lists (`{"loss": [0.5, …`), to know a damaged one that no longer parses.
_LISTS_HEAD = re.compile(rb'\A\s*\{\s*"(?:[^"\\]|\\.){1,200}"\s*:\s*\[\s*(?:[-+]?(?:\d|\.\d)|NaN|-?Infinity)')


def _json_object(path: str) -> Shape:
    data, how = load_json_object(path)
    if data is None:
        if how.startswith("a JSON object") and _LISTS_HEAD.match(read_head(path, 4096).lstrip(
                b"\xef\xbb\xbf")):
            return Shape("columns", "column lists that do not parse as JSON (damaged?)")
        return Shape("unknown", how)
    if not isinstance(data, dict):
        return Shape("unknown", f"JSON {type(data).__name__}")
    cols = column_lists(data, how)
    if cols is not None:
        lengths = sorted({len(v) for v in cols.series.values()})
        return Shape("columns", f"column lists: {len(cols.series)} numeric lists of "
                     f"{'/'.join(map(str, lengths[:4]))} values"
                     + (f", {len(cols.other)} other keys" if cols.other else ""), cols)
    return Shape("document", f"JSON object of {len(data)} keys", data)


# -- tables without a header ----------------------------------------------------------------------
_CELL = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+|[KMGT])?$|^(?:nan|inf)$", re.I)


def headerless_table(head: bytes, complete: bool) -> Sniff | None:
    """A table of numeric rows without a header line (old YOLOv5's `results.txt`, a loss dump
    from `np.savetxt`): 3+ rows of 2+ fields, every row the same count, every cell a number (an
    `i/N` counter or a `2.5G` size counts). Its columns are named `col1…colN` until a layout
    names them; its first column is its step when it counts (`counters.counts_up`: `0, 1, 2, …`,
    back to its start where a launch was appended). A whole file of two such rows is a table too
    when its first column counts and the rest hold a measured (fractional) value: `0<TAB>5.12`,
    `1<TAB>4.78`, an epoch and its loss — two bare lines of whole numbers are not. Rows written
    as lists, every line one (`[0, 0, 0.8556, 0.4167]`: a script's `str([epoch, batch, loss,
    acc])`), are such a table inside the brackets."""
    from .counters import counts_up, is_fraction
    from .sniff import unbracket

    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not complete:
        lines = lines[:-1]
    lines = lines[:41]
    if len(lines) < 2 or len(lines) == 2 and not complete:
        return None
    bracketed = all(ln.strip().startswith("[") and ln.strip().endswith("]") for ln in lines)
    if bracketed:
        lines = [unbracket(ln) for ln in lines]
    for delim in ("\t", ",", ";", "ws"):
        rows = [ln.split() if delim == "ws" else [c.strip() for c in ln.strip().split(delim)]
                for ln in lines]
        width = len(rows[0])
        if width < 2 or any(len(r) != width for r in rows):
            continue
        if not (all(_CELL.match(c) for r in rows for c in r) and any(
                is_number(c) for r in rows for c in r)):
            continue
        counting = counts_up([r[0] for r in rows])
        if len(rows) < 3 and not (counting and any(is_fraction(c) for r in rows for c in r[1:])):
            continue
        return Sniff(delim, header=[f"col{i}" for i in range(1, width + 1)],
                     step="col1" if counting else None, rows_seen=len(rows), headerless=True,
                     bracketed=bracketed)
    return None


# -- Markdown -------------------------------------------------------------------------------------
def markdown_shape(path: str) -> Shape:
    """A Markdown file parsed (`markdown.Markdown`, its runs decided), or not understood; one
    with no numbers in it (prose) is `markdown` with no runs, for its reader to pass over."""
    from .markdown import read_markdown

    doc, detail = read_markdown(path)
    if doc is None:
        return Shape("unknown", detail)
    if not doc.runs:
        return Shape("markdown", f"{detail}; no numbers in records, tables or logs (prose)", doc)
    runs = "one run" if doc.runs == [None] else f"{len(doc.runs)} alike sections, a run each"
    return Shape("markdown", f"{detail}: {runs}", doc)


# -- text records ---------------------------------------------------------------------------------
def text_shape(path: str) -> Shape:
    """A text log whose records (in one of textlog's grammars) are a real part of the file, with
    how large a part; else "not understood", with what little was found."""
    from .textlog import sniff_text  # the grammars compile on import

    grammar = sniff_text(path)
    if grammar is None:
        return Shape("unknown", "text, no records with a step")
    records, lines = grammar.share
    share = f"{records:,} of {lines:,} content lines"
    if lines and records < MIN_RECORD_SHARE * lines:
        return Shape("unknown", f"text; {share} look like {grammar.describe()} records — too few "
                     "to call it that log", grammar)
    return Shape("text", f"{grammar.describe()} ({share})", grammar)
