"""`rundiff ablate`: each ablation's changed config keys and its effect at the same step.

Deltas are ablation − baseline at the latest step both reached. With seeds on both sides the
uncertainty is the standard error of the difference of means (and a Welch p-value); with one seed
on either side it says "single-seed". Interactions: when single-change ablations A and B and the
combined A+B run exist, the interaction term is Δ(A+B) − Δ(A) − Δ(B); when one is missing, the
report names the run that would be needed.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..model import Run
from .arms import Grouping
from .diff import ConfigChange, config_diff
from .directions import GoalRules, goal_rules
from .jsonable import jsonable
from .runset import Group, arm_members, choose_step, group_stat, seed_groups, shared_metrics
from .stats import welch_p


@dataclass
class Effect:
    metric: str
    goal: str | None  # None: direction unknown — no better/worse
    step: float
    baseline: float
    value: float
    delta: float
    se: float
    p: float
    n_baseline: int
    n_ablation: int
    relative: float
    improves: bool | None
    sources: list[str]
    not_reached: list[str] = field(default_factory=list)  # runs that stopped before `step`


@dataclass
class Ablation:
    label: str
    changes: list[ConfigChange]
    effects: list[Effect]
    impact: float


@dataclass
class Interaction:
    keys: tuple[str, str]
    metric: str
    term: float | None
    detail: str


@dataclass
class AblateResult:
    baseline: str
    baseline_n: int
    metrics: list[str]
    ablations: list[Ablation]
    interactions: list[Interaction] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    arms: list[dict[str, Any]] = field(default_factory=list)  # every arm formed, with members

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _changes(base: Run, other: Run, grouping: Grouping | None = None) -> list[ConfigChange]:
    """What an ablation changed: the config diff without seed and run-identity keys (the arm
    rule's), which differ between any two runs."""
    rules = grouping.rules if grouping else None
    return config_diff(base, other, ignore_seed=True, ignore_identity=True, rules=rules)


def _effect(base: Group, abl: Group, metric: str, goals: GoalRules) -> Effect | None:
    runs = [r for r in base.runs + abl.runs if metric in r.metric_keys()]
    if not any(metric in r.metric_keys() for r in base.runs) or not any(metric in r.metric_keys() for r in abl.runs):
        return None
    goal = goals.direction(metric, runs).goal
    where = choose_step(runs, metric)
    step, late = where.step, where.not_reached

    def reached(g: Group) -> Group:
        return Group(g.label, [r for r in g.runs if r.address not in late], g.how)

    b, a = group_stat(reached(base), metric, step), group_stat(reached(abl), metric, step)
    delta = a.mean - b.mean
    if b.n >= 2 and a.n >= 2:
        se = math.sqrt(b.std**2 / b.n + a.std**2 / a.n)
        p = welch_p(b.values, a.values)
    else:
        se, p = math.nan, math.nan
    rel = delta / abs(b.mean) if b.mean not in (0, math.nan) and math.isfinite(b.mean) and b.mean != 0 else math.nan
    improves = None if not math.isfinite(delta) or delta == 0 or goal is None else \
        (delta < 0 if goal == "min" else delta > 0)
    sources = [f"{p_.address}@{p_.step_used:g}" for p_ in b.points + a.points]
    missing = [f"{r.name} (last at step {late[r.address]:g})" for r in runs if r.address in late]
    return Effect(metric, goal, step, b.mean, a.mean, delta, se, p, b.n, a.n, rel, improves,
                  sources, missing)


def run_ablate(
    baseline_runs: list[Run], runs: list[Run], *, metrics: list[str] | None = None,
    goal: str | list[str] | GoalRules | None = None, grouping: Grouping | None = None,
) -> AblateResult:
    """`baseline_runs` are one arm (the baseline's seeds, without the runs given as ablations:
    `engines.arms.seeds_apart`); `runs` are grouped into arms. When the baseline and every run
    given are seeds of one arm, each run is an ablation of its own (with a note)."""
    goals = goal_rules(goal)
    base_keys = {r.address for r in baseline_runs}
    others = [r for r in runs if r.address not in base_keys]
    statements: list[str] = []
    every = seed_groups([*baseline_runs, *others], grouping=grouping or Grouping(),
                        notes=statements, what="compared with the baseline")
    base_group = next((g for g in every if g.runs[0].address in base_keys), None)
    base = Group(base_group.label if base_group else baseline_runs[0].name, list(baseline_runs),
                 "--baseline and the seeds of its arm" if len(baseline_runs) > 1 else "one run")
    groups = [g for g in every if not any(r.address in base_keys for r in g.runs)]
    if not groups:
        from ..errors import UsageError

        raise UsageError("no ablation runs besides the baseline",
                         hint="give the ablation runs as SRC… and the baseline with --baseline")
    chosen = shared_metrics(base.runs + [r for g in groups for r in g.runs], metrics, goals)
    ablations = []
    for g in groups:
        effects = [e for m in chosen if (e := _effect(base, g, m, goals)) is not None]
        impact = max((abs(e.relative) if math.isfinite(e.relative) else abs(e.delta) for e in effects), default=0.0)
        ablations.append(Ablation(g.label, _changes(base.runs[0], g.runs[0], grouping), effects, impact))
    ablations.sort(key=lambda a: -a.impact if math.isfinite(a.impact) else 0.0)
    result = AblateResult(base.label, base.n, chosen, ablations, statements=statements,
                          arms=arm_members([base, *groups]))
    result.interactions = _interactions(ablations, chosen[0])
    if base.n < 2 or any(len(g.runs) < 2 for g in groups):
        result.statements.append(
            "single-seed arms present: their deltas carry no uncertainty estimate; rerun with N>=3 "
            "seeds before reading small deltas as effects"
        )
    if not any(a.changes for a in ablations):
        result.statements.append("no ablation changes a config key relative to the baseline")
    return result


def _signature(changes: list[ConfigChange]) -> dict[str, str]:
    return {c.key: json.dumps(c.new, sort_keys=True, default=str) for c in changes}


def _interactions(ablations: list[Ablation], metric: str) -> list[Interaction]:
    """A+B vs A and B alone, for every pair of single-key ablations and every two-key one."""
    sigs = [(a, _signature(a.changes)) for a in ablations]
    singles = {next(iter(s.items())): a for a, s in sigs if len(s) == 1}
    doubles = {tuple(sorted(s.items())): a for a, s in sigs if len(s) == 2}
    out: list[Interaction] = []
    seen: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    pairs = [tuple(sorted(p)) for p in itertools.combinations(singles, 2) if p[0][0] != p[1][0]]
    pairs += [k for k in doubles]
    for pair in pairs:
        if pair in seen:
            continue
        seen.add(pair)
        (ka, va), (kb, vb) = pair
        a, b, ab = singles.get((ka, va)), singles.get((kb, vb)), doubles.get(pair)
        keys = (ka, kb)
        missing = [desc for desc, run in ((f"{ka}={va} alone", a), (f"{kb}={vb} alone", b),
                                            (f"{ka}={va} + {kb}={vb} together", ab)) if run is None]
        if missing:
            out.append(Interaction(keys, metric, None, "cannot compute: missing the run with " + " and ".join(missing)))
            continue
        da, db, dab = (_delta(x, metric) for x in (a, b, ab))
        if None in (da, db, dab):
            out.append(Interaction(keys, metric, None, f"cannot compute: {metric} missing in one of the runs"))
            continue
        term = dab - da - db
        out.append(Interaction(keys, metric, term,
                               f"Δ(A+B) {dab:+.4g} − Δ(A) {da:+.4g} − Δ(B) {db:+.4g} = {term:+.4g}"))
    return out


def _delta(a: Ablation, metric: str) -> float | None:
    return next((e.delta for e in a.effects if e.metric == metric and math.isfinite(e.delta)), None)
