"""The runs `rundiff serve` compares, kept loaded between requests, and the answers built from them.

A compare view of 6 runs × 1M points reads its files once: the next request (another metric, the
slider, the same view again) starts from the loaded runs. Memory stays bounded: the cache is an
LRU capped by the points the runs hold (`Run.loaded_points`); the least recently compared runs
are evicted first, never those of the request being answered. A run the live poll saw grow is
dropped and read again on its next use, and every answer built from it is forgotten with it (each
address has a generation; answers are keyed by their runs' generations).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

DEFAULT_CAP_POINTS = 30_000_000  # ~0.7 GB of float64 step/value/wall columns
ANSWERS = 32  # answers remembered (each a few hundred kB of thinned figures)


@dataclass
class Loaded:
    """What the compare needs of an address: its run, and the runs of its arm (addresses) and how
    that arm was formed (the arm rule's `how`), to group ticked seeds."""

    run: Any
    members: frozenset[str]
    how: str


class RunCache:
    """Loaded runs by address (LRU, capped by points) and answers by (request, generations)."""

    def __init__(self, load: Callable[[str], Loaded], cap_points: int = DEFAULT_CAP_POINTS
                 ) -> None:
        self._load = load
        self.cap_points = cap_points
        self._runs: OrderedDict[str, Loaded] = OrderedDict()
        self._answers: OrderedDict[Hashable, Any] = OrderedDict()
        self._generation: dict[str, int] = {}
        self._lock = threading.RLock()
        self.loads = 0  # how many times a run was read (tests and the bench look)

    def get(self, address: str) -> Loaded:
        """The loaded run of `address` (read now if it is not cached), marked most recent."""
        with self._lock:
            hit = self._runs.get(address)
            if hit is not None:
                self._runs.move_to_end(address)
                return hit
        got = self._load(address)
        with self._lock:
            self.loads += 1
            self._runs[address] = got
            return got

    def generations(self, addresses: Iterable[str]) -> tuple[int, ...]:
        with self._lock:
            return tuple(self._generation.get(a, 0) for a in addresses)

    def answer(self, key: Hashable, build: Callable[[], Any],
               keep: Callable[[Any], bool] = lambda _got: True) -> Any:
        """The answer stored under `key`, else `build()`, stored when `keep(it)` (an error is
        not). The key holds the generations of the runs it is built from (`generations`), so a
        run that grew is never answered from before."""
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        got = build()
        if not keep(got):
            return got
        with self._lock:
            self._answers[key] = got
            while len(self._answers) > ANSWERS:
                self._answers.popitem(last=False)
        return got

    def drop(self, addresses: Iterable[str]) -> None:
        """Forget these runs (their files grew): read again on next use, answers rebuilt."""
        with self._lock:
            for a in addresses:
                self._generation[a] = self._generation.get(a, 0) + 1
                gone = self._runs.pop(a, None)
                if gone is not None:
                    gone.run.release_history()

    def trim(self, keep: Iterable[str] = ()) -> None:
        """Evict the least recently used runs until the points held are under the cap; the runs
        in `keep` (the request being answered) stay even when they alone exceed it."""
        keep = set(keep)
        with self._lock:
            held = self.points()
            for address in list(self._runs):
                if held <= self.cap_points:
                    break
                if address in keep:
                    continue
                gone = self._runs.pop(address)
                held -= gone.run.loaded_points()
                gone.run.release_history()

    def points(self) -> int:
        """The points the cached runs hold in memory."""
        with self._lock:
            return sum(e.run.loaded_points() for e in self._runs.values())

    def __contains__(self, address: str) -> bool:
        with self._lock:
            return address in self._runs

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)
