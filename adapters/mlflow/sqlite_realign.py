"""Where whole pages were inserted into a SQLite file, told by its b-tree pointers.

Bytes inserted inside a file shift every page after them. When their count is no multiple of
the page size, the file's size says so and the pages read at the shifted offset say where
(`PageFile._align`). When it is a multiple (a repeated 4 KiB region in a 4096-byte-page file, a
block written twice), every page still starts on a page boundary and reads as a page: only the
header's page count (valid when its change counter is current) says the file holds `extra` pages
more than it should, and only the b-tree says from where. An interior page's child pointer names
page `c`: before the inserted pages, page `c` is at its own slot; after them, at slot `c + extra`.
Read both ways, a child is right when it is a b-tree page of its parent's kind (table or index)
and, in a table, when its rowids lie in the range its parent's keys give; a pointer that reads
right one way only is a vote. The first shifted page is where the votes change, chosen only when
the shifted votes are clearly more than those against (a tail of extra pages after the file's
end, which SQLite itself ignores, gives no shifted votes and moves nothing).
"""

from __future__ import annotations

from typing import Any

from .sqlite_format import (
    INDEX_INTERIOR,
    INDEX_LEAF,
    TABLE_INTERIOR,
    TABLE_LEAF,
    BadBytes,
    Page,
    decode_record,
    schema_like,
    varint,
)

PageFile = Any  # sqlite_salvage.PageFile, which calls in here (not imported: no import loop)

MIN_VOTES = 2  # shifted votes needed: one pointer could read right by chance


def inserted_pages_split(pf: PageFile, extra: int) -> tuple[int, int] | None:
    """(the first page not trusted, the first page read `extra` pages on) when whole pages were
    inserted before it, or None when the pointers do not clearly say so. The pages from the
    first to the split (exclusive) are where the bytes went in: the last page read right
    unshifted and the first read right shifted bound it; no pointer tells about those between."""

    votes: list[tuple[int, bool]] = []  # (page, True: right only when shifted)

    def vote(page: int, parent: int, lo: int | None = None, hi: int | None = None) -> None:
        if 2 <= page <= pf.declared:
            plain = _fits(pf, page, parent, lo, hi)
            if plain != _fits(pf, page + extra, parent, lo, hi):
                votes.append((page, not plain))

    for slot in range(1, pf.npages + 1):
        got = pf._header_at(pf.page_size * (slot - 1), slot == 1)
        if got is not None and got[0] in (TABLE_INTERIOR, INDEX_INTERIOR):
            for child, lo, hi in _children(pf, slot, got):
                vote(child, got[0], lo, hi)
    # a root page no interior page points to (a one-page table or index): sqlite_master's
    # rootpage says which kind of page it is
    for kind, root in _schema_roots(pf, extra):
        vote(root, TABLE_INTERIOR if kind == "table" else INDEX_INTERIOR)
    split = _split(votes)
    if split is None:
        return None
    last_plain = max((c for c, moved in votes if not moved and c < split), default=split - 2)
    return max(last_plain + 1, 2), split


def _schema_roots(pf: PageFile, extra: int) -> list[tuple[str, int]]:
    """(type, rootpage) of the sqlite_master rows on the leaves page 1 points to, each leaf read
    at its own slot and `extra` slots on (a row read either way is a schema row: five columns,
    a type, names, a root page number)."""

    got = pf._header_at(0, True)
    if got is None:
        return []
    if got[0] == TABLE_LEAF:
        leaves = [(0, got, True)]
    elif got[0] == TABLE_INTERIOR:
        leaves = []
        for child, _lo, _hi in _children(pf, 1, got):
            for slot in (child, child + extra):
                if 2 <= slot <= pf.npages:
                    head = pf._header_at(pf.page_size * (slot - 1), False)
                    if head is not None and head[0] == TABLE_LEAF:
                        leaves.append((pf.page_size * (slot - 1), head, False))
    else:
        return []
    roots: set[tuple[str, int]] = set()
    for base, (kind, ncells, ptrs), _first in leaves:
        page = Page(0, kind, base, ptrs, ncells, 0)
        for cell in pf.table_cells(page):
            try:
                row = decode_record(cell[1], pf.encoding) if cell else None
            except BadBytes:
                continue
            if row and schema_like(row) and row[0] in ("table", "index") and row[3]:
                roots.add((row[0], row[3]))
    return sorted(roots)


def _split(votes: list[tuple[int, bool]]) -> int | None:
    """The page from which on the votes say "shifted", with the fewest votes against (plain
    votes from it on, shifted ones before it); among equals the latest (the fewest pages left
    between the last plain vote and it, none of which is trusted)."""
    votes.sort()
    plain_total = sum(not moved for _c, moved in votes)
    best: int | None = None
    best_cost = len(votes) + 1
    plain_before = shifted_before = 0
    i = 0
    while i < len(votes):
        page = votes[i][0]
        cost = (plain_total - plain_before) + shifted_before
        if cost <= best_cost:
            best, best_cost = page, cost
        while i < len(votes) and votes[i][0] == page:
            plain_before += not votes[i][1]
            shifted_before += votes[i][1]
            i += 1
    if best is None:
        return None
    agreeing = sum(moved for c, moved in votes if c >= best)
    return best if agreeing >= MIN_VOTES and agreeing > 2 * best_cost else None


def _children(pf: PageFile, slot: int, got: tuple[int, int, int]) -> list[tuple[int, int | None, int | None]]:
    """(child page, after, up to) of the interior page at `slot`: a table's rowid bounds from its
    keys (None: unbounded), none for an index."""

    kind, ncells, ptrs = got
    base = pf.page_size * (slot - 1)
    h = base + (100 if slot == 1 else 0)
    right = int.from_bytes(pf.data[h + 8:h + 12], "big")
    page = Page(slot, kind, base, ptrs, ncells, right)
    out: list[tuple[int, int | None, int | None]] = []
    prev: int | None = None
    for pos in pf._cells(page):
        if pos < 0:
            continue
        child = int.from_bytes(pf.data[pos:pos + 4], "big")
        if kind != TABLE_INTERIOR:
            out.append((child, None, None))
            continue
        try:
            key, _ = varint(pf.data, pos + 4, base + pf.usable)
        except BadBytes:
            continue
        out.append((child, prev, key))
        prev = key
    out.append((right, prev, None))
    return out


def _fits(pf: PageFile, slot: int, parent: int, lo: int | None, hi: int | None) -> bool:
    """The page at `slot` (unshifted) is a child of a `parent`-kind page bounded by (lo, hi]."""

    if not 2 <= slot <= pf.npages:
        return False
    base = pf.page_size * (slot - 1)
    got = pf._header_at(base, False)
    if got is None:
        return False
    kind, ncells, ptrs = got
    if parent == INDEX_INTERIOR:
        return kind in (INDEX_LEAF, INDEX_INTERIOR)
    if kind not in (TABLE_LEAF, TABLE_INTERIOR):
        return False
    if not ncells:
        return kind == TABLE_LEAF
    page = Page(slot, kind, base, ptrs, ncells, 0)
    keys = []
    end = base + pf.usable
    for pos in pf._cells(page):
        if pos < 0:
            return False
        try:
            if kind == TABLE_LEAF:
                _size, i = varint(pf.data, pos, end)
                key, _ = varint(pf.data, i, end)
            else:
                key, _ = varint(pf.data, pos + 4, end)
        except BadBytes:
            return False
        keys.append(key)
    first, last = min(keys), max(keys)
    return (lo is None or first > lo) and (hi is None or last <= hi)
