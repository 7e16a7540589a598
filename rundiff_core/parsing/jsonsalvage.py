"""The readable part of a JSON document that does not parse: the entries of its one long list.

A state file (HF Trainer's `trainer_state.json`, Ray Tune's `experiment_state-*.json`) is one
object whose worth is one list; a cut or a damaged stretch loses only what it touched. An entry
counts when it parses whole and is followed by `,` or `]` (or the end: a cut right after it).
Entries after the damage are found again from the next `, {` when `resync` is set (flat objects:
a `{` there starts an entry), else reading stops at the damage. Byte offsets are the file's.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ENTRY_START = re.compile(r",\s*\{")
_GAP = " \t\r\n,"


class ListSalvage:
    """What the list under `key` still holds: `entries` that parse whole, the stretches skipped
    (`gaps`: byte range and the entries either side, None at an edge), entries equal to an
    earlier one dropped (`repeated`: a duplicated region), and whether the list ended
    (`complete`) or the text ran out or stayed unreadable from byte `cut_at` on."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.entries: list[Any] = []
        self.gaps: list[tuple[int, int, Any, Any]] = []
        self.repeated = 0
        self.complete = False
        self.cut_at: int | None = None


def salvage_list(text: str, keys: tuple[str, ...], *, resync: bool = False, unique: bool = False,
                 limit: int | None = None, size: int | None = None) -> ListSalvage | None:
    """The readable entries of the first `"<key>": [` list in `text` (None: no such list).
    `resync`: the entries are objects; skip a damaged stretch to the next `, {` and go on.
    `unique`: drop an entry equal to an earlier one. `limit`: entries read at most. `size`: the
    byte length of the file `text` was decoded from."""
    m = re.search('"(' + "|".join(map(re.escape, keys)) + r')"\s*:\s*\[', text)
    if m is None:
        return None
    out = ListSalvage(m.group(1))
    decode = json.JSONDecoder().raw_decode
    pos, n = m.end(), len(text)
    gap_from: int | None = None
    while limit is None or len(out.entries) < limit:
        while pos < n and text[pos] in _GAP:
            pos += 1
        if pos >= n:
            out.cut_at = _byte(text, gap_from if gap_from is not None else n) if size is None \
                or gap_from is not None else size
            break
        if text[pos] == "]" and gap_from is None:
            out.complete = True
            break
        try:
            obj, end = decode(text, pos)
            after = end
            while after < n and text[after] in " \t\r\n":
                after += 1
            ok = (not resync or isinstance(obj, dict)) and (after >= n or text[after] in ",]")
        except (ValueError, RecursionError):
            ok = False
        if ok:
            if gap_from is not None:
                out.gaps.append((_byte(text, gap_from), _byte(text, pos),
                                 out.entries[-1] if out.entries else None, obj))
                gap_from = None
            pos = end
            out.entries.append(obj)
            continue
        gap_from = pos if gap_from is None else gap_from
        nxt = _ENTRY_START.search(text, pos + 1) if resync else None
        if nxt is None:  # no whole entry after it: the readable part ends here
            out.cut_at = _byte(text, gap_from)
            break
        pos = nxt.end() - 1
    if unique:
        out.entries, out.repeated = drop_repeats(out.entries)
    return out


def drop_repeats(entries: list[Any]) -> tuple[list[Any], int]:
    """`entries` without the objects equal to an earlier one (keys and values: a duplicated
    region of the file, read once), and how many went."""
    seen: set[Any] = set()
    kept = []
    for entry in entries:
        if isinstance(entry, dict):
            try:
                key: Any = tuple(sorted(entry.items()))
                hash(key)
            except TypeError:  # a list or an object among the values
                key = json.dumps(entry, sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
        kept.append(entry)
    return kept, len(entries) - len(kept)


def _byte(text: str, pos: int) -> int:
    """The byte offset of character `pos` (the text was decoded from UTF-8)."""
    return len(text[:pos].encode("utf-8", errors="replace")) if not text[:pos].isascii() else pos


__all__ = ["ListSalvage", "drop_repeats", "salvage_list"]
