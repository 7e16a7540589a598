"""The runs `rundiff serve` lists: loaded once from its sources, re-read when their files grow.

Each source is read as `rundiff ls SRC` reads it (the deep folder search included); a source that
fails is kept as its one-line error and hint, shown in the table, never a crash. The table adds
the run-table engine's columns (engines/runtable.py). `poll` is the watch engine's freshness
check: a run that has not ended whose files' newest write moved is read again, and the change is
logged under a new version for the page's event stream.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from rundiff_core.errors import RundiffError

from .. import _bridge
from ..agents.confine import Confinement
from ..agents.tools import _redact

log = logging.getLogger("rundiff.serve")

SCHEMA = "rundiff.serve.runs/1"
ENDED = ("finished", "crashed")
HISTORY = 256  # changes remembered for the event stream


@dataclass
class Entry:
    source: str
    run: Any
    store: str | None
    row: dict[str, Any]
    stamp: float | None = None


@dataclass
class Catalog:
    sources: list[str]
    confinement: Confinement
    stale_after: float = 1800.0
    entries: list[Entry] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    version: int = 0
    changes: list[tuple[int, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._loaded = False
        self._listing: tuple[int, float, dict[str, Any]] | None = None

    # -- loading ---------------------------------------------------------------------------------
    def load(self) -> None:
        """Read every source once (later calls do nothing)."""
        with self._lock:
            if self._loaded:
                return
            for src in self.sources:
                self._load_source(src)
            self._loaded = True

    def _load_source(self, src: str) -> None:
        try:
            self.confinement.check_address(src)
            with _bridge.guarded(self.confinement.check_loaded):
                pairs, headers, _unread = _bridge.listed_runs(src)
                entries = [Entry(src, run, store, _bridge.ls_row(run, store),
                                 _bridge.newest_write(run)) for run, store in pairs]
        except RundiffError as exc:
            self.errors.append(_redact({"source": src, "type": type(exc).__name__,
                                        "message": exc.message, "hint": exc.hint}))
            return
        except Exception as exc:  # a bug, not bad input: one line on the page, the trace on stderr
            log.error("reading %s failed:\n%s", src, _bridge.redact_text(traceback.format_exc()))
            self.errors.append(_redact({"source": src, "type": "InternalError",
                                        "message": f"internal error: {type(exc).__name__}: {exc}",
                                        "hint": "a bug — please report it with the server's "
                                        "stderr"}))
            return
        self.headers += headers
        self.entries += entries

    # -- what the page lists ---------------------------------------------------------------------
    def listing(self, max_age: float = 10.0) -> dict[str, Any]:
        """`ls --format json`'s rows of every run, the run table's columns beside them, and the
        sources that failed; rebuilt when a run changed or the ages are `max_age` seconds old."""
        self.load()
        with self._lock:
            now = time.time()
            if self._listing and self._listing[0] == self.version and now - self._listing[1] < max_age:
                return self._listing[2]
            runs = [e.run for e in self.entries]
            table = _bridge.run_table(runs, now=now, stale_after=self.stale_after) if runs else \
                {"schema": "rundiff.runs/1", "headline": None, "headline_rule": "", "differing": [],
                 "runs": []}
            out = _redact({
                "schema": SCHEMA, "version": self.version, "checked_at": now,
                "found_in": _bridge.found_in([e.run.address for e in self.entries]),
                "headers": list(dict.fromkeys(self.headers)), "errors": self.errors,
                "table": table, "runs": [e.row for e in self.entries],
            })
            self._listing = (self.version, now, out)
            return out

    def addresses(self) -> set[str]:
        self.load()
        return {e.run.address for e in self.entries}

    # -- growth ----------------------------------------------------------------------------------
    def poll(self) -> list[str]:
        """Re-read every run that has not ended whose files were written since it was read; the
        addresses that changed (logged under a new version)."""
        if not self._loaded:
            return []
        changed = []
        with self._lock:
            watched = [e for e in self.entries if e.run.status not in ENDED]
        for entry in watched:
            stamp = _bridge.newest_write(entry.run)
            if stamp is None or stamp == entry.stamp:
                continue
            try:
                with _bridge.guarded(self.confinement.check_loaded):
                    fresh = _bridge.reload_run(entry.run.address)
                if len(fresh) != 1:
                    continue
                row = _bridge.ls_row(fresh[0], entry.store)
            except RundiffError as exc:  # half-written: try again at the next poll
                log.info("re-reading %s: %s", entry.run.address, exc.message)
                continue
            with self._lock:
                entry.run, entry.row, entry.stamp = fresh[0], row, stamp
            changed.append(entry.run.address)
        if changed:
            with self._lock:
                self.version += 1
                self.changes.append((self.version, changed))
                del self.changes[:-HISTORY]
        return changed

    def since(self, version: int) -> tuple[int, list[str]]:
        """(the current version, the addresses changed after `version`)."""
        with self._lock:
            seen = [a for v, addrs in self.changes if v > version for a in addrs]
            return self.version, list(dict.fromkeys(seen))
