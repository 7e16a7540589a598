"""The runs `layout.discover` finds on disk: a run's sittings (`Segment`) and the run
(`LocalRun`). Apart from `layout`, whose folder rules every sniff uses, because only reading a
path builds these (a frozen dataclass costs start-up to create).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    """One sitting of a run: a folder (may be None for a bare log) and its log (may be None)."""

    folder: str | None
    log: str | None


@dataclass(frozen=True)
class LocalRun:
    """A run found on disk: its id, its segments in time order, and the address naming it."""

    run_id: str
    segments: tuple[Segment, ...]
    address: str

    @property
    def resumed_segments(self) -> int:
        return len(self.segments)
