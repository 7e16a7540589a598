"""The one JSONL reader of the trajectory importers: corrupt and torn lines are counted, not raised.

Its own module so that the dispatcher (`formats`) and the harness importers (`evalharness`) both
import it without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rundiff_core import InputError

if TYPE_CHECKING:
    from rundiff_core import TrajectoryRun

FORMAT_HINT = ("trajectory exports are JSON (a list of records, or an object with `records`) or "
               "JSONL, Inspect .eval/.json logs, or τ-bench result files")


def iter_jsonl(path: str, run: TrajectoryRun) -> Iterator[tuple[int, Any]]:
    """(line number, object) per good line; corrupt lines and a torn last line are counted."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    good = bad = 0
    with fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                bad += 1
                if not line.endswith(b"\n"):
                    run.skip("truncated last JSONL line")
                    run.note(f"line {i} is cut short (file still being written?)")
                else:
                    run.skip("corrupt JSONL line")
                continue
            good += 1
            yield i, obj
    if not good and bad:
        raise InputError(f"{path} has no readable JSON line ({bad} corrupt)", hint=FORMAT_HINT)
