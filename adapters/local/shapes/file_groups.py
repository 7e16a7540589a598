"""Runs a folder's file names group, and folders that are one run's stages.

A tool given `--prefix NAME` writes every file of a run as `NAME.<part>` (GenoML 2020:
`test_discrete_geno.best_algorithm.txt`, `test_discrete_geno.tunedModel_CV_Summary.csv`), so one
folder holds several runs told apart by their prefix only. And a tool that writes one run's
stages to folders of their own (GenoML now: `Munge/`, `Train/`, `Tune/`, `Test/` under the
prefix folder) makes several folders one run. Both are decided from names and contents, never
from a tool's name.
"""

from __future__ import annotations

import os

#: A prefix run shares at least this many parts with another prefix (`best_algorithm.txt`, …)
MIN_SHARED_PARTS = 2


def prefix_groups(names: list[str]) -> dict[str, list[str]]:
    """{prefix: its files} when a folder's files are runs named by a prefix: names of the form
    `<prefix>.<part>.<ext>`, two or more prefixes of two or more files each, whose parts recur
    across prefixes (each shares at least MIN_SHARED_PARTS parts with another) — the same files
    written once per run. A file starting with a prefix without its dot
    (`<prefix>_approx_feature_importance.txt`) is that prefix's too (the longest prefix wins);
    a file of no prefix (`test.csv`) is none of them. {} when the names do not say so."""
    parts: dict[str, set[str]] = {}
    for name in names:
        prefix, dot, rest = name.partition(".")
        if dot and prefix and "." in rest:
            parts.setdefault(prefix, set()).add(rest)
    parts = {p: s for p, s in parts.items() if len(s) >= 2}
    runs = [p for p, s in parts.items()
            if any(len(s & t) >= MIN_SHARED_PARTS for q, t in parts.items() if q != p)]
    if len(runs) < 2:
        return {}
    groups: dict[str, list[str]] = {p: [] for p in runs}
    by_length = sorted(runs, key=len, reverse=True)
    for name in names:
        owner = next((p for p in by_length if name.startswith(p)), None)
        if owner is not None:
            groups[owner].append(name)
    return groups


def prefix_run_path(folder: str, prefix: str) -> str:
    """A prefix run's path: its folder and prefix, `*` marking the files it stands for."""
    return os.path.join(folder, prefix + "*")


def is_prefix_run(path: str) -> bool:
    return path.endswith("*")


def stage_folders(children: dict[str, list[str]]) -> bool:
    """Sub-folders ({name: their file names}) that are one run's stages, not runs: two or more,
    no file name held by every one of them (alike runs repeat their results file in each:
    `metrics.csv`, `log.txt`), none with sub-folders of its own (checked by the caller)."""
    if len(children) < 2 or any(not files for files in children.values()):
        return False
    shared = set.intersection(*(set(files) for files in children.values()))
    return not shared
