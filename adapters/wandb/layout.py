"""Where W&B keeps runs on disk: `wandb/` folders, run folders, `.wandb` logs (stdlib only).

A run folder is `run-YYYYMMDD_HHMMSS-<id>` (online) or `offline-run-…-<id>` (offline) and holds
`run-<id>.wandb`; online folders also hold `files/` (config.yaml, wandb-summary.json,
wandb-metadata.json). Resuming a run writes another folder with the same id, so folders are
grouped by id. Imported by the plugin hooks, so it must stay cheap: no numpy, no wandb.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from rundiff_core import walk_dirs

if TYPE_CHECKING:
    from .local_runs import LocalRun, Segment

RUN_DIR = re.compile(r"^(?:offline-)?run-(?P<stamp>\d{8}_\d{6})-(?P<id>[^/\\]+)$")
HEADER_PREFIX = b":W&B\xe1\xbe"


def is_log_file(path: str) -> bool:
    """A file that starts with the transaction-log header (`:W&B`, 0xBEE1)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
            if head == HEADER_PREFIX:
                return True
            if not path.endswith(".wandb"):
                return False
            head += fh.read(4090)  # a damaged header: a few bits off, a valid chunk after it
    except OSError:
        return False
    from .framing import damaged_header

    return damaged_header(head)


def logs_in(folder: str) -> list[str]:
    """The `.wandb` logs directly inside a run folder, sorted."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".wandb"))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]


def is_run_dir(path: str) -> bool:
    """A run folder: named like one and holding a log or files/, or holding a `.wandb` log."""
    if not os.path.isdir(path):
        return False
    if RUN_DIR.match(os.path.basename(os.path.normpath(path))):
        return bool(logs_in(path)) or os.path.isdir(os.path.join(path, "files"))
    return any(is_log_file(p) for p in logs_in(path))


def run_id_of(folder: str) -> str:
    """The run id: from the log's name `run-<id>.wandb`, else the folder name's tail.

    The log's name comes first: two sittings started within the same second get folders
    `…-<id>` and `…-<id>-1`, but both logs are `run-<id>.wandb`.
    """
    logs = logs_in(folder)
    if logs:
        return run_id_of_log(logs[0])
    m = RUN_DIR.match(os.path.basename(os.path.normpath(folder)))
    if m:
        return m.group("id")
    return os.path.basename(os.path.normpath(folder))


def run_dirs(path: str, max_entries: int | None = None) -> list[str]:
    """Run folders directly inside `path` (a `wandb/` folder), oldest first, symlinks deduplicated;
    sniffing caps the entries read."""
    listing = next(iter(walk_dirs(path, max_depth=0, max_entries=max_entries, hidden=True)), None)
    seen: set[str] = set()
    found = []
    for entry in listing.entries if listing else []:
        if entry.name.startswith(".") or entry.name == "latest-run":
            continue
        if not RUN_DIR.match(entry.name) or not entry.is_dir():
            continue
        real = os.path.realpath(entry.path)
        if real in seen or not is_run_dir(entry.path):
            continue
        seen.add(real)
        found.append(entry.path)
    return found


def wandb_root(path: str, max_entries: int | None = None) -> str | None:
    """The folder of run folders `path` names: itself, or its `wandb/` child."""
    if not os.path.isdir(path):
        return None
    if run_dirs(path, max_entries):
        return path
    child = os.path.join(path, "wandb")
    if os.path.isdir(child) and run_dirs(child, max_entries):
        return child
    return None


def __getattr__(name: str) -> Any:  # `from .layout import LocalRun` still works
    if name in ("LocalRun", "Segment"):
        from . import local_runs

        return getattr(local_runs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _segment(folder: str) -> list[Segment]:
    from .local_runs import Segment

    logs = logs_in(folder)
    return [Segment(folder, log) for log in logs] or [Segment(folder, None)]


def discover(path: str) -> list[LocalRun]:
    """Every run a local path names: a log file, a run folder (with its resumed siblings), or a
    `wandb/` folder (or a folder holding one). Empty when the path holds no W&B run."""
    from .local_runs import LocalRun, Segment

    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isfile(path):
        if not is_log_file(path) and not path.endswith(".wandb"):
            return []
        folder = os.path.dirname(path)
        rid = run_id_of(folder) if RUN_DIR.match(os.path.basename(folder)) else run_id_of_log(path)
        return [LocalRun(rid, (Segment(folder if is_run_dir(folder) else None, path),),
                         f"wandb:{path}")]
    if is_run_dir(path):
        rid = run_id_of(path)
        parent = os.path.dirname(os.path.normpath(path))
        siblings = [d for d in run_dirs(parent) if run_id_of(d) == rid] if RUN_DIR.match(
            os.path.basename(os.path.normpath(path))) else []
        if os.path.normpath(path) not in [os.path.normpath(s) for s in siblings]:
            siblings = [path]
        segments = tuple(s for d in siblings for s in _segment(d))
        return [LocalRun(rid, segments, f"wandb:{os.path.normpath(siblings[0])}")]
    root = wandb_root(path)
    if root is None:
        return []
    groups: dict[str, list[str]] = {}
    for d in run_dirs(root):
        groups.setdefault(run_id_of(d), []).append(d)
    runs = [
        LocalRun(rid, tuple(s for d in dirs for s in _segment(d)), f"wandb:{os.path.normpath(dirs[0])}")
        for rid, dirs in groups.items()
    ]
    return sorted(runs, key=lambda r: r.address)


def run_id_of_log(path: str) -> str:
    base = os.path.basename(path)
    base = base[: -len(".wandb")] if base.endswith(".wandb") else base
    return base[4:] if base.startswith("run-") else base
