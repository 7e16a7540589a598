"""The journal adapter's hooks: a run directory of config.yaml + metrics.jsonl + events.jsonl."""

from __future__ import annotations

import os

from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, Claim, ProjectClaim

MARKERS = ("metrics.jsonl", "events.jsonl", "final.json")
NAME = "journal"


def is_run_dir(path: str) -> bool:
    """A journal run directory has metrics.jsonl, events.jsonl or final.json."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, m)) for m in MARKERS)


def find_run_dirs(path: str, depth: int = 2) -> list[str]:
    """Journal run directories at or below `path` (to `depth` levels), sorted."""
    if is_run_dir(path):
        return [path]
    if depth == 0 or not os.path.isdir(path):
        return []
    found: list[str] = []
    try:
        children = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return []
    for entry in children:
        if entry.is_dir() and not entry.name.startswith("."):
            found.extend(find_run_dirs(entry.path, depth - 1))
    return found


@hookimpl
def rundiff_register_adapters(register):
    register(
        AdapterSpec(
            name=NAME,
            schemes=("journal",),
            source="rundiff_adapters.journal.source:JournalSource",
            priority=50,
            summary="journal run directories (config.yaml, metrics.jsonl, events.jsonl, final.json)",
        )
    )


@hookimpl
def rundiff_sniff_path(path):
    if is_run_dir(path):
        present = [m for m in MARKERS if os.path.isfile(os.path.join(path, m))]
        return Claim(NAME, f"run directory with {', '.join(present)}")
    if os.path.isfile(path) and os.path.basename(path) == "metrics.jsonl":
        return Claim(NAME, "a journal metrics.jsonl file", locator=os.path.dirname(path) or ".")
    runs = find_run_dirs(path)
    if runs:
        return Claim(NAME, f"directory holding {len(runs)} journal run(s)")
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    for folder in ("runs", "."):
        root = os.path.join(cwd, folder)
        runs = find_run_dirs(root, depth=3)
        if runs:
            return ProjectClaim(
                NAME, f"{folder}/ holds {len(runs)} journal run(s)", address=f"journal:{root}"
            )
    return None
