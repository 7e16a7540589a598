"""The runs-diff engine: config diff, headline metric, seeds, stability and a strict verdict.

Every number carries where it came from (run address and step). The verdict is one of four fixed
templates and never claims more than the seeds support; the wording is statistical, not causal.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import MetricNotFoundError, UsageError
from ..model import Run
from ..redact import redact
from .arms import Arm
from .directions import GoalRules, declared_headline, goal_rules
from .jsonable import jsonable
from .parameters import ArmRules, is_identity_key, is_seed_key, parameters
from .primary import skipped_text, uninformative
from .selection import main_metric, natural_sorted
from .stats import (
    STATISTICS,
    Headline,
    headline,
    pooled_std,
    robust_spikes,
    sample_std,
)

VERDICT_B = "B clearly better (Δ outside 2σ across N>=3 seeds)"
VERDICT_A = "A clearly better (Δ outside 2σ across N>=3 seeds)"
VERDICT_SAME = "indistinguishable within trial variance"
VERDICT_UNKNOWN = "unknown — only one seed per arm; rerun with N>=3 before claiming improvement"
VERDICTS = (VERDICT_B, VERDICT_A, VERDICT_SAME, VERDICT_UNKNOWN)

SAME_LENGTH = 0.8  # a run ending before 80% of the other's last step is a shorter run (rank's REACH)
CONFIG_COLLAPSE_AT = 10  # more changed keys → the count and the top 5 (the report stays ≤ 50 lines)
GRAD_NORM_KEY = re.compile(r"grad(ient)?[_/.-]?norm", re.I)
LR_KEY = re.compile(r"(^|[/._-])(lr\d*|learning[_-]?rate)($|[/._-])", re.I)  # YOLOv5: x/lr0
EVENT_CLASSES = {
    "rollback": {"rollback", "rolled_back", "revert"},
    "kill": {"kill", "killed", "oom", "crash", "crashed", "abort", "aborted", "preempted"},
    "resume": {"resume", "resumed", "restart", "restarted", "requeue"},
}


@dataclass
class ConfigChange:
    key: str
    old: Any
    new: Any
    change: str  # "changed" | "added" | "removed"


def config_diff(a: Run, b: Run, *, ignore_seed: bool = False, ignore_identity: bool = False,
                rules: ArmRules | None = None) -> list[ConfigChange]:
    """Changed dotted keys only, sorted; never the whole config. A changed secret is reported as
    changed, but its values are redacted here, whatever the adapter did, so no renderer can
    print one. `ignore_seed`/`ignore_identity` drop the arm rule's seed and run-identity keys."""
    fa, fb = a.flat_config, b.flat_config
    out = []
    for key in sorted(set(fa) | set(fb)):
        if ignore_seed and is_seed_key(key, rules):
            continue
        if ignore_identity and is_identity_key(key, rules):
            continue
        old, new = redact(fa.get(key), key), redact(fb.get(key), key)
        if key not in fa:
            out.append(ConfigChange(key, None, new, "added"))
        elif key not in fb:
            out.append(ConfigChange(key, old, None, "removed"))
        elif fa[key] != fb[key] and not _both_nan(fa[key], fb[key]):
            out.append(ConfigChange(key, old, new, "changed"))
    return out


def _run_notes(a: Arm, b: Arm) -> list[str]:
    """Every note the arms' runs carry — written when they were listed, and while their histories
    and configs were read (a skipped line, a damaged record), which is why this is asked last:
    a number that a damage changed sits beside the note that says why."""
    out: list[str] = []
    for label, arm in (("A", a), ("B", b)):
        runs = [arm.primary, *(r for r in arm.seeds if r is not arm.primary)]
        for run in runs:
            who = arm.name if run is arm.primary else f"{arm.name}, seed run {run.name}"
            out += [f"{label} ({who}): {note}" for note in run.fidelity]
        out += [f"{label} ({arm.name}): {note}" for note in arm.notes]
    return out


def _both_nan(x: Any, y: Any) -> bool:
    return isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)


@dataclass
class SeedStat:
    run: str
    address: str
    seed: int | None
    value: float
    step: float
    n_points: int


@dataclass
class ArmVariance:
    n: int
    mean: float
    std: float
    samples: list[SeedStat] = field(default_factory=list)


@dataclass
class DiffResult:
    a_name: str
    b_name: str
    a_address: str
    b_address: str
    metric: str | None
    goal: str | None  # None: direction unknown — no best, no better/worse verdict
    goal_source: str  # engines.directions: "--goal", "rundiff.toml", "declared", "vocabulary",
    #                   "no direction" or "unknown"
    statistic: str
    config_changes: list[ConfigChange]
    config_total: int
    config_collapsed: bool
    #: changed values that are no parameters, by kind (arms.NON_PARAMETERS), left out of
    #: `config_changes` unless `--all-keys`
    config_hidden: dict[str, int]
    warnings: list[str]
    headline_a: dict[str, Any] | None
    headline_b: dict[str, Any] | None
    headline_unavailable: str | None
    variance_a: ArmVariance | None
    variance_b: ArmVariance | None
    pooled_sigma: float
    delta: float
    abs_delta: float
    outside_2sigma: bool | None
    stability: dict[str, Any]
    preliminary: bool
    verdict: str
    verdict_note: str | None
    available_metrics: dict[str, list[str]]
    a_label: str = ""
    b_label: str = ""
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    goal_reason: str = ""  # what decided the direction, in words a reader can check
    #: the sides ("A", "B") whose run has no config at all: their config is unknown, not equal
    config_missing: list[str] = field(default_factory=list)
    metric_rule: str = ""  # which rule chose the headline metric
    lengths_differ: str | None = None  # the headline's finals come from different steps: how

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _series(run: Run, metric: str) -> tuple[np.ndarray, np.ndarray]:
    h = run.history([metric])
    return h["step"].to_numpy(), h["value"].to_numpy()


def _headline_dict(run: Run, h: Headline) -> dict[str, Any]:
    d = asdict(h)
    d["run"] = run.name
    d["address"] = run.address
    return d


def verdict_for(
    n_a: int, n_b: int, delta: float, sigma: float, goal: str | None,
    unknown_direction: str | None = None,
) -> tuple[str, bool | None, str | None]:
    """(verdict template, outside-2σ flag, a note stating N when the template alone hides it).
    With no known direction (`goal` None) no side is called better: outside 2σ stays unknown,
    with `unknown_direction` as the note."""
    if n_a < 2 and n_b < 2 or not math.isfinite(sigma):
        note = None if n_a == n_b == 1 else f"N: A={n_a}, B={n_b} — too few seeds to estimate σ"
        return VERDICT_UNKNOWN, None, note
    outside = abs(delta) > 2 * sigma
    if not outside:
        return VERDICT_SAME, False, f"|Δ| within 2σ with N: A={n_a}, B={n_b}"
    if goal is None:
        return VERDICT_UNKNOWN, True, (f"|Δ| is outside 2σ with N: A={n_a}, B={n_b}, but "
                                       + (unknown_direction or "the direction is unknown"))
    if n_a >= 3 and n_b >= 3:
        b_better = delta < 0 if goal == "min" else delta > 0
        return (VERDICT_B if b_better else VERDICT_A), True, None
    return VERDICT_UNKNOWN, True, (
        f"|Δ| is outside 2σ but N: A={n_a}, B={n_b} (need N>=3 per arm for a confident verdict)"
    )


def _find_key(keys: list[str], pattern: re.Pattern[str]) -> str | None:
    hits = [k for k in keys if pattern.search(k)]
    return min(hits, key=len) if hits else None


def _event_counts(run: Run) -> dict[str, int]:
    counts = {c: 0 for c in EVENT_CLASSES}
    for e in run.events:
        for cls, kinds in EVENT_CLASSES.items():
            if e.kind in kinds:
                counts[cls] += 1
    return counts


def _lr_summary(a: Run, b: Run, keys_a: list[str], keys_b: list[str]) -> str:
    ka, kb = _find_key(keys_a, LR_KEY), _find_key(keys_b, LR_KEY)
    if ka is None or kb is None:
        ca = {k: v for k, v in a.flat_config.items() if LR_KEY.search(k)}
        cb = {k: v for k, v in b.flat_config.items() if LR_KEY.search(k)}
        if not ca and not cb:
            return "no lr logged in either run"
        if ca == cb:
            return "not logged as a metric; lr config identical"
        return "not logged as a metric; lr config differs (see config diff)"
    sa, va = _series(a, ka)
    sb, vb = _series(b, kb)
    common = min(len(sa), len(sb))
    if len(sa) == len(sb) and np.array_equal(sa, sb) and np.allclose(va, vb, rtol=1e-9, equal_nan=True):
        return f"identical ({ka}, {len(sa)} points)"
    diff_at = next(
        (i for i in range(common) if sa[i] != sb[i] or not np.isclose(va[i], vb[i], rtol=1e-9)),
        common,
    )
    where = f"step {sa[diff_at]:g}" if diff_at < common else f"after step {sa[common - 1]:g}" if common else "start"
    return (
        f"differs from {where}: A peak {np.nanmax(va):.3g} (step {sa[int(np.nanargmax(va))]:g}), "
        f"B peak {np.nanmax(vb):.3g} (step {sb[int(np.nanargmax(vb))]:g})"
    )


def _stability(a: Arm, b: Arm) -> dict[str, Any]:
    out: dict[str, Any] = {"grad_norm": {}, "events": {}, "flags": []}
    keys = {"A": a.primary.metric_keys(), "B": b.primary.metric_keys()}
    for label, arm in (("A", a), ("B", b)):
        key = _find_key(keys[label], GRAD_NORM_KEY)
        if key is None:
            out["grad_norm"][label] = {"key": None, "spikes": []}
            continue
        s, v = _series(arm.primary, key)
        spikes = robust_spikes(s, v)
        out["grad_norm"][label] = {
            "key": key,
            "points": len(v),
            "spikes": [{"step": st, "value": val, "score": sc} for st, val, sc in spikes],
        }
        out["events"][label] = _event_counts(arm.primary)
    for label, arm in (("A", a), ("B", b)):
        out["events"].setdefault(label, _event_counts(arm.primary))
    out["lr"] = _lr_summary(a.primary, b.primary, keys["A"], keys["B"])
    ea, eb = out["events"]["A"], out["events"]["B"]
    for cls in ("rollback", "kill"):
        if ea[cls] != eb[cls]:
            more = "A" if ea[cls] > eb[cls] else "B"
            out["flags"].append(f"{more} has more {cls} events ({ea[cls]} vs {eb[cls]})")
    if ea["resume"] or eb["resume"]:
        which = " and ".join(x for x, e in (("A", ea), ("B", eb)) if e["resume"])
        out["flags"].append(
            f"{which} resumed: comparison between resumed and clean runs requires extra care"
        )
    return out


def run_diff(
    a: Arm,
    b: Arm,
    *,
    metric: str | None = None,
    goal: str | GoalRules | None = None,
    statistic: str = "last10_mean",
    all_keys: bool = False,
) -> DiffResult:
    """Compare two arms; raises MetricNotFoundError when only one side logs the metric. `goal`
    is `--goal` as given (`min`, `max`, `M=max`…) or GoalRules (engines.directions)."""
    if statistic not in STATISTICS:
        raise UsageError(f"unknown statistic {statistic!r}", hint=f"choose one of {', '.join(STATISTICS)}")
    warnings: list[str] = []  # the engine's; the runs' own notes are added once all is read
    # a run with no config has nothing to compare: never "identical", never every key "added"
    missing = [side for side, arm in (("A", a), ("B", b)) if not arm.primary.flat_config]
    changes = [] if missing else config_diff(a.primary, b.primary)
    hidden: dict[str, int] = {}
    if not all_keys:  # paths, ids, objects, timestamps are no parameters (docs/names.md)
        # a value naming the run (its folder is named after the model it ran) is still shown
        kinds = {k: why for k, why in {**parameters(a.primary)[1], **parameters(b.primary)[1]}.items()
                 if why != "the run itself"}
        for c in changes:
            if c.key in kinds:
                hidden[kinds[c.key]] = hidden.get(kinds[c.key], 0) + 1
        changes = [c for c in changes if c.key not in kinds]
    collapsed = len(changes) > CONFIG_COLLAPSE_AT and not all_keys
    keys_a, keys_b = a.primary.metric_keys(), b.primary.metric_keys()
    available = {"A": keys_a, "B": keys_b}
    if metric is None:  # the main loss both log (`loss` when it is there), as a user would pick
        metric, metric_rule = _default_metric(a, b, keys_a, keys_b, warnings)
    else:
        metric_rule = "named with --metric"
        if metric not in keys_a or metric not in keys_b:
            metric = _equivalent(metric, keys_a, keys_b, warnings)
    direction = goal_rules(goal).direction(metric, [*a.seeds, *b.seeds])
    goal, goal_source = direction.goal, direction.source
    headline_a = headline_b = None
    unavailable: str | None = None
    var_a = var_b = None
    sigma = delta = math.nan
    if not keys_a or not keys_b:
        empty = " and ".join(x.name for x in (a, b) if not x.primary.metric_keys())
        unavailable = f"unavailable — no metrics logged by {empty}"
    elif metric not in keys_a or metric not in keys_b:
        missing = " and ".join(x.name for x, k in ((a, keys_a), (b, keys_b)) if metric not in k)
        raise MetricNotFoundError(
            f"metric '{metric}' is not logged by {missing}",
            hint="available — A: " + ", ".join(natural_sorted(keys_a)[:15])
            + " | B: " + ", ".join(natural_sorted(keys_b)[:15])
            + "; choose one with --metric",
        )
    else:
        ha = headline(*_series(a.primary, metric), goal)
        hb = headline(*_series(b.primary, metric), goal)
        headline_a, headline_b = _headline_dict(a.primary, ha), _headline_dict(b.primary, hb)
        var_a, var_b = _arm_variance(a, metric, goal, statistic), _arm_variance(b, metric, goal, statistic)
        sigma = pooled_std([s.value for s in var_a.samples], [s.value for s in var_b.samples])
        delta = var_b.mean - var_a.mean
    if headline_a is None:
        verdict, outside, note = VERDICT_UNKNOWN, None, "no comparable metric"
    else:
        verdict, outside, note = verdict_for(var_a.n, var_b.n, delta, sigma, goal,
                                             direction.unknown_text())
    lengths = _lengths_differ(a, b, headline_a, headline_b)  # stated beside the verdict, not in it
    preliminary = any(r.status == "running" for r in (a.primary, b.primary))
    if preliminary:
        verdict = f"{verdict} (preliminary)"
    return DiffResult(
        a_name=a.name,
        b_name=b.name,
        a_address=a.primary.address,
        b_address=b.primary.address,
        metric=metric,
        goal=goal,
        goal_source=goal_source,
        statistic=statistic,
        config_changes=changes if not collapsed else _top_changes(changes, 5),
        config_total=len(changes),
        config_collapsed=collapsed,
        config_hidden=hidden,
        config_missing=missing,
        warnings=_run_notes(a, b) + warnings,
        headline_a=headline_a,
        headline_b=headline_b,
        headline_unavailable=unavailable,
        variance_a=var_a,
        variance_b=var_b,
        pooled_sigma=sigma,
        delta=delta,
        abs_delta=abs(delta),
        outside_2sigma=outside,
        stability=_stability(a, b),
        preliminary=preliminary,
        verdict=verdict,
        verdict_note=note,
        available_metrics=available,
        a_label=a.label,
        b_label=b.label,
        arms={side: _arm_info(arm) for side, arm in (("A", a), ("B", b))},
        goal_reason=direction.unknown_text() if goal is None else direction.reason,
        metric_rule=metric_rule,
        lengths_differ=lengths,
    )


def _lengths_differ(a: Arm, b: Arm, ha: dict[str, Any] | None, hb: dict[str, Any] | None) -> str | None:
    """A sentence when one run's headline ends before `SAME_LENGTH` of the other's last step: its
    final, best and last-10% mean are then not comparable numbers (`compare` reads both at the
    shorter run's step)."""
    if ha is None or hb is None:
        return None
    sa, sb = ha.get("final_step"), hb.get("final_step")
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (sa, sb)) or sa == sb:
        return None
    short, long_ = (("A", sa, a), ("B", sb, b)) if sa < sb else (("B", sb, b), ("A", sa, a))
    if short[1] >= SAME_LENGTH * long_[1]:
        return None
    return (f"{short[0]} ends at step {short[1]:g}, {long_[0]} at step {long_[1]:g}: the finals, bests "
            f"and last-10% means come from different points of training; `rundiff compare A B` "
            f"reads both at step {short[1]:g}")


def _default_metric(a: Arm, b: Arm, keys_a: list[str], keys_b: list[str],
                    warnings: list[str]) -> tuple[str, str]:
    """The main metric both runs log that carries information (`engines.primary`), and why."""
    shared = [k for k in keys_a if k in set(keys_b)]
    runs = [a.primary, b.primary]
    declared = declared_headline(runs, shared)  # the framework's own pick of the best model
    if declared is not None and uninformative(runs, declared[0]) is None:
        return declared[0], f"declared by the runs: {declared[1]}"
    skipped = []
    while True:
        metric = main_metric(shared)
        if metric is None:
            break
        why = uninformative(runs, metric)
        if why is None:
            break
        skipped.append({"metric": metric, "why": why})
        shared.remove(metric)
    if skipped:
        warnings.append("not the headline, no information: " + skipped_text(skipped))
    if metric is None:
        return "loss", "no main metric both runs log"
    return metric, "`loss`, else the main loss, accuracy, reward or score both runs log"


def _arm_info(arm: Arm) -> dict[str, Any]:
    """Who is in an arm and which rule put them there (docs/diff.md, Arms)."""
    return {"label": arm.label, "members": arm.members, "members_full": arm.members_full,
            "n": arm.n, "how": arm.how, "runs": [r.address for r in arm.seeds]}


def _equivalent(metric: str, keys_a: list[str], keys_b: list[str], warnings: list[str]) -> str:
    """`metric` as both runs spell it when they log it under one equivalent name (spelling or
    synonym tier of engines.metricnames: `average-episode-return` → `AverageEpRet`), said in a
    warning; else `metric` unchanged (the caller then reports it missing)."""
    from .metricnames import _match

    got = [_match(metric, {k: k for k in keys}) for keys in (keys_a, keys_b)]
    found = {key for key, _tier, ambiguous in got if key is not None and not ambiguous}
    if len(found) != 1 or any(key is None for key, _t, _a in got):
        return metric
    key = found.pop()
    if key != metric:
        tiers = sorted({tier for _k, tier, _a in got if tier != "exact"})
        warnings.append(f"--metric {metric!r} read as {key!r} (same {', '.join(tiers) or 'name'})")
    return key


def _top_changes(changes: list[ConfigChange], k: int) -> list[ConfigChange]:
    """The k changes most likely to matter: changed values before added/removed keys, then by key."""
    order = {"changed": 0, "added": 1, "removed": 2}
    return sorted(changes, key=lambda c: (order[c.change], c.key.count("."), c.key))[:k]


def _arm_variance(arm: Arm, metric: str, goal: str | None, statistic: str) -> ArmVariance:
    samples = []
    for run in arm.seeds:
        if metric not in run.metric_keys():
            continue
        h = headline(*_series(run, metric), goal)
        if h is None:
            continue
        step = {"final": h.final_step, "best": h.best_step, "last10_mean": h.last10_from_step}[statistic]
        samples.append(SeedStat(run.name, run.address, run.seed, h.stat(statistic), step, h.n_points))
    values = [s.value for s in samples]
    finite = [v for v in values if math.isfinite(v)]
    return ArmVariance(
        n=len(finite),
        mean=float(np.mean(finite)) if finite else math.nan,
        std=sample_std(values),
        samples=samples,
    )
