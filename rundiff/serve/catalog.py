"""The runs `rundiff serve` lists: read in the background from its sources, shown as they come,
re-read when their files grow.

Loading runs in two passes on a thread of its own, so the page paints before a folder of 1,000
runs is read: first each run's metadata, as `rundiff ls --no-points SRC` lists it (the deep
folder search included), in batches; then each run's history, once, for the run table's columns
(last step, freshness, the headline's last value: `runtable.run_state`). Each batch is a new
version, which the page's event stream announces. A source that fails is kept as its one-line
error and hint, shown in the table, never a crash. `poll` is the watch engine's freshness check:
a run that has not ended whose files' newest write moved is read again, and the change is
logged under a new version.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
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
BATCH_SECONDS = 0.4  # a batch of newly read runs is shown at least this often…
BATCH_PER_RUN = 0.001  # …and no more often than 1 ms per listed run (each batch rebuilds the
# listing, which competes with the reading for the interpreter)
REFRESH_SECONDS = 30.0  # a run that has not ended has its row's state read again this often


@dataclass
class Entry:
    source: str
    run: Any
    store: str | None
    row: dict[str, Any]
    stamp: float | None = None
    state: Any = None  # runtable.RunState once its history is read


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
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._listing: tuple[int, float, dict[str, Any]] | None = None
        self.on_change: list[Callable[[list[str]], None]] = []  # called with the runs that grew

    # -- loading ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start reading the sources in the background (later calls do nothing)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load_all, name="rundiff-serve-load",
                                                daemon=True)
                self._thread.start()

    def load(self, timeout: float | None = None) -> bool:
        """Read every source (start it if need be) and wait until done; False on timeout."""
        self.start()
        return self._done.wait(timeout)

    @property
    def loading(self) -> bool:
        return not self._done.is_set()

    def _publish(self, entries: list[Entry], changed: list[str] = ()) -> None:
        with self._lock:
            self.entries += entries
            self.version += 1
            self.changes.append((self.version, list(changed)))
            del self.changes[:-HISTORY]

    def _batch_seconds(self) -> float:
        return max(BATCH_SECONDS, BATCH_PER_RUN * len(self.entries))

    def _load_all(self) -> None:
        try:
            for src in self.sources:
                self._load_source(src)
            self._read_states()
        finally:
            self._done.set()
            self._publish([])

    def _load_source(self, src: str) -> None:
        pending: list[Entry] = []
        shown = time.monotonic()
        headers: list[str] = []
        try:
            self.confinement.check_address(src)
            with _bridge.guarded(self.confinement.check_loaded):
                for run, store in _bridge.iter_listed_runs(src, headers, {}):
                    pending.append(Entry(src, run, store, _bridge.ls_row(run, store, False),
                                         _bridge.newest_write(run)))
                    if time.monotonic() - shown > self._batch_seconds():
                        self._publish(pending)
                        pending, shown = [], time.monotonic()
        except RundiffError as exc:
            self.errors.append(_redact({"source": src, "type": type(exc).__name__,
                                        "message": exc.message, "hint": exc.hint}))
        except Exception as exc:  # a bug, not bad input: one line on the page, the trace on stderr
            log.error("reading %s failed:\n%s", src, _bridge.redact_text(traceback.format_exc()))
            self.errors.append(_redact({"source": src, "type": "InternalError",
                                        "message": f"internal error: {type(exc).__name__}: {exc}",
                                        "hint": "a bug — please report it with the server's "
                                        "stderr"}))
        self.headers += headers
        self._publish(pending)

    def _read_states(self) -> None:
        """The second pass: each run's history read once for its row's columns, in batches."""
        shown = time.monotonic()
        dirty = False
        for entry in list(self.entries):
            if entry.state is None:
                self._read_state(entry)
                dirty = True
            if dirty and time.monotonic() - shown > self._batch_seconds():
                self._publish([])
                shown, dirty = time.monotonic(), False

    def _read_state(self, entry: Entry) -> None:
        try:
            with _bridge.guarded(self.confinement.check_loaded):
                state = _bridge.run_state(entry.run, now=time.time(),
                                          stale_after=self.stale_after)
        except RundiffError as exc:
            entry.row.setdefault("fidelity", []).append(f"history not read: {exc.message}")
            state = False  # tried: not read again until the run grows
        except Exception:  # noqa: BLE001 - a bug in one run's history: its row says so
            log.error("reading %s failed:\n%s", entry.run.address,
                      _bridge.redact_text(traceback.format_exc()))
            state = False
        with self._lock:
            entry.state = state

    # -- what the page lists ---------------------------------------------------------------------
    def listing(self, max_age: float = 10.0) -> dict[str, Any]:
        """`ls --no-points --format json`'s rows of the runs read so far, the run table's columns
        beside them (None where a run's history is not read yet), the sources that failed, and
        whether reading goes on; rebuilt when a run changed or the ages are `max_age` s old."""
        self.start()
        with self._lock:
            now = time.time()
            if self._listing and self._listing[0] == self.version and now - self._listing[1] < max_age:
                return self._listing[2]
            version = self.version
            entries = list(self.entries)
            states = {e.run.address: e.state for e in entries if e.state}
            read = sum(1 for e in entries if e.state is not None)
        runs = [e.run for e in entries]
        table = _bridge.run_table(runs, now=now, stale_after=self.stale_after, states=states)
        out = _redact({
            "schema": SCHEMA, "version": version, "checked_at": now,
            "loading": {"done": not self.loading, "listed": len(entries), "read": read},
            "found_in": _bridge.found_in([e.run.address for e in entries]),
            "headers": list(dict.fromkeys(self.headers)), "errors": list(self.errors),
            "table": table, "runs": [e.row for e in entries],
        })
        with self._lock:
            self._listing = (version, now, out)
        return out

    def first_rows(self, timeout: float) -> None:
        """Wait (up to `timeout` s) until some runs are listed or reading is done: the page's
        first answer has rows to paint."""
        self.start()
        end = time.monotonic() + timeout
        while not self.entries and self.loading and time.monotonic() < end:
            self._done.wait(0.05)

    def addresses(self) -> set[str]:
        with self._lock:
            return {e.run.address for e in self.entries}

    # -- growth ----------------------------------------------------------------------------------
    def poll(self) -> list[str]:
        """Re-read every run that has not ended whose files were written since it was read; the
        addresses that changed (logged under a new version). Rows of runs that have not ended
        have their state (age, marks) read again every REFRESH_SECONDS."""
        if self.loading:
            return []
        changed = []
        with self._lock:
            watched = [e for e in self.entries if e.run.status not in ENDED]
        for entry in watched:
            stamp = _bridge.newest_write(entry.run)
            if stamp is None or stamp == entry.stamp:
                if entry.state and time.time() - entry.state.at > REFRESH_SECONDS:
                    self._read_state(entry)
                continue
            try:
                with _bridge.guarded(self.confinement.check_loaded):
                    fresh = _bridge.reload_run(entry.run.address)
                if len(fresh) != 1:
                    continue
                row = _bridge.ls_row(fresh[0], entry.store, False)
            except RundiffError as exc:  # half-written: try again at the next poll
                log.info("re-reading %s: %s", entry.run.address, exc.message)
                continue
            with self._lock:
                entry.run, entry.row, entry.stamp = fresh[0], row, stamp
            self._read_state(entry)
            changed.append(entry.run.address)
        if changed:
            for hook in self.on_change:
                hook(changed)
            self._publish([], changed)
        return changed

    def since(self, version: int) -> tuple[int, list[str]]:
        """(the current version, the addresses changed after `version`)."""
        with self._lock:
            seen = [a for v, addrs in self.changes if v > version for a in addrs]
            return self.version, list(dict.fromkeys(seen))
