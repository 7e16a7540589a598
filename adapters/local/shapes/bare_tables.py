"""Header-less tables of one width side by side in a folder: a run each.

A table without a header line is a script's rows printed bare (`[epoch, batch, loss, acc]` per
line, `np.savetxt`'s dump); nothing in it names a run's part. Two or more of the same width in
one folder are the same script's output written again (a car classifier's `result/log.txt`, 40
epochs, and `result/train.log`, a later launch stopped in epoch 3) — as two text logs are two
runs, never one run's `<file>/col1` series side by side. Tables whose first columns are the same
row for row are one run's halves (MIMIC's `train.log` and `eval.log`: a row each per epoch),
tables whose counter starts again are split by launch instead, and tables of different widths, or
one alone, stay files of the folder's run.
"""

from __future__ import annotations

import os

from rundiff_core import LayoutRun

from ..sniff import Sniff, launches, read_columns


def bare_table_runs(table: LayoutRun) -> list[LayoutRun]:
    """The header-less tables of `table` (the folder's run) as runs of their own, taken out of
    it, when there are two or more and all have one width; else []."""
    from ..detecting import DETECTING

    if DETECTING.get():
        return []  # detection reads heads only; the listing reads the tables and splits them
    bare = [(p, s) for p, s in table.sniffs.items() if isinstance(s, Sniff) and s.headerless]
    if len(bare) < 2 or len({len(s.header) for _, s in bare}) != 1 or _aligned(bare) or any(
            launches(p, s) for p, s in bare):
        return []  # tables of appended launches are split by launch (files.py's `_launch_runs`)
    runs = []
    for path, sniff in bare:
        table.files.remove(path)
        table.sniffs.pop(path)
        runs.append(LayoutRun(path, "files", [path], f"{os.path.basename(path)}: one of "
                              f"{len(bare)} header-less tables of {len(sniff.header)} columns "
                              "side by side: a run each", {path: sniff}))
    return runs


def _aligned(bare: list[tuple[str, Sniff]]) -> bool:
    """Some two of the tables have the same first column, row for row: one run's two halves."""
    firsts = []
    for path, sniff in bare:
        cols, _ = read_columns(path, sniff)
        firsts.append(tuple(cols.values[0].tolist()) if cols.values else ())
    return len(set(firsts)) < len(firsts)


__all__ = ["bare_table_runs"]
