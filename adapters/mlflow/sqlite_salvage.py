"""What is left of a damaged SQLite store, read table by table and page by page; never a write to it.

SQLite refuses a damaged file whole or query by query ("file is not a database", "database disk
image is malformed", "malformed database schema (…)"). `recover(path)` keeps what still reads:

- each table SQLite still reads whole is read by SQLite (`mode=ro&immutable=1`);
- any other table is read page by page, as SQLite's own `.recover` does: the b-tree from the
  table's root, every page header, cell pointer, varint, record and overflow chain bounds-checked,
  a page that does not read skipped and named; the rows a lost page held are rebuilt from an index
  that holds all their columns (MLflow's metrics primary key holds every column), else counted
  from the index entries that name them (per run id, per trial id…); leaf pages cut off from
  their tree by a damaged interior page are found again by their shape;
- the schema itself, when SQLite cannot read it (a damaged first page, a cut tail, a damaged
  CREATE statement), is read the same way, or found on the pages that hold it;
- pages shifted by inserted or dropped bytes are realigned (the file is no multiple of its page
  size: the split point is where pages start to read again at the shifted offset).

What was read is written into a private SQLite file in a temp folder (deleted at exit), which the
store's own reader then opens as if it were the store: every query it makes works unchanged. What
could not be read is counted per table; the cause is said as SQLite says it, with where (the first
damaged page and whether it is zeroed, the page the file ends at, where bytes were inserted), and a
hint fitting that cause.

Standard library only. It lives with the MLflow adapter, whose reader was first to need it; the
Optuna/key-step-value and trackio layouts of `local:` use it too.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import re
import shutil
import sqlite3
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sqlite_format import (
    BTREE_KINDS,
    INDEX_INTERIOR,
    PAGE_SIZES,
    SQLITE_MAGIC,
    TABLE_INTERIOR,
    TABLE_LEAF,
    BadBytes,
    Page,
    decode_record,
    last_int,
    schema_like,
    varint,
)
from .sqlite_realign import inserted_pages_split

_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
_KIND_SCAN_BYTES = 64 << 20  # a damaged file's raw bytes looked at for CREATE TABLE names
_GUESS_PAGES = 4096  # pages looked at to guess the page size of a file whose header is damaged
_SCHEMA_SCAN_PAGES = 1 << 16  # pages looked at for schema rows cut off from the first page
_FIRST = -(1 << 63)  # "after" of a rowid range from the start (no table holds that rowid)

# which store a set of table names is (most specific first); (kind, tables, how many must be there).
# Beyond the core tables, the ones only these tools name (MLflow's traces, logged models and
# registry; Optuna's attribute tables), so that a few surviving schema rows still tell the kind
KINDS: tuple[tuple[str, frozenset[str], int], ...] = (
    ("MLflow", frozenset({"experiments", "runs", "metrics", "params", "tags", "latest_metrics",
                          "experiment_tags", "alembic_version", "trace_info", "trace_tags",
                          "trace_request_metadata", "logged_models", "logged_model_metrics",
                          "logged_model_params", "logged_model_tags", "registered_models",
                          "model_versions", "registered_model_tags", "model_version_tags",
                          "registered_model_aliases", "input_tags", "evaluation_datasets"}), 3),
    ("Optuna", frozenset({"studies", "trials", "trial_params", "trial_values",
                          "trial_intermediate_values", "study_directions", "version_info",
                          "study_user_attributes", "study_system_attributes",
                          "trial_user_attributes", "trial_system_attributes",
                          "trial_heartbeats"}), 3),
    ("trackio", frozenset({"metrics", "configs", "system_metrics", "project_metadata"}), 2),
    ("neptune-scale", frozenset({"run_operations"}), 1),
)


def is_damage(exc: BaseException) -> bool:
    """An sqlite3 error that says the file is damaged (not locked, missing or mistaken), or text
    SQLite hands back that is not in the file's encoding (a garbled cell)."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return ("malformed" in text or "not a database" in text or "corrupt" in text
            or "could not decode to utf-8" in text)  # python's sqlite3 on text that is not


def schema_names(rows: Iterable[tuple[Any, ...]]) -> set[str]:
    """The table names sqlite_master rows show: each table's name and the table every row is on
    (`tbl_name`: an index or trigger names its table even when the table's own row is lost)."""
    names: set[str] = set()
    for r in rows:
        if r[0] == "table" and isinstance(r[1], str):
            names.add(r[1])
        if isinstance(r[2], str):
            names.add(r[2])
    return names


def kind_of(names: Iterable[str]) -> str | None:
    """The store kind a set of table names shows (MLflow, Optuna, trackio, neptune-scale)."""
    have = set(names)
    for kind, tables, need in KINDS:
        if kind == "trackio" and not {"metrics", "configs"} <= have:
            continue
        if len(have & tables) >= need:
            return kind
    return None


# -- pages ------------------------------------------------------------------------------------------


class PageFile:
    """A SQLite file's pages, read-only (mmap), bounds-checked; a damaged header's page size is
    guessed from the pages, and bytes inserted or dropped are realigned."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.size = os.path.getsize(path)
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.data: Any = (mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
                          if self.size else b"")
        d = self.data
        self.header_ok = self.size >= 100 and d[:16] == SQLITE_MAGIC
        ps = int.from_bytes(d[16:18], "big") if self.header_ok else 0
        ps = 65536 if ps == 1 else ps
        self.header_damaged = not self.header_ok or ps not in PAGE_SIZES
        reserved = d[20] if self.header_ok else 0
        self.page_size = self._guess_page_size() if self.header_damaged else ps
        self.usable = self.page_size - (reserved if reserved < 32 else 0)
        enc = int.from_bytes(d[56:60], "big") if self.header_ok else 1
        self.encoding = {2: "utf-16-le", 3: "utf-16-be"}.get(enc, "utf-8")
        # the in-header page count holds only when its change counter is current (SQLite ≥ 3.7)
        self.declared = (int.from_bytes(d[28:32], "big")
                         if self.header_ok and d[24:28] == d[92:96] else 0)
        self.freelist = int.from_bytes(d[32:36], "big") if self.header_ok else 0
        self.shift = 0
        self.shift_from = 0  # the first page read at the shifted offset
        self.seam_from = 0  # the first page not trusted: where the bytes went in (to shift_from - 1)
        self.npages = self.size // self.page_size
        if self.size % self.page_size and not self.header_damaged:
            self._align()
        elif self.declared and self.npages > self.declared and not self.header_damaged:
            self._align_pages(self.npages - self.declared)
        self.overflow: set[int] = set()  # overflow pages met while reading payloads
        self.damaged: dict[int, str] = {}  # page → "zeroed" | "unreadable" | "beyond the end"

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self._fh.close()

    # layout
    def offset(self, pno: int) -> int:
        off = (pno - 1) * self.page_size
        return off + self.shift if self.shift_from and pno >= self.shift_from else off

    def _header_at(self, off: int, first: bool) -> tuple[int, int, int] | None:
        """(kind, cells, pointer array offset) of a b-tree page header at `off`, or None."""
        ps = self.page_size
        if off < 0 or off + ps > self.size:
            return None
        h = off + (100 if first else 0)
        d = self.data
        kind = d[h]
        if kind not in BTREE_KINDS:
            return None
        ncells = int.from_bytes(d[h + 3:h + 5], "big")
        start = int.from_bytes(d[h + 5:h + 7], "big") or 65536
        hl = 12 if kind in (TABLE_INTERIOR, INDEX_INTERIOR) else 8
        used = h - off + hl + 2 * ncells
        if used > ps or start > ps or (ncells and start < used) or d[h + 7] > 60:
            return None
        return kind, ncells, h + hl

    def _guess_page_size(self) -> int:
        best, score = 4096, 0.3
        for ps in PAGE_SIZES:
            self.page_size = ps
            n = min(self.size // ps, _GUESS_PAGES)
            if n < 2:
                continue
            valid = sum(1 for k in range(1, n) if self._header_at(k * ps, False))
            if valid / (n - 1) > score:
                best, score = ps, valid / (n - 1)
        self.page_size = best
        return best

    def _align(self) -> None:
        """Bytes inserted (or dropped) inside the file: read the pages after the split point at
        the shifted offset, when that makes clearly more of them read as b-tree pages."""
        ps = self.page_size
        delta = self.size % ps
        n0 = self.size // ps
        plain = [0]
        for k in range(n0):
            plain.append(plain[-1] + bool(self._header_at(k * ps, k == 0)))
        best = (0, 0, 0)  # (gain, shift, split: the index of the first shifted page)
        for shift in (delta, delta - ps):
            n1 = (self.size - shift) // ps
            moved = [0]
            for k in range(n1):
                moved.append(moved[-1] + bool(self._header_at(k * ps + shift, False)))
            for s in range(1, min(n0, n1)):
                after = moved[n1] - moved[s]
                gain = after - (plain[n0] - plain[s])
                if gain > best[0] and after >= 2 * (plain[n0] - plain[s]):
                    best = (gain, shift, s)
        gain, shift, split = best
        if gain >= 2:
            self.shift, self.shift_from, self.seam_from = shift, split + 1, split
            self.npages = (self.size - shift) // ps

    def _align_pages(self, extra: int) -> None:
        """Whole pages inserted (more pages than the header's valid count, the size a multiple
        of the page size): the pages after them read `extra` pages on, from where the b-tree's
        pointers say (sqlite_realign)."""
        got = inserted_pages_split(self, extra)
        if got is not None:
            self.seam_from, self.shift_from = got
            self.shift = extra * self.page_size
            self.npages = self.declared

    # pages
    def btree(self, pno: int) -> Page | None:
        if not 1 <= pno <= self.npages:
            self.damaged.setdefault(pno, "beyond the end")
            return None
        if self.shift_from and self.seam_from <= pno < self.shift_from:
            # the page the bytes went into (or out of): where in it is not known, so none of it
            # is trusted — its cells past that point would read as other bytes
            self.damaged.setdefault(pno, "shifted")
            return None
        base = self.offset(pno)
        got = self._header_at(base, pno == 1)
        if got is None:
            page = self.data[base:base + self.page_size]
            self.damaged.setdefault(pno, "zeroed" if not any(page) else "unreadable")
            return None
        kind, ncells, ptrs = got
        right = 0
        if kind in (TABLE_INTERIOR, INDEX_INTERIOR):
            h = base + (100 if pno == 1 else 0)
            right = int.from_bytes(self.data[h + 8:h + 12], "big")
        return Page(pno, kind, base, ptrs, ncells, right)

    def _cells(self, page: Page) -> Iterator[int]:
        d = self.data
        lo = page.ptrs - page.base + 2 * page.ncells
        for i in range(page.ncells):
            p = page.ptrs + 2 * i
            ptr = int.from_bytes(d[p:p + 2], "big")
            yield page.base + ptr if lo <= ptr < self.usable else -1

    def _payload(self, pos: int, end: int, size: int, table_leaf: bool) -> bytes:
        u = self.usable
        x = u - 35 if table_leaf else (u - 12) * 64 // 255 - 23
        if size < 0:
            raise BadBytes("negative payload size")
        if size <= x:
            if pos + size > end:
                raise BadBytes("payload past its page")
            return bytes(self.data[pos:pos + size])
        m = (u - 12) * 32 // 255 - 23
        k = m + (size - m) % (u - 4)
        local = k if k <= x else m
        if pos + local + 4 > end:
            raise BadBytes("payload past its page")
        parts = [self.data[pos:pos + local]]
        remaining = size - local
        nxt = int.from_bytes(self.data[pos + local:pos + local + 4], "big")
        seen: set[int] = set()
        while remaining > 0:
            if nxt in seen or not 2 <= nxt <= self.npages:
                raise BadBytes("broken overflow chain")
            seen.add(nxt)
            off = self.offset(nxt)
            n = min(remaining, u - 4)
            if off + 4 + n > self.size:
                raise BadBytes("overflow page past the end")
            parts.append(self.data[off + 4:off + 4 + n])
            remaining -= n
            nxt = int.from_bytes(self.data[off:off + 4], "big")
        self.overflow |= seen
        return b"".join(parts)

    def children(self, page: Page) -> list[int]:
        out = []
        for pos in self._cells(page):
            if pos >= 0:
                out.append(int.from_bytes(self.data[pos:pos + 4], "big"))
        out.append(page.right)
        return out

    def walk(self, root: int, seen: set[int], damage: dict[int, str] | None = None,
             interior_cells: bool = False) -> Iterator[Page]:
        """The pages of the b-tree at `root`, left to right (leaves; index interior pages too
        with `interior_cells`); `seen` collects its pages, `damage` the ones that do not read."""
        stack = [root]
        while stack:
            pno = stack.pop()
            if pno in seen:
                continue
            seen.add(pno)
            page = self.btree(pno)
            if page is None:
                if damage is not None:
                    damage[pno] = self.damaged[pno]
                continue
            if page.kind in (TABLE_INTERIOR, INDEX_INTERIOR):
                stack.extend(reversed(self.children(page)))
                if page.kind == INDEX_INTERIOR and interior_cells:
                    yield page
            else:
                yield page

    def mark(self, root: int, seen: set[int]) -> None:
        for _ in self.walk(root, seen):
            pass

    def table_cells(self, page: Page) -> Iterator[tuple[int, bytes] | None]:
        """(rowid, payload) of each cell of a table leaf page; None for a cell that does not read."""
        end = page.base + self.usable
        for pos in self._cells(page):
            try:
                if pos < 0:
                    raise BadBytes("cell pointer out of its page")
                size, i = varint(self.data, pos, end)
                rowid, i = varint(self.data, i, end)
                yield rowid, self._payload(i, end, size, True)
            except BadBytes:
                yield None

    def index_cells(self, page: Page) -> Iterator[bytes | None]:
        end = page.base + self.usable
        for pos in self._cells(page):
            try:
                if pos < 0:
                    raise BadBytes("cell pointer out of its page")
                i = pos + 4 if page.kind == INDEX_INTERIOR else pos
                size, i = varint(self.data, i, end)
                yield self._payload(i, end, size, False)
            except BadBytes:
                yield None

    def mark_freelist(self, seen: set[int]) -> None:
        trunk, steps = self.freelist, 0
        while 2 <= trunk <= self.npages and trunk not in seen and steps < self.npages:
            seen.add(trunk)
            off = self.offset(trunk)
            nxt = int.from_bytes(self.data[off:off + 4], "big")
            count = int.from_bytes(self.data[off + 4:off + 8], "big")
            for j in range(min(count, (self.usable - 8) // 4)):
                p = off + 8 + 4 * j
                seen.add(int.from_bytes(self.data[p:p + 4], "big"))
            trunk, steps = nxt, steps + 1

    def table_ranges(self, root: int, damage: dict[int, str]
                     ) -> tuple[list[tuple[int, int | None]], int]:
        """The rowid ranges (after, up to] of a table b-tree's pages that do not read (up to
        None: unbounded), and how many rows they held (each range's width; an unbounded one the
        typical width of its siblings); its damaged pages into `damage`. Only the interior pages
        are read, and each leaf's header."""
        ranges, _rows, _bad, held = self._table_walk(root, damage, decode=False)
        return ranges, held

    def table_rows(self, root: int, damage: dict[int, str]) -> tuple[dict[int, list[Any]], int, int]:
        """(rows by rowid, cells that did not read, rows the damaged pages held) of a table
        b-tree; its damaged pages into `damage`."""
        _ranges, rows, bad, held = self._table_walk(root, damage, decode=True)
        return rows, bad, held

    def _table_walk(self, root: int, damage: dict[int, str], decode: bool
                    ) -> tuple[list[tuple[int, int | None]], dict[int, list[Any]], int, int]:
        """What a lost page held is its rowid range: an interior cell's key bounds its left
        child's rowids."""
        rows: dict[int, list[Any]] = {}
        bad = 0
        seen: set[int] = set()
        ranges: list[tuple[int, int | None]] = []  # (after, up to) of each damaged page
        widths: list[int] = []
        stack: list[tuple[int, int, int | None]] = [(root, _FIRST, None)]
        while stack:
            pno, lo, hi = stack.pop()
            if pno in seen:
                continue
            seen.add(pno)
            page = self.btree(pno)
            if page is None or page.kind not in (TABLE_LEAF, TABLE_INTERIOR):
                damage[pno] = self.damaged.get(pno, "unreadable")
                ranges.append((lo, hi))
                continue
            if page.kind == TABLE_INTERIOR:
                kids = []
                prev = lo
                for pos in self._cells(page):
                    if pos < 0:
                        continue
                    child = int.from_bytes(self.data[pos:pos + 4], "big")
                    try:
                        key, _ = varint(self.data, pos + 4, page.base + self.usable)
                    except BadBytes:
                        continue
                    kids.append((child, prev, key))
                    if prev > _FIRST:
                        widths.append(key - prev)
                    prev = key
                kids.append((page.right, prev, hi))
                stack.extend(reversed(kids))
                continue
            if not decode:
                continue
            for cell in self.table_cells(page):
                if cell is None:
                    bad += 1
                    continue
                try:
                    rows[cell[0]] = decode_record(cell[1], self.encoding)
                except BadBytes:
                    bad += 1
        held = 0
        typical = round(sum(widths) / len(widths)) if widths else 0
        for lo, hi in ranges:
            if hi is not None and lo > _FIRST:
                held += max(0, hi - lo)
            else:
                held += typical
        return ranges, rows, bad, held

    def index_rows(self, root: int, ranges: list[tuple[int, int | None]] | None = None
                   ) -> tuple[list[list[Any]], int]:
        """An index's entries (its columns, then the rowid), page by page: all, or those whose
        rowid is in `ranges` ((after, up to]), only those decoded whole."""
        out: list[list[Any]] = []
        bad = 0
        for page in self.walk(root, set(), interior_cells=True):
            for payload in self.index_cells(page):
                try:
                    if payload is None:
                        raise BadBytes("cell")
                    if ranges is not None:
                        rid = last_int(payload)
                        if rid is None or not any(lo < rid and (hi is None or rid <= hi)
                                                  for lo, hi in ranges):
                            continue
                    out.append(decode_record(payload, self.encoding))
                except BadBytes:
                    bad += 1
        return out, bad

    def schema(self) -> list[tuple[Any, ...]]:
        """sqlite_master's rows: from page 1's tree, and (when that is damaged) from any other
        page whose cells are all schema rows."""
        damage: dict[int, str] = {}
        rows, _bad, _ = self.table_rows(1, damage)
        found = [tuple(r) for r in rows.values() if schema_like(r)]
        if damage or not found:
            have = {(r[0], r[1]) for r in found}
            for pno in range(2, min(self.npages, _SCHEMA_SCAN_PAGES) + 1):
                got = self._header_at(self.offset(pno), False)
                if not got or got[0] != TABLE_LEAF:
                    continue
                page = Page(pno, got[0], self.offset(pno), got[2], got[1], 0)
                cells = []
                for cell in self.table_cells(page):
                    try:
                        rec = decode_record(cell[1], self.encoding) if cell else None
                    except BadBytes:
                        rec = None
                    cells.append(rec)
                good = [c for c in cells if c is not None and schema_like(c)]
                if good and len(good) * 2 >= len(cells):
                    for r in good:
                        if (r[0], r[1]) not in have:
                            have.add((r[0], r[1]))
                            found.append(tuple(r))
        return found

    def orphan_leaves(self, seen: set[int]) -> Iterator[tuple[int, list[tuple[int, list[Any]]]]]:
        """Table leaf pages no tree reached (a damaged interior page lost them): their rows."""
        for pno in range(2, self.npages + 1):
            if pno in seen or pno in self.overflow:
                continue
            got = self._header_at(self.offset(pno), False)
            if not got or got[0] != TABLE_LEAF:
                continue
            page = Page(pno, got[0], self.offset(pno), got[2], got[1], 0)
            rows = []
            for cell in self.table_cells(page):
                with contextlib.suppress(BadBytes):
                    if cell is not None:
                        rows.append((cell[0], decode_record(cell[1], self.encoding)))
            if rows:
                yield pno, rows


# -- what was recovered -------------------------------------------------------------------------------


@dataclass
class TableLoss:
    """What one table lost."""

    pages: list[int] = field(default_factory=list)  # its damaged pages
    rows: int = 0  # rows known lost (named by an index, or cells that did not read)
    estimated: int = 0  # rows of damaged pages no index names (an estimate from the page sizes)
    rebuilt: int = 0  # rows rebuilt from an index holding all their columns
    found: int = 0  # rows of leaf pages found again outside the tree
    refused: int = 0  # rows read but not valid (NOT NULL, duplicate key)
    garbled: int = 0  # rows whose text was zeroed or overwritten (NUL bytes)
    held: int = 0  # rows the damaged pages held (their rowid ranges)
    missing: dict[int, dict[str, Any]] = field(default_factory=dict)  # rowid → what indexes say
    by: dict[str, Counter[Any]] = field(default_factory=dict)  # column → value → rows lost
    unread: str | None = None  # why the table was not read at all

    @property
    def total(self) -> int:
        return self.rows + self.estimated + self.refused + self.garbled

    @property
    def unnamed(self) -> int:
        """Rows lost that no index names (they may be any run's)."""
        return self.estimated + self.refused + self.garbled


@dataclass
class Recovered:
    """What `recover` could read of a damaged SQLite file."""

    path: str
    copy: str | None  # the private SQLite file holding what was read (None: nothing read)
    kind: str | None  # "MLflow", "Optuna", "trackio", "neptune-scale", or None
    cause: str
    hint: str
    rows: dict[str, int]  # rows read per table
    lost: dict[str, TableLoss]
    pages: int  # pages in the file
    damaged_pages: int
    by_sqlite: list[str]  # tables SQLite still read whole
    schema_lost: bool = False  # no schema row and no CREATE statement survives: no kind to tell

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def what(self) -> str:
        if self.kind:
            return f"a damaged {self.kind} store"
        if self.schema_lost:
            return "a damaged SQLite file whose schema is lost, so its kind cannot be told"
        return "a damaged SQLite file"

    def lost_by(self, table: str, column: str) -> Counter[Any]:
        loss = self.lost.get(table)
        return loss.by.get(column, Counter()) if loss else Counter()

    def table_note(self, table: str, label: str | None = None) -> str | None:
        """One table's loss in words, or None when it lost nothing."""
        loss = self.lost.get(table)
        what = label or table
        if loss is None:
            return None
        if loss.unread:
            return f"{what}: not read ({loss.unread})"
        how = []
        if loss.rebuilt:
            how.append(f"{loss.rebuilt} rebuilt from an index")
        if loss.found:
            how.append(f"{loss.found} found on pages cut off from the table")
        read = f"{what}: {self.rows.get(table, 0)} row(s) read" + (f" ({', '.join(how)})"
                                                                    if how else "")
        if not loss.total:
            if loss.pages and not how:
                return (f"{read}; page(s) {_pages(loss.pages)} lost (how many rows they held "
                        "cannot be told)")
            return read if how else None
        count = f"about {loss.total}" if loss.estimated else str(loss.total)
        where = f" with page(s) {_pages(loss.pages)}" if loss.pages else ""
        return f"{read}, {count} lost{where}"

    def note(self, tables: Iterable[str] | None = None) -> str:
        """The one-line note a reader adds to what it read from this file."""
        names = list(tables) if tables is not None else sorted(self.lost)
        said = [n for n in (self.table_note(t) for t in names) if n]
        how = ("read table by table with SQLite" if not self.damaged_pages and self.by_sqlite
               else "read page by page")
        tail = "; ".join(said) if said else "no row of its tables lost"
        return f"{self.name}: {self.what()} ({self.cause}); {how}: {tail}"


def _pages(pages: list[int]) -> str:
    pages = sorted(pages)
    if len(pages) <= 3:
        return ", ".join(map(str, pages))
    return f"{', '.join(map(str, pages[:3]))} and {len(pages) - 3} more"


# -- recovery -------------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], Recovered] = {}
_KINDS: dict[tuple[Any, ...], str | None] = {}  # damaged_kind's answers per file state
_TMP: list[str] = []


def _tmpdir() -> str:
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="rundiff-salvage-"))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return _TMP[0]


def _stat_key(path: str) -> tuple[Any, ...]:
    st = os.stat(path)
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def _ro(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro&immutable=1", uri=True)
    conn.text_factory = _text
    return conn


def _utf8(raw: Any) -> int:
    """1 when the bytes are UTF-8 text (an SQL function on the copy)."""
    try:
        bytes(raw).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        return 0
    return 1


def _text(raw: bytes) -> str:
    """Text as stored; text that is not UTF-8 (a garbled cell) is marked with a NUL byte, so
    its row is dropped and counted as garbled, never read as data."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\x00" + raw.decode("utf-8", "replace")


def table_names(path: str) -> tuple[set[str], str | None]:
    """The table names of a SQLite file (by SQLite, else from its pages, else from the CREATE TABLE
    statements in its first bytes), and SQLite's error when it could not say them itself."""
    try:
        conn = _ro(path)
        try:
            return {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}, None
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        if not is_damage(exc):  # locked, unreadable, …: nothing says it is damaged
            return set(), None
        error = _said(exc)
    names: set[str] = set()
    with contextlib.suppress(OSError, ValueError):
        pf = PageFile(path)
        try:
            names = schema_names(pf.schema())
        finally:
            pf.close()
    if kind_of(names) is None:
        names |= _create_names(path)
    return names, error


_CREATE = re.compile(rb"CREATE (?:TABLE (?:IF NOT EXISTS )?|(?:UNIQUE )?INDEX (?:IF NOT EXISTS )?"
                     rb"[\"`\[]?[A-Za-z_][A-Za-z0-9_]*[\"`\]]? ON )[\"`\[]?([A-Za-z_][A-Za-z0-9_]*)",
                     re.I)


def _create_names(path: str) -> set[str]:
    """The tables named by the CREATE TABLE and CREATE INDEX … ON statements in the file's bytes
    (schema text that survives where its b-tree does not read)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_KIND_SCAN_BYTES)
    except OSError:
        return set()
    return {m.group(1).decode("ascii").lower() for m in _CREATE.finditer(raw)}


QUICK_CHECK_BYTES = 64 << 20  # a file up to this size is checked whole when first opened


def quick_damage(path: str) -> str | None:
    """SQLite's word for damage a cheap look finds in a file SQLite still opens, else None: the
    header's page count against the file's size (a cut tail, inserted bytes) always; SQLite's
    `PRAGMA quick_check` (milliseconds) for a file up to QUICK_CHECK_BYTES. A larger file's damage
    is met where its pages are read. Cached per file state."""
    try:
        key = ("quick", *_stat_key(path))
    except OSError:
        return None
    if key in _KINDS:
        return _KINDS[key]
    said = _quick_damage(path)
    with _LOCK:
        if len(_KINDS) > 256:
            _KINDS.clear()
        _KINDS[key] = said
    return said


def _quick_damage(path: str) -> str | None:
    malformed = "database disk image is malformed"
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError:
        return None
    if len(head) < 100 or head[:16] != SQLITE_MAGIC:
        return None
    for live in ("-journal", "-wal"):  # a store being written: its file alone may not add up
        with contextlib.suppress(OSError):
            if os.path.getsize(path + live) > 0:
                return None
    ps = int.from_bytes(head[16:18], "big")
    ps = 65536 if ps == 1 else ps
    declared = int.from_bytes(head[28:32], "big")
    # the in-header page count holds when its change counter is current (SQLite ≥ 3.7.0)
    if ps in PAGE_SIZES and declared and head[24:28] == head[92:96]:
        if size % ps or size // ps < declared:
            return malformed
    if size > QUICK_CHECK_BYTES:
        return None
    try:
        conn = _ro(path)
        try:
            got = conn.execute("PRAGMA quick_check(1)").fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        return _said(exc) if is_damage(exc) else None
    return None if got == [("ok",)] else malformed


def damaged_kind(path: str) -> str | None:
    """The kind of a damaged SQLite file (None: it reads, or nothing tells): from the schema rows
    SQLite or the page reader still reads, else the CREATE statements left in its bytes. A file
    whose schema reads is damaged when `quick_damage` says so (its data pages)."""
    key = None
    with contextlib.suppress(OSError):
        key = ("kind", *_stat_key(path))
    if key is not None and key in _KINDS:
        return _KINDS[key]
    names, error = table_names(path)
    if error is None and names:
        error = quick_damage(path)
    kind = None if error is None else kind_of(names)
    if key is not None:
        with _LOCK:
            if len(_KINDS) > 256:
                _KINDS.clear()
            _KINDS[key] = kind
    return kind


def recover(path: str, tables: Iterable[str] | None = None, error: str | None = None) -> Recovered:
    """Read what can be read of the SQLite file at `path` into a private copy (cached per file
    state and table set). `tables`: only these (None: every table); `error`: what SQLite said."""
    want = None if tables is None else frozenset(tables)
    key = (*_stat_key(path), want)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = _CACHE[key] = _recover(path, want, error)
        return hit


def recovered(path: str) -> Recovered | None:
    """What `recover(path, None, …)` already read of the file as it is now (None: nothing yet,
    or it changed since): a reader that met damage once reads the copy from then on."""
    try:
        return _CACHE.get((*_stat_key(path), None))
    except OSError:
        return None


def damage_message(exc: BaseException) -> str:
    """What a read that met damage says: SQLite's message, or — when SQLite handed over text it
    could not decode — that the image is malformed there."""
    if isinstance(exc, UnicodeDecodeError):
        return "database disk image is malformed: text that is not UTF-8"
    return str(exc)


def _sqlite_schema(path: str) -> tuple[list[tuple[Any, ...]] | None, str | None]:
    try:
        conn = _ro(path)
        try:
            try:
                return [tuple(r) for r in conn.execute(
                    "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master")], None
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                first = _said(exc)
            conn.execute("PRAGMA writable_schema = ON")  # a damaged CREATE statement: read past it
            return [tuple(r) for r in conn.execute(
                "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master")], first
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        return None, _said(exc)


def _said(exc: BaseException) -> str:
    """SQLite's message; one it could not even hand over (its text not UTF-8) in its words."""
    if isinstance(exc, UnicodeDecodeError):
        return "malformed database schema (its text is not UTF-8)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_COLUMN_LINE = re.compile(r'^\s*[,(]?\s*["`\[]?([A-Za-z_][A-Za-z0-9_]*)["`\]]?\s+([A-Za-z]+)', re.M)
_NOT_COLUMNS = {"constraint", "primary", "foreign", "unique", "check", "create"}


def _lenient_create(name: str, sql: str) -> str | None:
    """A CREATE TABLE for a table whose own statement no longer parses: its column lines."""
    cols = []
    for m in _COLUMN_LINE.finditer(sql.split("(", 1)[1] if "(" in sql else ""):
        col, decl = m.group(1), m.group(2)
        if col.lower() in _NOT_COLUMNS or col in (c for c, _ in cols):
            continue
        cols.append((col, decl))
    if not cols:
        return None
    return f"CREATE TABLE {_quote(name)} ({', '.join(f'{_quote(c)} {d}' for c, d in cols)})"


def _literal(text: Any) -> Any:
    if text is None:
        return None
    s = str(text).strip()
    if len(s) >= 2 and s[0] == s[-1] == "'":
        return s[1:-1].replace("''", "'")
    try:
        return int(s)
    except ValueError:
        with contextlib.suppress(ValueError):
            return float(s)
    return None


@dataclass
class _Table:
    name: str
    root: int
    sql: str
    columns: list[str]
    defaults: list[Any]
    ipk: int | None  # the INTEGER PRIMARY KEY column (the rowid's alias)
    rowid: bool
    indexes: list[tuple[str, int, list[str]]]  # (name, root page, columns)
    create: str  # the statement that creates it in the copy


def _describe(schema: list[tuple[Any, ...]], want: frozenset[str] | None
              ) -> tuple[dict[str, _Table], dict[str, str], list[str]]:
    """The tables to read with their columns and indexes (from SQLite parsing the schema's own
    statements in a scratch database), the tables that cannot be, and the indexes' statements."""
    scratch = sqlite3.connect(":memory:")
    tables: dict[str, _Table] = {}
    unread: dict[str, str] = {}
    index_sql: list[str] = []
    try:
        for typ, name, _tbl, root, sql in schema:
            if typ != "table" or not isinstance(name, str) or name.startswith("sqlite_"):
                continue
            if want is not None and name not in want:
                continue
            if not isinstance(sql, str):
                unread[name] = "its schema entry is damaged"
                continue
            create = sql
            try:
                scratch.execute(sql)
            except sqlite3.Error:
                create = _lenient_create(name, sql) or ""
                try:
                    scratch.execute(create)
                except sqlite3.Error:
                    unread[name] = "its CREATE statement is damaged"
                    continue
            info = scratch.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
            pk = [r for r in info if r[5]]
            ipk = None
            if len(pk) == 1 and str(pk[0][2]).upper() == "INTEGER":
                ipk = pk[0][0]
            rowid = "WITHOUT ROWID" not in " ".join(sql.upper().split())
            tables[name] = _Table(name, root if isinstance(root, int) else 0, sql,
                                  [r[1] for r in info], [_literal(r[4]) for r in info],
                                  ipk if rowid else None, rowid, [], create)
        for typ, name, tbl, root, sql in schema:
            if typ != "index" or tbl not in tables or not isinstance(root, int):
                continue
            if isinstance(sql, str):
                with contextlib.suppress(sqlite3.Error):
                    scratch.execute(sql)
                    index_sql.append(sql)
            try:
                cols = [r[2] for r in scratch.execute(f"PRAGMA index_info({_quote(name)})")]
            except sqlite3.Error:
                continue
            if cols and all(isinstance(c, str) for c in cols):
                tables[tbl].indexes.append((name, root, cols))
    finally:
        scratch.close()
    return tables, unread, index_sql


def _recover(path: str, want: frozenset[str] | None, error: str | None) -> Recovered:
    schema, schema_error = _sqlite_schema(path)
    error = error or schema_error
    by_pages = schema is None  # SQLite cannot read even the schema: nor any table
    pf = PageFile(path)
    copy = None
    try:
        if schema is None:
            schema = pf.schema()
        names = schema_names(schema)
        kind, schema_lost = kind_of(names), False
        if kind is None:  # too few rows read to tell: the schema text in the bytes may
            more = _create_names(path)
            kind, schema_lost = kind_of(names | more), not names and not more
        tables, unread, index_sql = _describe(schema, want)
        lost: dict[str, TableLoss] = {n: TableLoss(unread=why) for n, why in unread.items()}
        by_sqlite: list[str] = []
        count: dict[str, int] = {}
        if tables:
            copy = _Copy(path, attach=not by_pages)
            for name, t in tables.items():
                if not copy.create(t):
                    lost[name] = TableLoss(unread="its CREATE statement is damaged")
                    continue
                loss = lost[name] = TableLoss()
                # after inserted or dropped bytes SQLite reads every page misaligned: a table
                # with a page there is read page by page, realigned
                sqlite_ok = copy.src and not (pf.shift_from and t.root > 0 and max(
                    _tree_pages(pf, t.root), default=0) >= pf.seam_from)
                if sqlite_ok and copy.from_sqlite(t, None, loss):
                    by_sqlite.append(name)
                elif not t.rowid:
                    lost[name] = TableLoss(unread="a WITHOUT ROWID table SQLite cannot read")
                else:
                    _damaged_table(pf, copy, t, loss, sqlite_ok)
            damaged_tables = [n for n, loss in lost.items() if loss.pages and n in tables]
            if damaged_tables:
                _orphans(pf, schema, copy, tables, lost, damaged_tables)
            for name in tables:
                if name in lost and not lost[name].unread:
                    _count_losses(lost[name], copy.rowids(tables[name]))
            count = copy.finish(tables, lost, index_sql)
        cause, hint = _cause(pf, error, pf.damaged, schema_error)
        kept = {n: v for n, v in lost.items()
                if v.total or v.unread or v.rebuilt or v.found or v.pages}
        return Recovered(path, copy.path if copy is not None and count else None, kind, cause,
                         hint, count, kept, pf.npages, len(pf.damaged), by_sqlite, schema_lost)
    finally:
        if copy is not None:
            copy.close()
        pf.close()


class _Copy:
    """The private copy being written: the damaged file attached read-only (`src`) so SQLite
    copies what it still reads table to table, at its own speed; rows read page by page are
    inserted from Python."""

    def __init__(self, path: str, attach: bool) -> None:
        folder = tempfile.mkdtemp(prefix="copy-", dir=_tmpdir())
        self.path = os.path.join(folder, os.path.basename(path))
        self.conn = sqlite3.connect(Path(self.path).absolute().as_uri(), uri=True)
        self.conn.text_factory = _text
        # a journal (in memory) so a copy that meets damage half-way is undone whole
        for pragma in ("journal_mode = MEMORY", "synchronous = OFF",
                       "ignore_check_constraints = ON"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.create_function("rundiff_utf8", 1, _utf8, deterministic=True)
        self.src = False
        if attach:
            try:
                self.conn.execute("ATTACH DATABASE ? AS src",
                                  (Path(path).absolute().as_uri() + "?mode=ro&immutable=1",))
                self.src = True
            except sqlite3.Error:
                pass

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def create(self, t: _Table) -> bool:
        try:
            self.conn.execute(t.create)
            return True
        except sqlite3.Error:
            return False

    def _cols(self, t: _Table) -> tuple[str, str]:
        cols = ", ".join(_quote(c) for c in t.columns)
        return cols, ("rowid, " if t.rowid else "")

    def from_sqlite(self, t: _Table, ranges: list[tuple[int, int | None]] | None,
                    loss: TableLoss) -> bool:
        """Copy the table's rows as SQLite reads them — all, or those in `ranges` ((after, up
        to]; up to None: no end) — and drop the garbled; False (nothing kept) at damage."""
        q = _quote(t.name)
        cols, rid = self._cols(t)
        head = (f"INSERT OR IGNORE INTO main.{q} ({rid}{cols}) SELECT {rid}{cols} "
                f"FROM src.{q} NOT INDEXED")
        self.conn.commit()
        try:
            if ranges is None:
                self.conn.execute(head)
            else:
                for after, upto in ranges:
                    # `rowid >= after + 1`, not `rowid > after`: SQLite seeks the latter from
                    # `after`, which is in the lost page before the range
                    if upto is None:
                        self.conn.execute(f"{head} WHERE rowid >= ?", (after + 1,))
                        continue
                    # a range ends where a lost page starts: stop one row short and take the
                    # last row by itself, so the scan never steps onto the lost page
                    self.conn.execute(f"{head} WHERE rowid >= ? AND rowid < ?", (after + 1, upto))
                    self.conn.execute(f"{head} WHERE rowid = ?", (upto,))
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            if not is_damage(exc):
                raise
            self.conn.rollback()
            self.conn.execute(f"DELETE FROM main.{q}")
            self.conn.commit()
            return False
        texts = " OR ".join(f"(typeof({q_c}) = 'text' AND (instr({q_c}, char(0)) > 0 OR "
                            f"NOT rundiff_utf8(CAST({q_c} AS BLOB))))"
                            for q_c in map(_quote, t.columns))
        if texts:  # a zeroed or overwritten cell body: NUL-filled text, or text not UTF-8
            loss.garbled += self.conn.execute(f"DELETE FROM main.{q} WHERE {texts}").rowcount
        return True

    def insert(self, t: _Table, rows: Iterable[tuple[int | None, list[Any]]],
               loss: TableLoss) -> int:
        """Insert rows read page by page (garbled ones dropped, invalid ones refused): how many
        were kept."""
        q = _quote(t.name)
        cols, rid = self._cols(t)
        marks = ", ".join("?" * len(t.columns))
        good, n = [], 0
        for rowid, vals in rows:
            n += 1
            if _garbled(vals):
                loss.garbled += 1
            else:
                good.append((rowid, *vals) if t.rowid else tuple(vals))
        before = self.conn.total_changes
        self.conn.executemany(f"INSERT OR IGNORE INTO main.{q} ({rid}{cols}) VALUES "
                              f"({'?, ' if t.rowid else ''}{marks})", good)
        kept = self.conn.total_changes - before
        loss.refused += len(good) - kept
        return kept

    def rowids(self, t: _Table) -> set[int]:
        if not t.rowid:
            return set()
        return {r[0] for r in self.conn.execute(f"SELECT rowid FROM main.{_quote(t.name)}")}

    def index_entries(self, index: str, cols: list[str], t: _Table,
                      ranges: list[tuple[int, int | None]]) -> list[list[Any]] | None:
        """An index's entries for rowids in `ranges`, as SQLite reads the index alone (it holds
        every column asked for); None when it does not read."""
        if not self.src:
            return None
        sel = ", ".join(_quote(c) for c in cols)
        out: list[list[Any]] = []
        self.conn.commit()  # a read that meets damage must cost nothing copied so far
        try:
            for after, upto in ranges:
                where = "rowid > ?" + ("" if upto is None else " AND rowid <= ?")
                args = (after,) if upto is None else (after, upto)
                out += [list(r) for r in self.conn.execute(
                    f"SELECT {sel}, rowid FROM src.{_quote(t.name)} INDEXED BY {_quote(index)} "
                    f"WHERE {where}", args)]
        except (sqlite3.Error, UnicodeDecodeError):
            self.conn.rollback()
            return None
        return out

    def finish(self, tables: dict[str, _Table], lost: dict[str, TableLoss],
               index_sql: list[str]) -> dict[str, int]:
        """Index the copy as the file was, and say how many rows each table holds."""
        count = {}
        for name in tables:
            if name in lost and lost[name].unread:
                continue
            count[name] = self.conn.execute(f"SELECT count(*) FROM main.{_quote(name)}"
                                            ).fetchone()[0]
        self.conn.commit()
        if self.src:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("DETACH DATABASE src")
            self.src = False
        for sql in index_sql:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute(sql)
        self.conn.commit()
        return count


def _between(ranges: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
    """The rowid ranges (after, up to] outside the lost ranges given."""
    out: list[tuple[int, int | None]] = []
    at: int | None = _FIRST
    for lo, hi in sorted(ranges, key=lambda r: r[0]):
        if at is None:
            break
        if lo > at:
            out.append((at, lo))
        at = hi if hi is None else max(at, hi)
    if at is not None:
        out.append((at, None))
    return out


def _tree_pages(pf: PageFile, root: int) -> set[int]:
    seen: set[int] = set()
    pf.mark(root, seen)
    return seen


def _damaged_table(pf: PageFile, copy: _Copy, t: _Table, loss: TableLoss,
                   sqlite_ok: bool = True) -> None:
    """A table SQLite cannot read whole: the rows between its lost pages as SQLite reads them
    (else every page it still has, page by page), then the lost pages' rows rebuilt from an
    index holding all their columns, or counted by the index entries that name them."""
    if t.root <= 0:
        loss.unread = "its root page is not known"
        return
    damage: dict[int, str] = {}
    lost_ranges, held = pf.table_ranges(t.root, damage)
    loss.pages, loss.held = sorted(damage), held
    if not (sqlite_ok and lost_ranges and copy.from_sqlite(t, _between(lost_ranges), loss)):
        damage.clear()
        found, bad, held = pf.table_rows(t.root, damage)
        loss.pages, loss.held = sorted(damage), max(held, bad)
        lost_ranges = lost_ranges or [(_FIRST, None)]
        copy.insert(t, ((rid, _fit(v, t, rid)) for rid, v in found.items()), loss)
    if not loss.pages and not lost_ranges:
        return
    have = copy.rowids(t)
    named: dict[int, dict[str, Any]] = {}
    for iname, iroot, icols in t.indexes:
        entries = copy.index_entries(iname, icols, t, lost_ranges) if sqlite_ok and max(
            _tree_pages(pf, iroot), default=0) < (pf.seam_from or 1 << 62) else None
        if entries is None:
            entries, _bad = pf.index_rows(iroot, lost_ranges)
        for e in entries:
            if len(e) != len(icols) + 1 or not isinstance(e[-1], int) or e[-1] in have:
                continue
            named.setdefault(e[-1], {}).update(zip(icols, e[:-1], strict=True))
    need = [c for i, c in enumerate(t.columns) if i != t.ipk]
    rebuilt = []
    for rid, known in named.items():
        if all(c in known for c in need):
            rebuilt.append((rid, [rid if i == t.ipk else known[c] for i, c in enumerate(t.columns)]))
        else:
            loss.missing[rid] = known
    loss.rebuilt += copy.insert(t, rebuilt, loss)


def _count_losses(loss: TableLoss, have: set[int]) -> None:
    """The rows an index names that were not found after all, per the columns it names; what no
    index names: the rowid ranges of the lost pages, less what was found."""
    for rid, known in loss.missing.items():
        if rid in have:
            continue
        loss.rows += 1
        for c, v in known.items():
            loss.by.setdefault(c, Counter())[v] += 1
    loss.estimated = max(0, loss.held - loss.rows - loss.rebuilt - loss.found)


def _garbled(vals: list[Any]) -> bool:
    """A row whose text holds NUL bytes: a cell whose body was zeroed or overwritten (what a
    tracker writes never holds them)."""
    return any(isinstance(v, str) and "\x00" in v for v in vals)


def _fit(vals: list[Any], t: _Table, rowid: int) -> list[Any]:
    n = len(t.columns)
    if len(vals) < n:
        vals = vals + t.defaults[len(vals):]
    vals = vals[:n]
    if t.ipk is not None and vals[t.ipk] is None:
        vals[t.ipk] = rowid
    return vals


def _orphans(pf: PageFile, schema: list[tuple[Any, ...]], copy: _Copy,
             tables: dict[str, _Table], lost: dict[str, TableLoss],
             damaged_tables: list[str]) -> None:
    """Leaf pages a damaged interior page no longer reaches (no tree, nor the free list, does):
    given to the one damaged table whose rows have their shape."""
    reached: set[int] = set()
    pf.mark(1, reached)
    for typ, _name, _tbl, root, _sql in schema:
        if typ in ("table", "index") and isinstance(root, int) and root > 1:
            pf.mark(root, reached)
    pf.mark_freelist(reached)
    have = {n: copy.rowids(tables[n]) for n in damaged_tables}
    for _pno, found in pf.orphan_leaves(reached):
        width = {len(vals) for _, vals in found}
        fits = [n for n in damaged_tables
                if all(len(tables[n].columns) - 3 <= w <= len(tables[n].columns) for w in width)]
        if len(fits) != 1:
            continue
        name = fits[0]
        t = tables[name]
        new = [(rid, _fit(vals, t, rid)) for rid, vals in found if rid not in have[name]]
        have[name] |= {rid for rid, _ in new}
        lost[name].found += copy.insert(t, new, lost[name])


def _cause(pf: PageFile, error: str | None, damaged: dict[int, str],
           schema_error: str | None) -> tuple[str, str]:
    """SQLite's word for the damage, with where it is, and a hint that fits it."""
    said = (error or "database disk image is malformed").strip().rstrip(".")
    ps = pf.page_size
    first = pf.size > 100 and pf.data[100] in BTREE_KINDS  # page 1 starts like a b-tree page
    if pf.header_damaged or not first:
        return (f"{said}: its header is damaged",
                "the file's first page is damaged (a disk, filesystem or copy error); restore it "
                "from a backup")
    if pf.shift_from:
        n = abs(pf.shift)
        how = "inserted" if pf.shift > 0 else "missing"
        where = (f"page {pf.seam_from}" if pf.seam_from == pf.shift_from - 1 else
                 f"one of pages {pf.seam_from}–{pf.shift_from - 1}")
        return (f"{said}: {n} bytes {how} in {where} (the {ps}-byte pages "
                "after it realigned)",
                f"bytes were {'inserted into' if pf.shift > 0 else 'dropped from'} the file while "
                "it was copied or stored; copy it again from where it was written")
    whole = pf.size // ps
    beyond = any(v == "beyond the end" for v in damaged.values())
    # a page pointer past the end says "cut" only when the header cannot say how long it was
    if pf.declared > whole or pf.size % ps or (beyond and not pf.declared):
        total = max(pf.declared, whole + 1)
        return (f"{said}: the file ends at page {whole} of {total} (cut short)",
                "the file was cut short (a copy or download that stopped early, or a full disk); "
                "copy it again from where it was written")
    if damaged:
        first = min(damaged)
        zeroed = damaged[first] == "zeroed"
        where = f" at page {first}" + (" (zeroed)" if zeroed else "")
        if len(damaged) > 1:
            where += f" and {len(damaged) - 1} more page(s)"
        hint = ("a block of the file reads as zeros (a disk, filesystem or copy error); restore "
                "it from a backup, or let `sqlite3 FILE .recover` rebuild a copy" if zeroed else
                "pages of the file do not read as SQLite pages (a disk, filesystem or copy "
                "error); restore it from a backup, or let `sqlite3 FILE .recover` rebuild a copy")
        return said + where, hint
    if schema_error:
        return (said, "a statement of the schema is damaged; the tables whose statements read "
                "were read")
    return (said, "restore the file from a backup, or let `sqlite3 FILE .recover` rebuild a copy")
