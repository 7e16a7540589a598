"""`rundiff report`: the experiment report — overview, results table aligned at one step, key
findings with their evidence, recommendations phrased as next experiments.

Deterministic: the same inputs give the same bytes (no clock, sorted everything)."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RundiffError
from ..model import Run
from ..redact import redact
from .arms import Grouping, arm_config
from .compare import CompareResult
from .directions import GoalRules
from .jsonable import jsonable
from .rank import RankResult, run_rank
from .roles import classify
from .runset import (  # noqa: F401
    Anomaly,
    _declaring,
    choose_step,
    gpu_hours,
    group_anomalies,
    seed_groups,
    value_at,
)
from .selection import families, headline, natural_key

COLUMN_CAP = 3  # metrics per Proxy / Downstream column of the results table
ANOMALY_RUNS = 8  # runs whose anomalies become findings before "and N more"


@dataclass
class ResultRow:
    run: str
    address: str
    step: float
    config_diff: dict[str, Any]  # keys whose value departs from the modal config
    proxy: dict[str, float | None]  # None: the run does not log it
    downstream: dict[str, float | None]
    gpu_hours: float | None
    status: str
    config_absent: list[str] = field(default_factory=list)  # modal keys this run lacks
    steps: dict[str, float] = field(default_factory=dict)  # metric → the step its value is from
    #: the few parameters that tell the run's arm from the others (`Arm.differs`; docs/names.md)
    differs: str = ""


@dataclass
class Finding:
    text: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class ExperimentReport:
    total_runs: int
    date_range: tuple[str | None, str | None]
    step: float
    primary: str
    best: Finding | None
    rows: list[ResultRow]
    proxy_metrics: list[str]
    downstream_metrics: list[str]
    findings: list[Finding]
    recommendations: list[Finding]
    anomalies: list[Anomaly]
    headline_rule: str = ""  # which rule chose `primary` (engines.primary)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"metric", "why"}: no information
    notes: list[str] = field(default_factory=list)  # how runs were grouped; unknown directions
    arms: list[dict[str, Any]] = field(default_factory=list)
    steps: dict[str, float] = field(default_factory=dict)  # metric → the step its column is read at
    #: every note each run carries ({run: notes}), written when listed and while read: the
    #: page shows the runs whose numbers rest on a file read with damage
    run_notes: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _configured(run: Run, grouping: Grouping) -> dict[str, Any]:
    """The run's parameters without seed keys: the arm rule's own (`arms.arm_config`)."""
    return arm_config(run, grouping.rules)


def _modal_config(runs: list[Run], grouping: Grouping) -> dict[str, Any]:
    """Per key, the most common value: rows then show only how a run departs from it."""
    counts: dict[str, Counter[str]] = {}
    values: dict[tuple[str, str], Any] = {}
    for r in runs:
        for k, v in _configured(r, grouping).items():
            rep = repr(v)
            counts.setdefault(k, Counter())[rep] += 1
            values[(k, rep)] = v
    # A key most runs lack is not part of the modal config: the runs that set it show it instead.
    return {k: values[(k, sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])]
            for k, c in counts.items() if sum(c.values()) * 2 > len(runs)}


def _date(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _date_range(runs: list[Run]) -> tuple[str | None, str | None]:
    lo, hi = math.inf, -math.inf
    for r in runs:
        n_wall, first, last = r.wall_span()  # a fleet run answers without loading its history
        if n_wall:
            lo, hi = min(lo, first), max(hi, last)
    return (_date(lo), _date(hi)) if math.isfinite(lo) else (None, None)


def build_report(runs: list[Run], *, metrics: list[str] | None = None,
                 grouping: Grouping | None = None,
                 goal: str | list[str] | GoalRules | None = None,
                 at: float | None = None) -> ExperimentReport:
    """The report of `runs`; `goal` is `--goal` as given, `at` is `--step`."""
    # by name first: the same runs read through another backend (a fleet dataset) keep their order,
    # so ties resolve the same way
    grouping = grouping or Grouping()
    runs = sorted(runs, key=lambda r: (natural_key(r.name), r.address))
    ranking: RankResult = run_rank(runs, metrics=metrics, grouping=grouping, goal=goal, at=at)
    primary = ranking.metrics[0]
    proxy, downstream = _headline_columns(runs, [m.metric for m in ranking.metrics], ranking.skipped)
    step = primary.step
    modal = _modal_config(runs, grouping)
    where = {m: choose_step([r for r in runs if m in r.metric_keys()], m, at)
             for m in proxy + downstream}
    steps = {m: w.step for m, w in where.items()}
    differs = {address: arm.get("differs", "") for arm in ranking.arms for address in arm["addresses"]}
    rows = []
    for r in runs:
        flat = _configured(r, grouping)
        cdiff = {k: redact(flat[k], k) for k in sorted(flat) if k not in modal or flat[k] != modal[k]}
        absent = sorted(k for k in modal if k not in flat) if flat else []
        values: dict[str, dict[str, float | None]] = {"proxy": {}, "downstream": {}}
        used: dict[str, float] = {}
        for group, names in (("proxy", proxy), ("downstream", downstream)):
            for m in names:
                if m not in r.metric_keys() or r.address in where[m].not_reached:
                    values[group][m] = None  # not logged, or stopped before the column's step
                    if m in r.metric_keys():
                        used[m] = where[m].not_reached[r.address]
                    continue
                pt = value_at(r, m, steps[m])
                values[group][m] = pt.value
                used[m] = pt.step_used
        rows.append(ResultRow(
            run=r.name, address=r.address, step=step, config_diff=cdiff,
            proxy=values["proxy"], downstream=values["downstream"],
            gpu_hours=gpu_hours(r).gpu_hours, status=r.status, config_absent=absent, steps=used,
            differs=differs.get(r.address, ""),
        ))
    best = None
    if primary.best:
        s = primary.order[0]
        ev = [f"{p.run} = {p.value:.6g} at step {p.step_used:g}" for p in s.points]
        best = Finding(f"{primary.best}: {primary.metric} {s.mean:.4g} at step {step:g}"
                       + (f" (mean of {s.n} seeds, σ {s.std:.3g})" if s.n >= 2 else " (single seed)"), ev)
    findings, recs = _findings(ranking, runs, proxy, downstream)
    notes = list(ranking.statements[:1]) if ranking.statements and "seed of one arm" in \
        ranking.statements[0] else []
    notes += [m.note for m in ranking.metrics if m.note]
    return ExperimentReport(
        total_runs=len(runs), date_range=_date_range(runs), step=step, primary=primary.metric,
        best=best, rows=rows, proxy_metrics=proxy, downstream_metrics=downstream,
        findings=findings, recommendations=recs, anomalies=ranking.anomalies,
        headline_rule=ranking.headline_rule, skipped=ranking.skipped, notes=notes,
        arms=ranking.arms, steps=steps, run_notes=dict(ranking.notes),
    )


def _findings(ranking: RankResult, runs: list[Run], proxy: list[str], downstream: list[str]) -> tuple[list[Finding], list[Finding]]:
    findings: list[Finding] = []
    recs: list[Finding] = []
    primary = ranking.metrics[0]
    if primary.best and len(primary.order) > 1:
        top, second = primary.order[0], primary.order[1]
        gap = top.mean - second.mean
        ev = [f"{top.label}: {top.mean:.6g} (N={top.n})", f"{second.label}: {second.mean:.6g} (N={second.n})",
              f"both at step {primary.step:g}"]
        if second.label in primary.top_group:
            findings.append(Finding(f"{top.label} and {second.label} are statistically indistinguishable on "
                                    f"{primary.metric} (gap {gap:+.4g})", ev))
            recs.append(Finding(f"Run more seeds of {top.label} and {second.label}",
                                ["the top groups cannot be told apart with the seeds available"]))
        elif second.label in primary.untestable:
            findings.append(Finding(f"{top.label} leads on {primary.metric} by {gap:+.4g} — not testable: "
                                    "a single seed on one side, so not distinguishable from trial variance",
                                    ev))
            recs.append(Finding(f"Rerun {top.label} and {second.label} with N>=3 seeds",
                                ["a single-seed group cannot be tested against the best"]))
        elif ranking.single_seed:
            findings.append(Finding(f"{top.label} leads on {primary.metric} by {gap:+.4g} — single-seed, "
                                    "not distinguishable from trial variance", ev))
            recs.append(Finding(f"Rerun {top.label} and {second.label} with N>=3 seeds",
                                ["every group has a single seed: the ranking may be noise"]))
        else:
            findings.append(Finding(f"{top.label} leads on {primary.metric} by {gap:+.4g}, outside the "
                                    "Holm-corrected Welch test's noise band", ev))
    if proxy and downstream and primary.metric in proxy:
        findings.append(Finding("the ranking metric is a proxy; downstream metrics are reported apart",
                                [f"proxy: {', '.join(proxy)}", f"downstream: {', '.join(downstream)}"]))
    if not downstream:
        recs.append(Finding("Evaluate on a downstream task before choosing a configuration",
                            ["only proxy metrics were logged by every run: no winner can be declared from them"]))
    groups = group_anomalies(ranking.anomalies)
    for g in groups[:ANOMALY_RUNS]:
        where = f"{len(g.runs)} runs" if len(g.runs) > 1 else g.runs[0]
        count = f" ×{len(g.items)}" if len(g.runs) == 1 and len(g.items) > 1 else ""
        names = [f"runs: {', '.join(g.runs[:6])}" + (f" and {len(g.runs) - 6} more" if len(g.runs) > 6 else "")
                 ] if len(g.runs) > 1 else []
        findings.append(Finding(f"{where}: {g.kind}{count}",
                                names + [a.detail if len(g.runs) == 1 else f"{a.run}: {a.detail}"
                                         for a in g.items[:3]]
                                + ([f"and {len(g.items) - 3} more"] if len(g.items) > 3 else [])))
        if g.kind in ("crashed", "kill", "nan", "no metrics"):
            who = g.runs[0] if len(g.runs) == 1 else f"the {len(g.runs)} runs with {g.kind}"
            recs.append(Finding(f"Investigate and rerun {who}", [g.items[0].detail]))
    if len(groups) > ANOMALY_RUNS:
        rest = sorted({r for g in groups[ANOMALY_RUNS:] for r in g.runs})
        findings.append(Finding(f"{len(groups) - ANOMALY_RUNS} more anomaly groups",
                                [", ".join(rest[:10]) + (" …" if len(rest) > 10 else "")]))
    still = [r for r in runs if r.status == "running"]
    if still:
        recs.append(Finding("Re-run this report when the running runs finish",
                            [f"{r.name} is still running" for r in still]))
    if primary.best:
        goal = primary.goal
        s = primary.order[0]
        slope = _tail_slope(s.points and [r for r in runs if r.address == s.points[0].address][0], primary.metric)
        if slope is not None and ((goal == "min" and slope < 0) or (goal == "max" and slope > 0)):
            recs.append(Finding(f"Train {primary.best} longer",
                                [f"{primary.metric} still moving at {slope:+.3g} per 1k steps over its last 10% of points"]))
    return findings, _dedupe(recs)


def _tail_slope(run: Run | None, metric: str) -> float | None:
    if run is None:
        return None
    h = run.history([metric])
    if len(h) < 10:
        return None
    k = max(5, len(h) // 10)
    x, y = h["step"].to_numpy()[-k:], h["value"].to_numpy()[-k:]
    ok = np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return None
    slope = float(np.polyfit(x[ok], y[ok], 1)[0]) * 1000
    noise = float(np.std(y[ok]))
    return slope if abs(slope) * np.ptp(x[ok]) / 1000 > noise else None


def report_curves(rep: ExperimentReport, runs: list[Run], grouping: Grouping | None = None,
                  goals: GoalRules | None = None) -> CompareResult | None:
    """The compare result behind the HTML report's plots: every metric most runs log compared
    (one click away in the page), the report's own columns shown and plotted. None: < 2 arms."""
    from .arms import arms_of
    from .compare import run_compare

    # the report's own arms (named among all its runs, as its table is), without the runs
    # that logged nothing to plot
    arms = []
    for arm in arms_of(runs, grouping):
        arm.seeds = [r for r in arm.seeds if r.metric_keys()]
        if arm.seeds:
            arm.primary = arm.primary if any(r is arm.primary for r in arm.seeds) else arm.seeds[0]
            arms.append(arm)
    if len(arms) < 2:
        return None
    columns = list(dict.fromkeys([rep.primary, *rep.downstream_metrics, *rep.proxy_metrics]))
    try:
        result = run_compare(arms, curves=True, goals=goals)
    except RundiffError:  # the default selection found nothing shared: plot the columns alone
        result = None
    if result is None or not set(columns) <= {m.metric for m in result.metrics}:
        result = run_compare(arms, metrics=columns, curves=True, goals=goals)
    result.shown = columns
    return result


def _headline_columns(runs: list[Run], ranked: list[str], skipped: list[dict[str, str]] = ()
                      ) -> tuple[list[str], list[str]]:
    """Proxy and downstream columns: the ranked metrics, then the headline metrics most runs log
    (never one `skipped` for carrying no information)."""
    logging = [set(r.metric_keys()) for r in runs if r.metric_keys()]
    counts = Counter(k for ks in logging for k in ks)
    empty = {s["metric"] for s in skipped}
    common = [k for k, c in counts.items() if (c > len(logging) / 2 or c == len(logging))
              and (k not in empty or k in ranked)]
    out: dict[str, list[str]] = {"proxy": [], "downstream": []}
    for group in out:
        names = [m for m in common if classify(m, runs=_declaring(runs)).group == group]
        fams = families(names)
        members = {n for v in fams.values() for n in v}
        chosen = [m for m in ranked if m in names]
        chosen += [m for m in headline([n for n in names if n not in members], cap=COLUMN_CAP)
                   if m not in chosen]
        out[group] = chosen[:COLUMN_CAP]
    return out["proxy"], out["downstream"]


def _dedupe(items: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in items:
        if f.text not in seen:
            seen.add(f.text)
            out.append(f)
    return out


__all__ = ["ExperimentReport", "build_report", "seed_groups"]
