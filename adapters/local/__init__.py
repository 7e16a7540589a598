"""The generic local-file adapter's hooks: results/meta JSON, eval CSVs, CSV logs with a step column."""

from __future__ import annotations

import fnmatch
import os

from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, Claim, ProjectClaim

NAME = "local"
PATTERNS = ("*results*.json", "*meta*.json", "eval*.csv", "metrics.csv", "*.metrics.csv")


def is_local_file(path: str) -> bool:
    base = os.path.basename(path).lower()
    return os.path.isfile(path) and any(fnmatch.fnmatch(base, p) for p in PATTERNS)


def find_files(root: str, depth: int = 3) -> list[str]:
    """Recognised files at or below `root`, sorted, skipping hidden folders."""
    if os.path.isfile(root):
        return [root] if is_local_file(root) else []
    found: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_file() and is_local_file(entry.path):
            found.append(entry.path)
        elif entry.is_dir() and depth > 0:
            found.extend(find_files(entry.path, depth - 1))
    return found


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
        files = find_files(path, depth=2)
        if files:
            shown = ", ".join(os.path.relpath(f, path) for f in files[:3])
            return Claim(NAME, f"folder with {len(files)} result/metric file(s): {shown}")
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    files = [f for f in find_files(cwd, depth=1)]
    if files:
        return ProjectClaim(NAME, f"{len(files)} results/meta/eval file(s) in {cwd}", address=f"local:{cwd}")
    return None
