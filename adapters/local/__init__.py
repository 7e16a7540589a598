"""The generic local-file adapter's hooks: results/meta JSON, eval CSVs, CSV logs with a step column."""

from __future__ import annotations

import fnmatch
import os

from rundiff_core import SNIFF_ENTRIES, AdapterSpec, Claim, ProjectClaim, hookimpl, walk_dirs

NAME = "local"
PATTERNS = ("*results*.json", "*meta*.json", "eval*.csv", "metrics.csv", "*.metrics.csv")


def is_local_file(path: str) -> bool:
    return os.path.isfile(path) and _matches(os.path.basename(path))


def find_files(root: str, depth: int = 3, max_entries: int | None = None) -> list[str]:
    """Recognised files at or below `root`, sorted, skipping hidden folders; sniffing also caps
    the entries listed."""
    if os.path.isfile(root):
        return [root] if is_local_file(root) else []
    found: list[str] = []
    for folder in walk_dirs(root, max_depth=depth, max_entries=max_entries):
        found.extend(e.path for e in folder.files()
                     if not e.name.startswith(".") and _matches(e.name))
    return sorted(found)


def _matches(name: str) -> bool:
    base = name.lower()
    return any(fnmatch.fnmatch(base, p) for p in PATTERNS)


@hookimpl
def rundiff_register_adapters(register):
    register(
        AdapterSpec(
            name=NAME,
            schemes=("local",),
            source="rundiff_adapters.local.source:LocalSource",
            priority=100,
            summary="generic local files: *results*.json, *meta*.json, eval*.csv, CSV logs",
        )
    )


@hookimpl
def rundiff_sniff_path(path):
    if is_local_file(path):
        return Claim(NAME, f"recognised file name {os.path.basename(path)}")
    if os.path.isdir(path):
        files = find_files(path, depth=2, max_entries=SNIFF_ENTRIES)
        if files:
            shown = ", ".join(os.path.relpath(f, path) for f in files[:3])
            return Claim(NAME, f"folder with {len(files)} result/metric file(s): {shown}")
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    files = find_files(cwd, depth=1, max_entries=SNIFF_ENTRIES)
    if files:
        return ProjectClaim(NAME, f"{len(files)} results/meta/eval file(s) in {cwd}", address=f"local:{cwd}")
    return None
