"""`Columns`: a wide table as named float columns, what `sniff`'s readers build from a log.

Apart from `sniff`, whose sniffing every `detect` runs, because only reading a table builds one
(a dataclass costs start-up to create).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Columns:
    """A wide table as named float columns plus the cells that were logged (valid)."""

    names: list[str]
    values: list[np.ndarray]
    valid: list[np.ndarray]
    text: list[str]
    rows: int
    #: the cells of text columns named like a split (SPLIT_NAMES) in delimited tables, None
    #: where empty: `to_long` decides whether they name the rows
    labels: dict[str, list[Any]] = field(default_factory=dict)
    #: unreadable cells skipped in otherwise numeric columns ({column: count})
    bad: dict[str, int] = field(default_factory=dict)
    #: the file line of each row, where the reader kept it (`sniff.row_lines` gives it always)
    lines: np.ndarray | None = None
    #: lines skipped for their number of cells: (line, text, cells)
    ragged: list[tuple[int, str, int]] = field(default_factory=list)
    #: each unreadable cell of `bad`: (row, column, text)
    cells: list[tuple[int, str, str]] = field(default_factory=list)
    #: a last line without its line end, not read as a row (`whole_lines`): (line, text)
    partial: tuple[int, str] | None = None

    def slice(self, start: int, stop: int) -> Columns:
        """Rows start..stop-1: one launch of a file that holds several."""
        return Columns(self.names, [v[start:stop] for v in self.values],
                       [ok[start:stop] for ok in self.valid], self.text, max(0, stop - start),
                       {k: v[start:stop] for k, v in self.labels.items()}, self.bad,
                       None if self.lines is None else self.lines[start:stop])
