"""A header-less table's step: the first column when it counts (`0, 1, 2, …`).

Nothing in a header-less table names its columns, so its x is the row index — unless its first
column counts the rows the way a training script counts epochs: whole numbers from the start
(0, 1, or the stride itself), one stride on per row, and back at the start where a launch was
appended to the file (`f.write(str(epoch) + '\t' + str(loss))` run twice). Such a column is the
step, as an `epoch` column is in a table with a header; anything else (a measured quantity that
happens to grow, ids with gaps) stays a column, x the row index.
"""

from __future__ import annotations

import re

#: an `i/N` counter (old YOLOv5's `3/299`) counts as its `i`
_COUNTER = re.compile(r"^\s*([-+]?\d+(?:\.0*)?)(?:/\d+)?\s*$")


def _whole(cell: str) -> int | None:
    m = _COUNTER.match(cell)
    return int(float(m.group(1))) if m else None


def counts_up(cells: list[str]) -> bool:
    """The cells (a column, in file order) count like a step: whole numbers starting at 0, 1 or
    the stride, each one stride above the last, or back at the first value (a new launch); at
    least one step up, and never below 0."""
    values = [_whole(c) for c in cells]
    if len(values) < 2 or any(v is None for v in values):
        return False
    start = values[0]
    stride = values[1] - start if values[1] != start else None
    if stride is None or stride < 1 or start is None or start not in (0, 1, stride):
        return False
    prev = start
    for v in values[1:]:
        if v != prev + stride and v != start:
            return False
        prev = v
    return True


def is_fraction(cell: str) -> bool:
    """A number that is not whole (`5.1236…`): a measured value, not a count or an id."""
    try:
        v = float(cell)
    except ValueError:
        return False
    return v == v and abs(v) != float("inf") and v != int(v)


__all__ = ["counts_up", "is_fraction"]
