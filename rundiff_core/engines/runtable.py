"""The run table of `rundiff serve`: per run, what a person scans a list of runs for.

Per run: its name by the naming rule (`naming.run_names`, among every listed run), the last step
it logged, how long ago it last wrote (the watch engine's freshness: its files' newest write, else
its newest wall time) and whether `watch` would mark it stale or likely killed, the headline
metric's current value (the metric `rank` would lead with, `runset.choose_metrics`; its last
logged value, from the full history) and the parameters that differ between the runs (the arm
rule's parameters, `arms.arm_config`, so the grouping rule and the table agree on what a
parameter is). Pure: takes loaded runs, returns JSON-ready data; never writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RundiffError
from ..model import Run
from .arms import arm_config
from .jsonable import jsonable
from .naming import distinguishing_keys, run_names, short_value, value_ends
from .runset import choose_metrics
from .watch import ENDED, check_run, human_age

SCHEMA = "rundiff.runs/1"
MARKS = ("stale", "kill", "crashed", "nan")
"""The watch alerts a row carries as marks (a spike is `compare`'s business, not the table's)."""


@dataclass
class RunColumns:
    """One run's columns beside its `ls` row."""

    address: str
    label: str
    last_step: float | None
    age_seconds: float | None
    age: str | None  # human_age of age_seconds
    alive: bool
    marks: list[dict[str, str]]  # {"kind", "message"}: as `watch` raises them
    headline: float | None  # the headline metric's last logged value
    headline_step: float | None
    params: dict[str, str]  # the differing parameters this run sets, values as labels show them
    read: bool = True  # False: its history is not read yet (the columns above it are None)


@dataclass
class RunTable:
    headline: str | None
    headline_rule: str
    differing: list[str]  # parameters that differ between the runs, first-seen order
    runs: list[RunColumns] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = jsonable(self)
        d["schema"] = SCHEMA
        return d


def _headline(runs: Sequence[Run]) -> tuple[str | None, str]:
    if not runs:
        return None, "no run read yet"
    try:
        choice = choose_metrics(runs, None)
    except RundiffError as exc:
        return None, exc.message
    return (choice.metrics[0], choice.rule) if choice.metrics else (None, choice.rule)


def _last_value(run: Run, key: str) -> tuple[float, float] | None:
    steps, values, _w = run.series(key)
    finite = np.flatnonzero(np.isfinite(values))
    if not len(finite):
        return None
    i = finite[np.argmax(np.where(np.isnan(steps[finite]), -np.inf, steps[finite]))]
    return float(values[i]), float(steps[i])


def _no_spikes(_run: Run, _key: str) -> list[tuple[float, float, float]]:
    return []


@dataclass
class RunState:
    """What a run's row shows from its history, read once: a long-lived caller (`rundiff
    serve`) keeps it until the run's files grow, and moves the age on by the clock."""

    at: float  # when it was read (the `now` of `run_state`)
    last_step: float | None
    age_seconds: float | None
    alive: bool
    marks: list[dict[str, str]]
    lasts: dict[str, tuple[float, float]]  # per metric: (last finite value, its step)


def run_state(run: Run, *, now: float, stale_after: float) -> RunState:
    """The history's part of a run's row (reads its history; see the module docstring)."""
    check, _state = check_run(run, {}, now=now, stale_after=stale_after, spikes=_no_spikes)
    last = check.last_step if check.last_step is not None and math.isfinite(check.last_step) \
        else None
    lasts = {k: got for k in run.metric_keys() if (got := _last_value(run, k)) is not None}
    marks = [{"kind": a.kind, "message": a.message} for a in check.alerts if a.kind in MARKS]
    return RunState(now, last, check.age_seconds, check.alive and run.status not in ENDED,
                    marks, lasts)


def run_table(runs: Sequence[Run], *, now: float, stale_after: float,
              states: Mapping[str, RunState] | None = None) -> RunTable:
    """The table's columns for `runs` (see the module docstring). `states`: the runs' states
    already read, by address (a run without one shows its name and parameters only, and is left
    out of the headline's choice); None reads every run's now."""
    if states is None:
        states = {r.address: run_state(r, now=now, stale_after=stale_after) for r in runs}
    labels = run_names(runs)
    headline, rule = _headline([r for r in runs if r.address in states])
    configs = [arm_config(r) for r in runs]
    differing = distinguishing_keys(configs) if len(runs) > 1 else []
    ends = {k: value_ends(c[k] for c in configs if k in c) for k in differing}
    table = RunTable(headline, rule, differing)
    for run, label, config in zip(runs, labels, configs, strict=True):
        params = {k: short_value(config[k], ends[k]) for k in differing if k in config}
        st = states.get(run.address)
        if st is None:
            table.runs.append(RunColumns(run.address, label, None, None, None, False, [], None,
                                         None, params, read=False))
            continue
        age = None if st.age_seconds is None else st.age_seconds + max(0.0, now - st.at)
        value, step = st.lasts.get(headline, (None, None)) if headline else (None, None)
        table.runs.append(RunColumns(
            run.address, label, st.last_step, age, None if age is None else human_age(age),
            st.alive, st.marks, value, step, params))
    return table
