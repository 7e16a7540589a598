"""The journal adapter's hooks: a run directory of config.yaml + metrics.jsonl + events.jsonl."""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

# Every start imports this module to register the adapter: the walk and the claim classes are
# imported inside the functions that use them.
MARKERS = ("metrics.jsonl", "events.jsonl", "final.json")
NAME = "journal"


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("journal",), priority=50,
    source="rundiff_adapters.journal.source:JournalSource",
    summary="journal run directories (config.yaml, metrics.jsonl, events.jsonl, final.json)",
))


def is_run_dir(path: str) -> bool:
    """A journal run directory has metrics.jsonl, events.jsonl or final.json."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, m)) for m in MARKERS)


def find_run_dirs(path: str, depth: int = 2, max_entries: int | None = None) -> list[str]:
    """Journal run directories at or below `path` (to `depth` levels), sorted; sniffing also
    caps the entries listed."""
    if is_run_dir(path):
        return [path]
    from rundiff_core import walk_dirs

    found: list[str] = []
    for folder in walk_dirs(path, max_depth=depth, max_entries=max_entries):
        if folder.depth and is_run_dir(folder.path):
            found.append(folder.path)
            folder.dirs.clear()  # a run's insides are the reader's business
    return found


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import SNIFF_ENTRIES, Claim

    if is_run_dir(path):
        present = [m for m in MARKERS if os.path.isfile(os.path.join(path, m))]
        return Claim(NAME, f"run directory with {', '.join(present)}")
    if os.path.isfile(path) and os.path.basename(path) == "metrics.jsonl":
        return Claim(NAME, "a journal metrics.jsonl file", locator=os.path.dirname(path) or ".")
    runs = find_run_dirs(path, max_entries=SNIFF_ENTRIES)
    if runs:
        return Claim(NAME, f"directory holding {len(runs)} journal run(s)")
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    from rundiff_core import SNIFF_ENTRIES, ProjectClaim

    for folder in ("runs", "."):
        root = os.path.join(cwd, folder)
        runs = find_run_dirs(root, depth=3, max_entries=SNIFF_ENTRIES)
        if runs:
            return ProjectClaim(
                NAME, f"{folder}/ holds {len(runs)} journal run(s)", address=f"journal:{root}"
            )
    return None
