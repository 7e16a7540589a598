"""Phase 6 of a comparison: the student, its current x, and the metrics compared against it.

The student is the run named with --student, else the only run still training, else the one with
the fewest x. Its current x is its latest x on the compared metrics; chosen by default, those are
narrowed to the ones it shares with a baseline (plus downstream ones a baseline logs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import UsageError
from ..metricnames import NameResolution
from ..primary import uninformative_keys
from .axis import _Axis
from .classify import Classified
from .request import Request
from .result import Skipped
from .series import Loaded


@dataclass
class Student:
    """Which arm is the student and where it stands; what is compared against it, and what not."""

    index: int  # the student's position among the arms
    reason: str
    x: float  # its current x: every baseline is read there
    current: list[float]  # each arm's current x on the compared metrics (NaN: none logged)
    metrics: list[str]  # the compared metrics
    not_compared: list[str]
    skipped: list[Skipped]


def pick_student(req: Request, names: NameResolution, roles: Classified, loaded: Loaded,
                 chosen: int | None, by_default: bool, axis: _Axis) -> Student:
    """The student (see the module docstring); the metrics narrowed when they are `by_default`."""
    # each arm's last x per candidate metric: its current x is the latest over the compared ones
    lasts = [{m: s.last_x for m in roles.metrics
              if (s := loaded.series.get((a.primary.address, m))) is not None and s.size}
             for a in req.arms]
    current = [max(last.values(), default=math.nan) for last in lasts]
    si, reason = _pick(req, current, chosen, axis.label())
    out = Student(si, reason, math.nan, current, roles.metrics, list(roles.not_compared),
                  list(roles.skipped))
    if by_default:
        out.metrics = _default_metrics(req, si, roles.metrics, names, roles, out)
        if not out.metrics:
            raise roles.none_left
        kept = set(out.metrics)
        out.current = [max((x for m, x in last.items() if m in kept), default=math.nan)
                       for last in lasts]
    out.x = out.current[si]
    if not math.isfinite(out.x):
        raise UsageError(f"the student {req.labels[si]} has logged none of the compared metrics",
                         hint="choose another student with --student ADDR")
    return out


def _pick(req: Request, current: Sequence[float], chosen: int | None,
          xname: str) -> tuple[int, str]:
    """(the student's position, why it was chosen)."""
    if chosen is not None:
        return chosen, "named with --student"
    finite = [i for i, c in enumerate(current) if math.isfinite(c)]
    running = [i for i in finite if req.running[i]]
    if len(running) == 1:
        return running[0], "the only run still training (status running)"
    pool = running or finite
    if not pool:
        return 0, "the first run given (no run has points)"
    fewest = min(current[i] for i in pool)
    tied = [i for i in pool if current[i] == fewest]
    what = f"fewest {xname}s ({fewest:g})"
    if running:
        why = f"still training with the {what} of {len(running)} running runs"
    else:
        why = f"no run is still training; the {what}"
    if len(tied) > 1:
        why += f"; tie with {', '.join(req.labels[i] for i in tied[1:])} → the first given"
    return tied[0], why


def _default_metrics(req: Request, si: int, candidates: list[str], names: NameResolution,
                     roles: Classified, out: Student) -> list[str]:
    """Metrics the student shares with a baseline, plus downstream ones a baseline logs; the
    others go to `out`'s not-compared list, each with its cause."""
    arms, labels = req.arms, req.labels
    selected = []
    for m in candidates:
        why = uninformative_keys([(r, names.keys[m][r.address]) for a in arms for r in a.seeds
                                  if r.address in names.keys[m]])
        if why is not None:  # Lightning's hp_metric placeholder, a constant: never a row by default
            out.not_compared.append(f"{m} (no information: {why}; name it with --metric)")
            out.skipped.append(Skipped(m, "no information", why))
            continue
        logs = [any(r.address in names.keys[m] for r in a.seeds) for a in arms]
        holders = [labels[i] for i, a in enumerate(arms) if i != si and logs[i]]
        if holders and (logs[si] or roles.decisions[m].group == "downstream"):
            selected.append(m)
        elif holders:
            out.not_compared.append(f"{m} (not logged by the student {labels[si]}; "
                                    f"logged by {', '.join(holders[:3])}; name it with --metric)")
            out.skipped.append(Skipped(m, "not logged by the student", ", ".join(holders[:3])))
        else:
            out.not_compared.append(f"{m} (no baseline logs it)")
            out.skipped.append(Skipped(m, "no baseline logs it", labels[si]))
    return selected
