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

from ..model import Run
from ..redact import redact
from .diff import SEED_KEYS
from .jsonable import jsonable
from .rank import RankResult, run_rank
from .roles import classify
from .runset import Anomaly, common_step, gpu_hours, seed_groups, value_at
from .stats import goal_for


@dataclass
class ResultRow:
    run: str
    address: str
    step: float
    config_diff: dict[str, Any]
    proxy: dict[str, float]
    downstream: dict[str, float]
    gpu_hours: float | None
    status: str


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

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _modal_config(runs: list[Run]) -> dict[str, Any]:
    """Per key, the most common value: rows then show only how a run departs from it."""
    counts: dict[str, Counter[str]] = {}
    values: dict[tuple[str, str], Any] = {}
    for r in runs:
        for k, v in r.flat_config.items():
            if SEED_KEYS.search(k):
                continue
            rep = repr(v)
            counts.setdefault(k, Counter())[rep] += 1
            values[(k, rep)] = v
    return {k: values[(k, sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])] for k, c in counts.items()}


def _date(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _date_range(runs: list[Run]) -> tuple[str | None, str | None]:
    lo, hi = math.inf, -math.inf
    for r in runs:
        n_wall, first, last = r.wall_span()  # a fleet run answers without loading its history
        if n_wall:
            lo, hi = min(lo, first), max(hi, last)
    return (_date(lo), _date(hi)) if math.isfinite(lo) else (None, None)


def build_report(runs: list[Run], *, metrics: list[str] | None = None) -> ExperimentReport:
    # by name first: the same runs read through another backend (a fleet dataset) keep their order,
    # so ties resolve the same way
    runs = sorted(runs, key=lambda r: (r.name, r.address))
    ranking: RankResult = run_rank(runs, metrics=metrics)
    primary = ranking.metrics[0]
    shared = sorted(set.intersection(*(set(r.metric_keys()) for r in runs))) if runs else []
    proxy = [m for m in shared if classify(m).group == "proxy"]
    downstream = [m for m in shared if classify(m).group == "downstream"]
    step = primary.step
    modal = _modal_config(runs)
    rows = []
    at = {m: common_step(runs, m) for m in (*proxy, *downstream)}  # once, not once per run
    for r in runs:
        flat = {k: v for k, v in r.flat_config.items() if not SEED_KEYS.search(k)}
        cdiff = {k: redact(flat.get(k), k) for k in sorted(set(flat) | set(modal))
                 if flat.get(k) != modal.get(k)}
        rows.append(ResultRow(
            run=r.name, address=r.address, step=step, config_diff=cdiff,
            proxy={m: value_at(r, m, at[m]).value for m in proxy},
            downstream={m: value_at(r, m, at[m]).value for m in downstream},
            gpu_hours=gpu_hours(r).gpu_hours, status=r.status,
        ))
    best = None
    if primary.best:
        s = primary.order[0]
        ev = [f"{p.run} ({p.address}) = {p.value:.6g} at step {p.step_used:g}" for p in s.points]
        best = Finding(f"{primary.best}: {primary.metric} {s.mean:.4g} at step {step:g}"
                       + (f" (mean of {s.n} seeds, σ {s.std:.3g})" if s.n >= 2 else " (single seed)"), ev)
    findings, recs = _findings(ranking, runs, proxy, downstream)
    return ExperimentReport(
        total_runs=len(runs), date_range=_date_range(runs), step=step, primary=primary.metric,
        best=best, rows=rows, proxy_metrics=proxy, downstream_metrics=downstream,
        findings=findings, recommendations=recs, anomalies=ranking.anomalies,
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
    for a in ranking.anomalies:
        findings.append(Finding(f"{a.run}: {a.kind}", [f"{a.detail} ({a.address})"]))
        if a.kind in ("crashed", "kill", "nan"):
            recs.append(Finding(f"Investigate and rerun {a.run}", [a.detail]))
    still = [r for r in runs if r.status == "running"]
    if still:
        recs.append(Finding("Re-run this report when the running runs finish",
                            [f"{r.name} is still running" for r in still]))
    if primary.best:
        goal = goal_for(primary.metric)
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


def _dedupe(items: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in items:
        if f.text not in seen:
            seen.add(f.text)
            out.append(f)
    return out


__all__ = ["ExperimentReport", "build_report", "seed_groups"]
