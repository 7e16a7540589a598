"""Phase 2 of a comparison: which keys to load, and how much of each run that reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import UsageError
from ...model import Run
from ..selection import expand, is_glob, natural_sorted
from .axis import _Axis
from .request import Request


@dataclass
class KeyChoice:
    """The names asked for, and what each run logs."""

    declared: list[str]  # the --metric names as given (globs left out)
    asked: list[str] | None  # globs expanded, plus explicitly grouped names; None: by default
    logged: dict[str, list[str]]  # run address → the keys it logs (or the asked ones it logs)
    full: set[str]  # the runs whose whole history reading `logged` loaded
    pushed: set[str]  # the fleet runs whose series answer from the fleet's facts (`_PushedSeries`)


def select_keys(req: Request, metrics: Sequence[str] | None, maps: Mapping[str, str] | None,
                axis: _Axis) -> KeyChoice:
    """The asked names and each run's logged keys: when every asked name is logged verbatim,
    only those keys are loaded; otherwise the run's whole history."""
    runs = req.runs
    declared = [m for m in (metrics or ()) if not is_glob(m)]
    pushed = {r.address for r in runs if pushed_step_series(r, axis.axis)}
    asked = _expand_globs(list(metrics), runs) if metrics else None
    if asked is not None:
        asked += [n for n in req.rules.explicit_names() if n not in asked]
    elif req.rules.explicit_names():
        asked = None  # explicit group names only classify; default selection still applies
    logged: dict[str, list[str]] = {}
    full: set[str] = set()  # the runs whose whole history that loaded
    for run in runs:
        if asked is not None and not maps and not axis.by_key:
            if run.address in pushed:  # the keys from the fleet's facts
                present = set(run.metric_keys()) & set(asked)
            else:
                h = run.history(asked)
                present = set(h["key"].astype(str).unique()) if len(h) else set()
            if present == set(asked):
                logged[run.address] = sorted(present)
                continue
        logged[run.address] = run.metric_keys()
        full.add(run.address)
    return KeyChoice(declared, asked, logged, full, pushed)


def pushed_step_series(run: Run, axis: str) -> bool:
    """True when `run`'s series on `axis` can be `_PushedSeries` (a fleet run, the step axis,
    and facts that account for every point the adapter would load)."""
    ok = getattr(run, "pushed_complete", None)
    return axis == "step" and ok is not None and ok()


def _expand_globs(metrics: list[str], runs: Sequence[Run]) -> list[str]:
    """`--metric` globs (`'val/*'`) replaced by the keys any run logged, in natural order."""
    if not any(is_glob(m) for m in metrics):
        return metrics
    logged = {k for r in runs for k in r.metric_keys()}
    out, unmatched = expand(metrics, logged)
    if unmatched:
        raise UsageError(f"--metric {unmatched[0]} matches no logged key",
                         hint="logged: " + ", ".join(natural_sorted(logged)[:12])
                         + (" …" if len(logged) > 12 else ""))
    return out
