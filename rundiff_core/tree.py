"""Every store below a downloaded folder, found as deep as the runs are — bounded by a budget of
folders, directory entries and time, never by a fixed depth.

A bare path is sniffed a few levels down (SNIFF_DEPTH); a repository's log tree often holds its
runs deeper (`data/ppo-cheetah/ppo-cheetah_s0/`, `records/track_1_short/<date>/`), or holds
several stores side by side (`mlruns/` beside an `mlflow.db`, TensorBoard files beside them).
`search_tree` walks the folder breadth first and asks the adapters' sniffers about each folder
(and each database file) it meets; a claimed folder becomes a *store*: its winning adapter lists
its runs. The walk goes on below a store only into sub-folders that hold none of the runs it
listed, so a second store of the same or another tracker deeper down is found too, and a run is
never listed twice. What the search could not cover (budget spent) is said, with where to look.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import RundiffError

if TYPE_CHECKING:
    from .model import RunRef
    from .plugins import Plugins

MAX_FOLDERS = 4000  # folders sniffed at most
MAX_SECONDS = 20.0  # wall time spent at most
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")  # single-file stores, sniffed one by one
_SKIP = {"__pycache__", "node_modules", "site-packages", ".git", ".venv", "venv"}
TRAJECTORY_SUFFIXES = (".json", ".jsonl", ".eval", ".traj")  # files sniffed one by one
LOG_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".txt", ".log", ".out", ".eval")
FILES_SNIFFED = 32  # per folder


@dataclass
class Store:
    """One place a tracker keeps runs: the adapter that reads it, the address to give, its runs."""

    adapter: str
    address: str
    path: str
    reason: str
    refs: list[RunRef] = field(default_factory=list)
    error: str | None = None


@dataclass
class TreeSearch:
    """What the search found, and what it could not cover."""

    root: str
    stores: list[Store] = field(default_factory=list)
    folders: int = 0
    seconds: float = 0.0
    exhausted: bool = False  # the budget ran out before the whole tree was seen
    unvisited: list[str] = field(default_factory=list)  # top-level folders not (fully) seen

    @property
    def n_runs(self) -> int:
        return sum(len(s.refs) for s in self.stores)

    def summary_lines(self) -> list[str]:
        """`18 runs under data/*/… (local)` per store kind, then what was left unseen."""
        out = []
        groups: dict[tuple[str, str], list[Store]] = {}
        for s in self.stores:
            if s.refs:
                groups.setdefault((s.adapter, _pattern(self.root, _where(s))), []).append(s)
        for (adapter, where), stores in groups.items():
            if len(stores) == 1:  # one store: its runs' folder as it is
                rel = os.path.relpath(_where(stores[0]), self.root)
                where = "the top folder" if rel == "." else rel + "/"
            n = sum(len(s.refs) for s in stores)
            kind = "trajectory file(s)" if adapter == "trajectory" else "run(s)"
            line = f"{n} {kind} under {where} ({adapter})"
            if adapter == "trajectory":
                line += " — compare two with `rundiff trajectories A B`"
            out.append(line)
        empty = [s for s in self.stores if not s.refs]
        for s in empty[:3]:
            out.append(f"{os.path.relpath(s.path, self.root)}: {s.reason}, but it "
                       + (f"could not be read ({s.error})" if s.error else "names no runs"))
        if self.exhausted:
            where = ", ".join(self.unvisited[:5]) + (" …" if len(self.unvisited) > 5 else "")
            out.append(f"search budget spent after {self.folders} folders in {self.seconds:.1f} s; "
                       f"not fully searched: {where or 'the rest of the tree'} — name a sub-folder "
                       "or a scheme (scheme:PATH) to look there")
        return out


def _where(store: Store) -> str:
    """The folder a store's runs share (its own path when they name no folder)."""
    paths = _run_paths(store.refs)
    if not paths:
        return store.path
    common = os.path.commonpath(paths)
    return os.path.dirname(common) if os.path.isfile(common) or len(paths) == 1 else common


def _pattern(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)
    if rel == ".":
        return "the top folder"
    parts = rel.split(os.sep)
    return "/".join(parts[:1] + ["*"] * (len(parts) - 1)) + "/…" if len(parts) > 1 else rel + "/"


def _run_paths(refs: list[RunRef]) -> list[str]:
    """File-system paths of listed runs, where their addresses name one."""
    out = []
    for ref in refs:
        loc = ref.address.split(":", 1)[1] if ":" in ref.address else ref.address
        loc = loc.split("#", 1)[0].split("?", 1)[0]
        if os.path.exists(loc):
            out.append(os.path.abspath(loc))
    return out


def search_tree(root: str, plugins: Plugins | None = None, *, max_folders: int = MAX_FOLDERS,
                max_seconds: float = MAX_SECONDS) -> TreeSearch:
    """Every store at or below `root` (see the module docstring); read-only."""
    from .detect import sniff_path
    from .opening import open_registered
    from .plugins import get_plugins

    plugins = plugins or get_plugins()
    root = os.path.abspath(root)
    out = TreeSearch(root)
    started = time.monotonic()
    queue: deque[str] = deque([root])
    covered: set[str] = set()  # run paths already listed: their folders are not searched again
    above: set[str] = set()  # every folder that holds one of them (O(depth) checks, not O(runs))
    seen_stores: set[str] = set()

    def cover(paths: list[str]) -> None:
        for p in paths:
            covered.add(p)
            parent = os.path.dirname(p)
            while parent and parent not in above:
                above.add(parent)
                nxt = os.path.dirname(parent)
                if nxt == parent:
                    break
                parent = nxt

    def inside_run(path: str) -> bool:
        while True:
            if path in covered:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    def holds_run(path: str) -> bool:
        return path in above

    def add_store(path: str) -> bool:
        try:
            best = sniff_path(path, plugins)
        except RundiffError:  # nobody's, or ambiguous: reading it needs the user's scheme
            return False
        locator = best.claim.locator or path
        address = f"{best.spec.schemes[0]}:{locator}"
        if address in seen_stores:
            return True
        seen_stores.add(address)
        store = Store(best.spec.name, address, path, best.claim.reason)
        try:
            listed = list(open_registered(address, plugins).list_runs())
        except RundiffError as exc:
            store.error = exc.message
            listed = []
        known = {r.address for s in out.stores for r in s.refs}
        store.refs = [r for r in listed if r.address not in known]
        exports: list[str] = []
        if store.adapter == "local":  # a folder `local:` read as a table of agent exports
            for r in list(store.refs):
                folder_files = _trajectory_folder(r.address.split(":", 1)[1], plugins)
                if folder_files:
                    store.refs.remove(r)
                    exports += folder_files
        if listed and not store.refs and not exports:
            return True  # a wider view of runs already listed
        if store.refs or not exports:
            out.stores.append(store)
            cover(_run_paths(store.refs))
        for f in exports:
            add_store(f)
        return True

    while queue:
        if out.folders >= max_folders or time.monotonic() - started > max_seconds:
            out.exhausted = True
            out.unvisited = sorted({os.path.relpath(p, root).split(os.sep)[0] for p in queue})
            break
        folder = queue.popleft()
        out.folders += 1
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        if not inside_run(folder) and not holds_run(folder) and not add_store(folder):
            for f in _trajectory_folder(folder, plugins):  # loose exports nobody claims as a folder
                add_store(f)
        for e in entries:  # single-file stores beside each other (mlflow.db, mlruns.db, …)
            if e.name.endswith(DB_SUFFIXES) and e.is_file() and not inside_run(e.path):
                add_store(e.path)
        for e in entries:
            if not e.is_dir(follow_symlinks=False) or e.name.startswith(".") or e.name in _SKIP:
                continue
            if not inside_run(e.path):  # a listed run's insides are its reader's business
                queue.append(e.path)
    out.seconds = time.monotonic() - started
    return out


def _trajectory_folder(path: str, plugins: Plugins) -> list[str]:
    """The files of a folder when every log file in it is an agent trajectory export or harness
    report (their adapter reads them one by one: `rundiff trajectories`), else []."""
    if not os.path.isdir(path):
        return []
    try:
        files = sorted(e.path for e in os.scandir(path) if e.is_file())
    except OSError:
        return []
    logs = [f for f in files if f.lower().endswith(LOG_SUFFIXES)][:FILES_SNIFFED]
    claimed = [f for f in logs if f.lower().endswith(TRAJECTORY_SUFFIXES)
               and _file_winner(f, plugins) == "trajectory" and _readable(f"traj:{f}", plugins)]
    return claimed if claimed and len(claimed) == len(logs) else []


def _readable(address: str, plugins: Plugins) -> bool:
    """The address lists runs (a claim by its head alone is not enough to hand a folder over:
    an lm-eval results file without its samples is the trajectory adapter's to refuse)."""
    from .opening import open_registered

    try:
        return bool(open_registered(address, plugins).list_runs())
    except RundiffError:
        return False


def _file_winner(path: str, plugins: Plugins) -> str | None:
    from .detect import sniff_path

    try:
        return sniff_path(path, plugins).spec.name
    except RundiffError:
        return None


def as_rows(search: TreeSearch) -> list[dict[str, Any]]:
    """JSON rows: one per store."""
    return [{"adapter": s.adapter, "address": s.address, "path": s.path, "reason": s.reason,
             "runs": [r.address for r in s.refs], "error": s.error} for s in search.stores]
