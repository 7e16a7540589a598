"""Paired significance for two runs on the same tasks: McNemar, paired CIs, clustered SEs, pass^k.

Two runs of one model on the same tasks disagree on many tasks by sampling noise alone, so a
gained/lost count is not a finding until a paired test says so. Everything here is numpy/math
(scipy is not a dependency); the rules are documented in docs/trajectories.md.

- Pass/fail per task: McNemar's exact test — two-sided binomial test of the discordant pairs
  (gained vs lost) against p = 1/2 — and a paired bootstrap CI of the pass-rate difference.
- Per-task values in [0, 1] (scores, or per-task mean success when both runs have repeats): a
  paired t-test on the per-task differences (Miller 2024, "Adding Error Bars to Evals").
- Tasks carrying a cluster/group: clustered standard errors, and the bootstrap resamples clusters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..engines.stats import _t_two_sided

LEVEL = 0.95
N_BOOT = 10_000
BOOT_CELLS = 2_000_000  # resample cells drawn at once
SEED = 0
ALPHA = 0.05
Z95 = 1.959963984540054
SUCCESS_TOL = 1e-6
EXACT_MAX = 2000  # discordant pairs up to which the McNemar tail is summed in exact rationals


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: 2 · P(X ≤ min) for X ~ Binomial(gained + lost, 1/2), capped at 1.

    Computed in exact rational arithmetic (0 gained / 3 lost gives 0.25 exactly); above
    EXACT_MAX discordant pairs the same sum runs in log space.
    """
    n = gained + lost
    if n == 0:
        return 1.0
    k = min(gained, lost)
    if n > EXACT_MAX:  # big-integer sums grow quadratically; log-space terms are exact to float precision
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
                for i in range(k + 1)]
        top = max(logs)
        return min(1.0, 2 * math.exp(top) * math.fsum(math.exp(x - top) for x in logs))
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def paired_t(diffs: Sequence[float]) -> dict[str, Any]:
    """Paired t-test of mean(diffs) = 0 (two-sided), with the CLT standard error."""
    d = np.asarray(diffs, dtype="float64")
    n = int(d.size)
    if n < 2:
        return {"test": "paired t-test", "n": n, "t": None, "dof": None, "p": None}
    se = float(d.std(ddof=1) / math.sqrt(n))
    mean = float(d.mean())
    if se == 0:
        return {"test": "paired t-test", "n": n, "t": None, "dof": n - 1, "p": 1.0 if mean == 0 else 0.0}
    t = mean / se
    return {"test": "paired t-test", "n": n, "t": t, "dof": n - 1, "p": float(_t_two_sided(abs(t), n - 1))}


def clustered_se(diffs: Sequence[float], clusters: Sequence[str]) -> float:
    """Cluster-robust SE of the mean difference: sqrt(Σ_c (Σ_{i∈c} (d_i − d̄))²) / n (Miller 2024, eq. 4)."""
    d = np.asarray(diffs, dtype="float64")
    n = d.size
    resid = d - d.mean()
    sums: dict[str, float] = {}
    for r, c in zip(resid, clusters, strict=True):
        sums[c] = sums.get(c, 0.0) + float(r)
    return math.sqrt(sum(s * s for s in sums.values())) / n


def paired_bootstrap(diffs: Sequence[float], clusters: Sequence[str] | None = None,
                     n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> tuple[float, float]:
    """Percentile CI of the mean paired difference; resamples tasks (or whole clusters) with a fixed seed."""
    d = np.asarray(diffs, dtype="float64")
    rng = np.random.default_rng(seed)
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    if clusters is None:
        units, sizes = d, np.ones_like(d)
    else:
        names = sorted(set(clusters))
        index = {c: i for i, c in enumerate(names)}
        codes = np.asarray([index[c] for c in clusters])
        units = np.bincount(codes, weights=d, minlength=len(names))
        sizes = np.bincount(codes, minlength=len(names)).astype("float64")
    m = units.size
    rows = max(1, BOOT_CELLS // m)  # bounded memory: 10,000 × 5,000 tasks must not be one 400 MB array
    means = np.empty(n_boot)
    for start in range(0, n_boot, rows):
        pick = rng.integers(0, m, size=(min(rows, n_boot - start), m))
        means[start:start + pick.shape[0]] = units[pick].sum(axis=1) / sizes[pick].sum(axis=1)
    lo, hi = np.quantile(means, [lo_q, hi_q])
    return float(lo), float(hi)


def _values(rec: Any, run_repeats: Sequence[Any], use_means: bool) -> float:
    if not use_means:
        return 1.0 if rec.passed else 0.0
    tries = [rec, *(r for r in run_repeats if r.has_outcome)]
    return sum(1.0 for r in tries if r.passed) / len(tries)


def paired_significance(rows: Sequence[Any], a: Any, b: Any, labels: tuple[str, str] = ("A", "B"),
                        min_n: int = 10) -> dict[str, Any] | None:
    """The paired test block of one outcome matrix (None when it has no task)."""
    shared = [r for r in rows if r.outcome is not None]
    n = len(shared)
    if not n:
        return None
    A, B = labels
    gained = sum(1 for r in shared if r.outcome == "reachable_gap")
    lost = sum(1 for r in shared if r.outcome == "regression")
    rate_a = sum(1 for r in shared if r.a.passed) / n
    rate_b = sum(1 for r in shared if r.b.passed) / n
    both_repeats = (any(a.repeats.get(r.name) for r in shared) and any(b.repeats.get(r.name) for r in shared))
    va = np.asarray([_values(r.a, a.repeats.get(r.name, ()), both_repeats) for r in shared])
    vb = np.asarray([_values(r.b, b.repeats.get(r.name, ()), both_repeats) for r in shared])
    diffs = vb - va
    cl = [getattr(r.a, "cluster", None) or getattr(r.b, "cluster", None) for r in shared]
    clustered = all(c is not None for c in cl) and len(set(cl)) >= 2
    clusters = [str(c) for c in cl] if clustered else None
    lo, hi = paired_bootstrap(diffs, clusters)
    se = float(diffs.std(ddof=1) / math.sqrt(n)) if n > 1 else None
    out: dict[str, Any] = {
        "n": n,
        "gained": gained,
        "lost": lost,
        "discordant": gained + lost,
        "pass_rate_a": rate_a,
        "pass_rate_b": rate_b,
        "mcnemar": {"test": "McNemar exact (two-sided binomial on discordant pairs)",
                    "gained": gained, "lost": lost, "p": mcnemar_exact(gained, lost),
                    "scope": "primary attempts"},
        "values": "per-task mean success over all attempts" if both_repeats else "per-task pass (1) / fail (0)",
        "difference": float(diffs.mean()),
        "ci": {"level": LEVEL, "lo": lo, "hi": hi,
               "method": (f"paired bootstrap over {'clusters' if clustered else 'tasks'} "
                          f"({N_BOOT} resamples, seed {SEED}, percentile)")},
        "se": se,
        "clusters": None,
    }
    if clustered:
        cse = clustered_se(diffs, clusters or [])
        out["clusters"] = {"n": len(set(cl)), "se": cse,
                           "ci_normal": {"lo": float(diffs.mean() - Z95 * cse), "hi": float(diffs.mean() + Z95 * cse)},
                           "note": "clustered SE (Miller 2024); the bootstrap resamples whole clusters"
                           + ("; fewer than 10 clusters: both are rough" if len(set(cl)) < 10 else "")}
    if both_repeats:
        test = paired_t(diffs)
        out["test"] = {**test, "on": "per-task mean success (both runs have repeats)"}
    else:
        out["test"] = {"test": out["mcnemar"]["test"], "p": out["mcnemar"]["p"], "on": "primary pass/fail"}
    scores = _score_test(shared)
    if scores is not None:
        out["scores"] = scores
    out["p"] = out["test"]["p"]
    out["significant"] = out["p"] is not None and out["p"] < ALPHA
    out["text"] = significance_text(out, A, B, min_n)
    return out


def _score_test(shared: Sequence[Any]) -> dict[str, Any] | None:
    """Paired t-test on per-task scores when both runs carry scores in [0, 1] that are not all 0/1."""
    pairs = [(r.a.score, r.b.score) for r in shared if r.a.score is not None and r.b.score is not None]
    if len(pairs) < 2:
        return None
    flat = [v for p in pairs for v in p]
    if not all(-SUCCESS_TOL <= v <= 1 + SUCCESS_TOL for v in flat):
        return None
    if all(abs(v) <= SUCCESS_TOL or abs(v - 1) <= SUCCESS_TOL for v in flat):
        return None  # binary scores: McNemar already covers them
    d = np.asarray([b - a for a, b in pairs], dtype="float64")
    lo, hi = paired_bootstrap(d)
    return {**paired_t(d), "on": "per-task scores in [0, 1]", "mean_a": float(np.mean([p[0] for p in pairs])),
            "mean_b": float(np.mean([p[1] for p in pairs])), "difference": float(d.mean()),
            "ci": {"level": LEVEL, "lo": lo, "hi": hi,
                   "method": f"paired bootstrap over tasks ({N_BOOT} resamples, seed {SEED}, percentile)"}}


def _pp(x: float) -> str:
    v = 100 * x
    return ("+" if v > 0 else "−" if v < 0 else "±") + f"{abs(v):.1f}"


def _pp0(x: float) -> str:
    v = round(100 * x)
    return ("+" if v > 0 else "−" if v < 0 else "") + f"{abs(v):d}"


def _p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return f"{p:.2f}" if p >= 0.01 else f"{p:.2g}"


def significance_text(s: dict[str, Any], A: str, B: str, min_n: int = 10) -> str:
    """The plain-words verdict, e.g. "pass rate +2.0 pp (95% CI −14 … +18); McNemar p = 1.00 …"."""
    ci = s["ci"]
    head = f"pass rate {_pp(s['difference'])} pp ({ci['level']:.0%} CI {_pp0(ci['lo'])} … {_pp0(ci['hi'])})"
    if s["test"]["test"].startswith("McNemar"):
        test = f"McNemar p = {_p(s['p'])} on {s['discordant']} discordant task(s) ({s['gained']} gained, {s['lost']} lost)"
    else:
        test = f"paired t-test on per-task mean success p = {_p(s['p'])} over {s['n']} tasks"
    if s["p"] is None:
        finding = "too few tasks for a paired test"
    elif s["significant"]:
        way = "more" if s["difference"] > 0 else "fewer"
        finding = f"evidence at the 5% level that {B} passes {way} tasks than {A}"
    else:
        finding = f"no evidence that {B} differs from {A}"
    text = f"{head}; {test}: {finding}"
    if s["clusters"]:
        text += f" (clustered SE over {s['clusters']['n']} clusters)"
    if s["n"] < min_n:
        text += f"; N={s['n']} < {min_n}: directional only"
    return text + "."


# -- pass^k / pass@k ------------------------------------------------------------------------------


def pass_hat_k(counts: Sequence[tuple[int, int]]) -> dict[str, Any] | None:
    """pass^k and unbiased pass@k for k = 1..n from per-task (trials, successes).

    n is the most trials any task has; only tasks with all n trials are averaged (τ-bench's rule:
    pass^k = mean over tasks of C(c, k) / C(n, k)); pass@k = mean of 1 − C(n − c, k) / C(n, k).
    """
    if not counts:
        return None
    n = max(t for t, _ in counts)
    full = [c for t, c in counts if t == n]
    if n < 2 or not full:
        return None
    out: dict[str, Any] = {"trials": n, "tasks": len(full), "tasks_excluded": len(counts) - len(full),
                           "pass_hat_k": {}, "pass_at_k": {},
                           "rule": "success = outcome passed (reward within 1e-6 of 1); tasks with all n trials"}
    for k in range(1, n + 1):
        denom = math.comb(n, k)
        out["pass_hat_k"][str(k)] = sum(math.comb(c, k) for c in full) / denom / len(full)
        out["pass_at_k"][str(k)] = sum(1 - math.comb(n - c, k) / denom for c in full) / len(full)
    return out
