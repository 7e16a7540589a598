"""Deterministic fault injection for the fleet tests: pause an export at a named point.

A test that must kill an export mid-way cannot race a poll against the export finishing. With
`RUNDIFF_FLEET_PAUSE=POINT:N:MARKER` set, the first process (the export itself or a pool worker)
to reach POINT for the N-th time writes "POINT PID" to MARKER and sleeps there, so the test
kills it at a known point. Only one process ever pauses (MARKER is claimed exclusively), so a
retried pool runs through. Unset — always, outside tests — a checkpoint costs one dict lookup.

Points: `points-written` (after a run's points partition is in place). Pool workers get the
setting from the driver through `pool_init` (a forkserver started earlier lacks it).
"""

from __future__ import annotations

import os
import time

ENV = "RUNDIFF_FLEET_PAUSE"
PAUSE_LIMIT = 300.0  # seconds; a pause nobody ends lets the export carry on rather than hang
_reached: dict[str, int] = {}


def checkpoint(point: str) -> None:
    """Pause here when the environment asks for it (see the module doc)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    want, count, marker = spec.split(":", 2)
    if want != point:
        return
    _reached[point] = _reached.get(point, 0) + 1
    if _reached[point] != int(count):
        return
    try:
        fd = os.open(marker + ".claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # another process paused already
    os.close(fd)
    tmp = f"{marker}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{point} {os.getpid()}\n")
    os.replace(tmp, marker)  # the test sees the whole line or nothing
    time.sleep(PAUSE_LIMIT)
