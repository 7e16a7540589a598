"""The headline metric of a many-run answer (`rank`, `report`, and what `compare` leads with):
never one that carries no information, and always said which rule chose it.

In order:

1. the metrics the user names (`--metric`, first is the headline);
2. a headline the project or the runs declare: `headline = "…"` in the `[goals]`-sibling table
   `[headline]` of `rundiff.toml`, else the framework's own choice of the metric that picks the
   best model (HF Trainer `metric_for_best_model`, a checkpoint callback's `monitor`, a tuner's or
   a W&B sweep's `metric`), when logged;
3. else the downstream metric most runs log (a known direction first), then the proxy loss.

A metric *carries no information* when every finite value every run logged for it is the same:
Lightning's `hp_metric` placeholder (one point, -1, in every run), a constant series, or a
metric with no finite value at all. Such a metric is never chosen by rules 2–3; it is listed as
skipped, with why.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..model import Run
from .directions import GoalRules, declared_headline
from .selection import main_rank, natural_key

HEADLINE_TABLE = "headline"


def uninformative(runs: Sequence[Run], key: str) -> str | None:
    """Why `key` carries no information across `runs` (None when it does)."""
    return uninformative_keys([(r, key) for r in runs if key in r.metric_keys()])


def uninformative_keys(pairs: Sequence[tuple[Run, str]]) -> str | None:
    """`uninformative` over (run, the key it logs the metric under) pairs. Cheap first: runs
    whose last values differ are answered without reading any history."""
    if not pairs:
        return "logged by no run"
    lasts = {v for v in (r.last_value(k) for r, k in pairs) if math.isfinite(v)}
    if len(lasts) > 1:
        return None
    counts = [r.point_count(k) for r, k in pairs]
    if not lasts and all(c == 1 for c in counts):
        return "its only points are not finite"
    if all(c == 1 for c in counts):
        value = next(iter(lasts))
        where = "in every run" if len(pairs) > 1 else "in the one run"
        return f"one point, {value:g} {where}"
    tails = [r.tail_values(k) for r, k in pairs]  # a fleet run answers from its stored facts
    known = [t for t in tails if t is not None]
    if any(len(np.unique(t[np.isfinite(t)])) > 1 for t in known):
        return None
    if len(known) == len(tails) and all(c <= len(t) for c, t in zip(counts, known, strict=True)):
        values = np.concatenate(known)  # every point is in the tails
    else:
        values = np.concatenate([r.series(k)[1] for r, k in pairs])  # rare: tails all constant
    finite = np.unique(values[np.isfinite(values)])
    if len(finite) == 0:
        return "no finite value"
    if len(finite) == 1:
        where = "in every run" if len(pairs) > 1 else "over the whole run"
        return f"constant {float(finite[0]):g} {where}"
    return None


@dataclass
class Choice:
    """The metrics a command reports (the first is the headline) and why."""

    metrics: list[str]
    rule: str
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"metric", "why"}


def load_project_headline(path: str | None) -> str | None:
    """`[headline] metric = "…"` of a project file, else None."""
    from ..errors import InputError
    from .project import project_table

    if not path:
        return None
    try:
        table = project_table(path, HEADLINE_TABLE)
    except InputError:
        return None  # the [groups]/[goals] readers report an unreadable file
    if not isinstance(table, dict) or not isinstance(table.get("metric", ""), str):
        raise InputError(f"{path}: [headline] takes metric = \"NAME\"")
    return table.get("metric") or None


def choose(runs: Sequence[Run], candidates: Sequence[str], counts: Counter[str], *,
           groups: dict[str, str], goals: GoalRules, limit: int = 4) -> Choice:
    """The headline and up to `limit` metrics among `candidates` (keys most runs log, with
    `groups[key]` their proxy/downstream group), by rules 2–3 of the module docstring. Only the
    metrics that would be chosen are checked for information (a fleet's runs answer each check
    from their facts; a key nobody would pick costs nothing)."""
    skipped: list[dict[str, str]] = []
    verdict: dict[str, bool] = {}

    def informative(k: str) -> bool:
        if k not in verdict:
            why = uninformative(runs, k)
            verdict[k] = why is None
            if why is not None:
                skipped.append({"metric": k, "why": why})
        return verdict[k]

    def first(keys: Sequence[str], n: int) -> list[str]:
        out = []
        for k in keys:
            if len(out) >= n:
                break
            if informative(k):
                out.append(k)
        return out

    known = {k: goals.direction(k, runs).known for k in candidates}

    def order(k: str) -> tuple:
        return (-counts[k], not known[k], main_rank(k), natural_key(k))

    downstream = sorted((k for k in candidates if groups.get(k) == "downstream"), key=order)
    proxy = sorted((k for k in candidates if groups.get(k) == "proxy"), key=order)
    project = load_project_headline(goals.project_file)
    if project and project in candidates and informative(project):
        rest = first([m for m in downstream or proxy if m != project], limit - 1)
        return Choice([project, *rest], f"[headline] metric in {goals.project_file}", skipped)
    declared = declared_headline(runs, [k for k in candidates if verdict.get(k, True)])
    if declared is not None and informative(declared[0]):
        metric, source = declared
        rest = first([m for m in downstream or proxy if m != metric], limit - 1)
        return Choice([metric, *rest], f"declared by the runs: {source}", skipped)
    chosen = first(downstream, limit)
    if chosen:
        return Choice(chosen, "the downstream metric most runs log", skipped)
    losses = [k for k in proxy if goals.direction(k, runs).goal == "min"]
    lead = first(losses, 1)
    rule = ("the proxy loss most runs log (no downstream metric)" if lead
            else "the proxy metric most runs log (no downstream metric, no loss)")
    chosen = lead + first([k for k in proxy if k not in lead], limit - len(lead))
    if chosen:
        return Choice(chosen, rule, skipped)
    return Choice([], "no metric carries information", skipped)


def skipped_text(skipped: Sequence[dict[str, str]], cap: int = 3) -> str:
    """`hp_metric (one point, -1 in every run); …` for one line of text."""
    head = "; ".join(f"{s['metric']} ({s['why']})" for s in skipped[:cap])
    return head + (f" and {len(skipped) - cap} more" if len(skipped) > cap else "")


__all__ = ["Choice", "choose", "load_project_headline", "skipped_text", "uninformative",
           "uninformative_keys"]
