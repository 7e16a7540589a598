"""The same-step comparison engine: every baseline sliced at the student's current step.

The student is the run still training (or the one the user names). Its current x `S` is the latest
x it logged; every baseline is read at the student's latest x *for that metric* (S itself unless the
metric is logged less often) — never at its own end. Baselines without a point there use the
nearest logged point or a straight line between the two around it (`align`), and every cell says
which and the step actually used. Seed groups give mean ± σ with N; single runs say single-seed.
Proxy and downstream metrics are kept apart, a downstream metric the student has not logged yet
reads "not yet", and the conclusion never names a winner from proxy metrics alone.

Pure: takes loaded `Arm`s (runs with lazy histories), returns a `CompareResult`; no I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..arms import Arm
from ..directions import GoalRules
from ..roles import GroupRules
from .alignment import align_metrics
from .at_step import read_at
from .axis import _Axis
from .classify import classify
from .goals import decide_goals
from .keys import select_keys
from .names import resolve
from .reading import read_out
from .request import check_request
from .result import CompareResult
from .series import load_series
from .student import pick_student
from .trend import measure_trends


def run_compare(
    arms: Sequence[Arm],
    *,
    metrics: Sequence[str] | None = None,
    maps: Mapping[str, str] | None = None,
    student: int | None = None,
    align: str = "nearest",
    x: str = "step",
    rules: GroupRules | None = None,
    goals: GoalRules | Mapping[str, str] | Sequence[str] | None = None,
    last_k: int = 10,
    curves: bool = False,
    show_all: bool = False,
    at: float | None = None,
) -> CompareResult:
    """Compare arms at the student's current x; see the module docstring for the rules.

    `at` reads the student as it stood at that x (≤ its current x; `at_step`).
    Each phase takes what the ones before it found; its module's docstring says what it decides.
    """
    req = check_request(arms, align, last_k, rules, goals)
    axis = _Axis(x)
    keys = select_keys(req, metrics, maps, axis)  # which keys to load
    names = resolve(req, keys, maps, student)  # the names they are compared under
    roles = classify(req, keys, names)  # proxy, downstream or diagnostic: the candidates
    loaded = load_series(req, keys, names, roles, axis)  # every series on the chosen axis
    chosen = pick_student(req, names, roles, loaded, student, keys.asked is None, axis)
    if at is not None:
        chosen = read_at(req, loaded, chosen, at, axis)
    directions = decide_goals(req, names, chosen)  # which way is better, per compared metric
    tables = align_metrics(req, names, roles, loaded, chosen, directions, align, axis, last_k)
    trends = measure_trends(req, chosen, tables, loaded, align, last_k, axis)
    return read_out(req, keys, names, chosen, tables, trends, loaded, axis,
                    align=align, last_k=last_k, curves=curves, show_all=show_all)
