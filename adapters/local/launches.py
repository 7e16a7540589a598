"""Several launches of one run appended to one log (Detectron2's `metrics.json`, mmengine's
`scalars.json`): a training row whose step goes below the previous training row's starts a launch,
and a later launch supersedes what earlier ones logged from its first step on (as TensorBoard
purges a restarted run's orphaned steps). textsessions.Sessions is the other reading of appended
sessions: a file whose steps start over, counted on in file order."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def is_number(v: Any) -> bool:
    """A JSON value that is a number (true and false are not)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def split_launches(items: Iterable[T], step_of: Callable[[T], float],
                   is_train: Callable[[T], bool]) -> list[list[T]]:
    """Items in file order, cut where a training item's step goes below the previous training
    item's (a launch appended to the same file); other items never start a launch."""
    out: list[list[T]] = []
    prev: float | None = None
    for item in items:
        step, train = step_of(item), is_train(item)
        if not out or (train and prev is not None and step < prev):
            out.append([])
            prev = None
        out[-1].append(item)
        if train:
            prev = step
    return out


@dataclass
class Launch:
    """One launch's points (key, step, value) in file order, its first step on each x axis (what
    it supersedes), and where it is in the file (for the notes)."""

    label: str
    span: str = ""
    points: list[tuple[str, float, float]] = field(default_factory=list)
    starts: dict[str, float] = field(default_factory=dict)


def merge_launches(launches: list[Launch], axis_of: dict[str, str], what: str, name: str = ""
                   ) -> tuple[Any, ...]:
    """The points of several launches of one run: a later launch that starts at step s on an
    axis supersedes every earlier point at step >= s on that axis; within a launch, a step logged
    twice for a key keeps the later value. Returns steps, keys, values, the launch index of each
    point, and notes (`what`: the launches; `name`: the file, for the note on duplicates)."""
    floors: dict[str, float] = {}
    kept: list[list[tuple[str, float, float]]] = [[] for _ in launches]
    dropped = [0] * len(launches)
    duplicates = 0
    for i in range(len(launches) - 1, -1, -1):
        seen: set[tuple[str, float]] = set()
        for key, step, value in reversed(launches[i].points):
            floor = floors.get(axis_of.get(key, ""))
            if floor is not None and step >= floor:
                dropped[i] += 1
            elif (key, step) in seen:
                duplicates += 1
            else:
                seen.add((key, step))
                kept[i].append((key, step, value))
        kept[i].reverse()
        for axis, start in launches[i].starts.items():
            floors[axis] = min(start, floors.get(axis, start))
    points = [(i, *p) for i, mine in enumerate(kept) for p in mine]
    notes = []
    if len(launches) > 1:
        parts = [f"launch {i}: {la.span}" + (f" ({lost} points superseded)" if lost else "")
                 for i, (la, lost) in enumerate(zip(launches, dropped, strict=True), start=1)]
        notes.append(f"{what}: {len(launches)} launches — " + "; ".join(parts) + ". A later "
                     "launch supersedes every earlier point at or after its first step, so each "
                     "key keeps the last launch's point at each step")
    if duplicates:
        notes.append(f"{name + ': ' if name else ''}{duplicates} step(s) logged twice for a key "
                     "within a launch; the later value kept")
    return ([s for _i, _k, s, _v in points], [k for _i, k, _s, _v in points],
            [v for _i, _k, _s, v in points], [i for i, *_ in points], notes)


def launch_events(spans: list[tuple[float, float, str]]) -> list[Any]:
    """RunEvents for launches 2…: a `rollback` when a launch starts at or below the step the one
    before it reached (its points supersede earlier ones), else a `resume`. `spans` holds each
    launch's (first step, last step, where)."""
    from rundiff_core import RunEvent

    return [RunEvent("rollback" if start <= spans[i - 1][1] else "resume", step=start,
                     payload={"launch": i + 1, "from_step": spans[i - 1][1], "where": where})
            for i, (start, _end, where) in enumerate(spans) if i]


def scan_steps(path: str, step_field: bytes, is_train: Callable[[bytes], bool],
               max_bytes: int = 1 << 30) -> list[tuple[float, float, int]]:
    """Launch spans (first step, last step, first line) of a JSON-lines file from a byte scan
    (no JSON parsing: a run's metadata is read before its history)."""
    pattern = re.compile(rb'"' + re.escape(step_field) + rb'"\s*:\s*(-?\d+(?:\.\d+)?)')
    found: list[tuple[int, float, bool]] = []
    try:
        with open(path, "rb") as fh:
            for n, line in enumerate(fh, start=1):
                if fh.tell() > max_bytes:
                    break
                if m := pattern.search(line):
                    found.append((n, float(m.group(1)), is_train(line)))
    except OSError:
        return []
    return [(part[0][1], max(s for _n, s, _t in part), part[0][0])
            for part in split_launches(found, lambda f: f[1], lambda f: f[2])]
