"""The trajectory diff: validate, align, outcome matrix, divergence, gap classes, yield, verdict.

One `diff_pair(baseline, candidate)` per pair; `diff_runs` runs every candidate against the
baseline. Labels are hypotheses computed from export fields and message structure only — the
report says so, states N on every verdict, and keeps holdout rows out of every training signal.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .distributions import describe
from .model import FINISH_BUCKETS, TaskRecord, TrajectoryRun
from .paired import paired_significance
from .signals import redact_snippet

GAP_CLASSES = ("persistence", "knowledge", "format")
CLASS_LABELS = {
    "persistence": "persistence/recovery",
    "knowledge": "knowledge",
    "format": "format/parsing",
    "unclassified": "unclassified",
}
OUTCOMES = ("both_pass", "both_fail", "reachable_gap", "regression")
OUTCOME_LABELS = {
    "both_pass": "A✓B✓",
    "both_fail": "A✗B✗",
    "reachable_gap": "A✗B✓ reachable gap",
    "regression": "A✓B✗ regression",
}


class TrajectoryMismatchError(InputError):
    """Two runs do not share a schema, task set, harness or tool-access mode."""


@dataclass(frozen=True)
class Thresholds:
    """Every number a verdict depends on, in one place (documented in docs/trajectories.md)."""

    min_n: int = 10  # shared tasks or class count below this → "directional only"
    max_unstable: float = 0.05  # share of unstable tasks above which every verdict is directional
    max_thrash: int = 2  # error→same-tool retries allowed in a clean warm-start trajectory
    min_overlap: float = 0.5  # shared names / the smaller run's task count, below → stop
    dominance: float = 0.5  # a class dominates when it holds more than this share


@dataclass
class TaskRow:
    """Everything the diff knows about one task name for one pair."""

    name: str
    a: TaskRecord | None
    b: TaskRecord | None
    holdout: bool = False
    unmatched: str | None = None  # why the task is out of the join
    outcome: str | None = None
    first_divergence: int | None = None  # 1-based tool-call position; None when identical
    diverged: bool = False
    gap_class: str | None = None
    signals: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    stability: str = "n/a"
    stability_a: str = "n/a"
    stability_b: str = "n/a"
    clean: bool | None = None
    not_clean: list[str] = field(default_factory=list)


@dataclass
class PairDiff:
    baseline: TrajectoryRun
    candidate: TrajectoryRun
    thresholds: Thresholds
    rows: list[TaskRow]
    summary: dict[str, Any]


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort `task-2` before `task-10`."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name) if p)


# -- validation ------------------------------------------------------------------------------------


def validate_pair(a: TrajectoryRun, b: TrajectoryRun, t: Thresholds) -> None:
    """Stop when the runs cannot be compared task by task (different schema, tasks, harness, tools)."""
    for run in (a, b):
        if not run.records:
            raise InputError(f"{run.display} holds no task records",
                             hint="an eval log with 0 samples (cancelled early?) has nothing to diff")
        if not any(r.has_outcome for r in run.records.values()):
            raise InputError(f"{run.display}: none of its {len(run.records)} task(s) has a score or pass flag",
                             hint="score the run first (Inspect: `inspect score LOG`), or export `passed`")
    problems = []
    if a.format != b.format:
        problems.append(f"export formats differ ({a.format} vs {b.format})")
    for attr, what in (("schema", "schema"), ("task_set", "task set"), ("harness", "harness"),
                       ("tool_access", "tool-access mode")):
        va, vb = getattr(a, attr), getattr(b, attr)
        if va is not None and vb is not None and str(va) != str(vb):
            problems.append(f"{what} differs ({va!s} vs {vb!s})")
    if a.tool_names is not None and b.tool_names is not None and a.tool_names != b.tool_names:
        only_a = sorted(a.tool_names - b.tool_names)[:5]
        only_b = sorted(b.tool_names - a.tool_names)[:5]
        problems.append(f"tool schemas differ (only in A: {only_a or '-'}; only in B: {only_b or '-'})")
    names_a, names_b = set(a.records), set(b.records)
    shared = names_a & names_b
    smaller = min(len(names_a), len(names_b))
    if not shared:
        problems.append(f"no task name in common ({len(names_a)} vs {len(names_b)} tasks, e.g. "
                        f"{_examples(names_a)} vs {_examples(names_b)})")
    elif smaller and len(shared) / smaller < t.min_overlap:
        problems.append(f"only {len(shared)} of {smaller} task names are shared "
                        f"(below {t.min_overlap:.0%}): different task sets")
    if problems:
        raise TrajectoryMismatchError(
            f"cannot diff {a.display} against {b.display}: " + "; ".join(problems),
            hint="a trajectory diff is only meaningful on the same frozen task set, harness and "
            "tool-access mode; re-export both runs from the same eval",
        )


def _examples(names: set[str]) -> str:
    return ", ".join(sorted(names, key=natural_key)[:3]) or "none"


# -- per-task signals ------------------------------------------------------------------------------


def first_divergence(a: TaskRecord, b: TaskRecord) -> int | None:
    """1-based position of the first tool call that differs (name + normalised args), or None."""
    ca, cb = a.features.calls, b.features.calls
    for i, (x, y) in enumerate(zip(ca, cb, strict=False)):
        if x.signature != y.signature:
            return i + 1
    if len(ca) != len(cb):
        return min(len(ca), len(cb)) + 1
    return None


def classify_gap(a: TaskRecord, b: TaskRecord) -> tuple[str, list[str], list[str]]:
    """Gap class of one A✗B✓ task, every signal that fired, and evidence lines.

    - format: A made a malformed call (unparseable/non-object arguments, schema-invalid
      arguments, or the harness answered "invalid arguments").
    - knowledge: B successfully used a tool/endpoint A never attempted, at a call position A
      also reached — A was still acting and chose otherwise. Novel tools B reaches only after A
      had stopped are explained by A stopping, not by knowledge.
    - persistence/recovery: no knowledge signal, A stopped (gave up, quit after an error, or
      finished with fewer steps) and B went on (recovered from an error, or took more steps).

    Precedence when several fire: format > knowledge > persistence (a malformed call is the most
    proximate cause; a never-tried endpoint next). All fired signals are kept in tasks.csv.
    """
    fa, fb = a.features, b.features
    fired: list[str] = []
    evidence: list[str] = []
    if fa.invalid_calls:
        fired.append("format")
        evidence.append(f"A made {fa.invalid_calls} malformed call(s): " + "; ".join(fa.invalid_reasons[:3]))
    a_targets, a_calls = fa.targets, len(fa.calls)
    first_use: dict[str, int] = {}
    for i, c in enumerate(fb.calls, start=1):
        if c.result == "ok":
            for target in c.targets:
                if target not in a_targets:
                    first_use.setdefault(target, i)
    known = {t: i for t, i in first_use.items() if i <= a_calls}
    late = sorted(t for t, i in first_use.items() if i > a_calls)
    if known:
        fired.append("knowledge")
        shown = ", ".join(f"{t.split(':', 1)[1]} (call #{i})" for t, i in sorted(known.items())[:4])
        evidence.append(f"B used {len(known)} tool/endpoint(s) A never attempted in its {a_calls} "
                        f"call(s): {shown}")
    a_side = []
    if a.finish == "gave_up":
        a_side.append(f"A gave up ({a.finish_raw})")
    if fa.quit:
        a_side.append(f"A stopped after {fa.quit} error result(s) without retrying")
    if (a.steps is not None and b.steps is not None and a.steps < b.steps
            and a.finish in ("completed", "gave_up")):
        a_side.append(f"A stopped early ({a.steps} vs {b.steps} steps)")
    b_side = []
    if fb.recovered:
        b_side.append(f"B retried and recovered from {fb.recovered} error(s)")
    if a.steps is not None and b.steps is not None and b.steps > a.steps:
        b_side.append(f"B kept going ({b.steps} steps)")
    if a_side and b_side and not known:
        fired.append("persistence")
        reach = ("B reached only tools/endpoints A also tried" if not late else
                 f"B's other tools ({', '.join(t.split(':', 1)[1] for t in late[:3])}) come after A had "
                 f"stopped at call {a_calls}")
        evidence.append(reach + "; " + "; ".join(a_side + b_side))
    primary = next((c for c in ("format", "knowledge", "persistence") if c in fired), "unclassified")
    if primary == "unclassified":
        evidence.append("no signal fired (no malformed A call, no new tool while A was acting, no early "
                        "stop by A)")
    # evidence quotes tool names, endpoints and parse errors: redact before it reaches any output
    return primary, fired, [redact_snippet(e, 400) or "" for e in evidence]


def clean_reasons(b: TaskRecord, t: Thresholds) -> list[str]:
    """Why B's passing trajectory is not a clean warm-start example (empty list = clean)."""
    out = []
    if not b.passed:
        out.append("not passed")
    if b.finish != "completed":
        out.append(f"finish {b.finish}")
    if b.features.invalid_calls:
        out.append("invalid calls")
    if b.features.thrash > t.max_thrash:
        out.append(f"thrash > {t.max_thrash}")
    if b.features.malformed_messages:
        out.append("malformed messages")
    return out


def stability_of(run: TrajectoryRun, name: str) -> str:
    """stable (every repeat matches the primary outcome) / borderline (some) / stochastic (none)."""
    primary = run.records.get(name)
    reps = [r for r in run.repeats.get(name, ()) if r.has_outcome]
    if primary is None or not primary.has_outcome or not reps:
        return "n/a"
    agree = sum(1 for r in reps if r.passed == primary.passed)
    if agree == len(reps):
        return "stable"
    return "stochastic" if agree == 0 else "borderline"


_STAB_ORDER = {"n/a": 0, "stable": 1, "borderline": 2, "stochastic": 3}


def _why_missing(run: TrajectoryRun, name: str) -> str:
    rec = run.records.get(name)
    if rec is not None:
        return rec.status if rec.status != "ok" else "unscored"
    if run.status != "complete":
        return f"missing (run {run.status})"
    if run.expected is not None and name not in run.expected:
        return "missing (not in this run's task list)"
    return "missing"


# -- the pair ---------------------------------------------------------------------------------------


def diff_pair(a: TrajectoryRun, b: TrajectoryRun, t: Thresholds | None = None) -> PairDiff:
    """Everything the report shows for one baseline/candidate pair."""
    t = t or Thresholds()
    validate_pair(a, b, t)
    names = sorted(set(a.records) | set(b.records) | set(a.expected or ()) | set(b.expected or ()),
                   key=natural_key)
    rows: list[TaskRow] = []
    for name in names:
        ra, rb = a.records.get(name), b.records.get(name)
        row = TaskRow(name, ra, rb, holdout=bool((ra and ra.holdout) or (rb and rb.holdout)))
        if ra is None or rb is None or not ra.has_outcome or not rb.has_outcome:
            why = []
            if ra is None or not ra.has_outcome:
                why.append(f"{a.label or 'A'}: {_why_missing(a, name)}")
            if rb is None or not rb.has_outcome:
                why.append(f"{b.label or 'B'}: {_why_missing(b, name)}")
            row.unmatched = "; ".join(why)
            rows.append(row)
            continue
        row.outcome = {(True, True): "both_pass", (False, False): "both_fail",
                       (False, True): "reachable_gap", (True, False): "regression"}[(ra.passed, rb.passed)]
        row.first_divergence = first_divergence(ra, rb)
        row.diverged = row.first_divergence is not None
        row.stability_a, row.stability_b = stability_of(a, name), stability_of(b, name)
        row.stability = max(row.stability_a, row.stability_b, key=_STAB_ORDER.__getitem__)
        if row.outcome == "reachable_gap":
            if row.stability == "stochastic":
                row.gap_class = "excluded"
                row.evidence = ["stochastic across repeats: left out of gap classes and yield"]
            else:
                row.gap_class, row.signals, row.evidence = classify_gap(ra, rb)
                row.not_clean = clean_reasons(rb, t)
                if row.holdout:
                    row.not_clean = ["holdout", *row.not_clean]
                row.clean = not row.not_clean
        rows.append(row)
    return PairDiff(a, b, t, rows, summarize(a, b, rows, t))


def diff_runs(runs: list[TrajectoryRun], baseline: int = 0, t: Thresholds | None = None) -> list[PairDiff]:
    """Each non-baseline run against the baseline, in the order given."""
    base = runs[baseline]
    return [diff_pair(base, run, t) for i, run in enumerate(runs) if i != baseline]


# -- summaries -------------------------------------------------------------------------------------


def _names(rows: list[TaskRow]) -> list[str]:
    return [r.name for r in rows]


def _matrix(rows: list[TaskRow]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in OUTCOMES:
        hit = [r for r in rows if r.outcome == key]
        out[key] = {"count": len(hit), "tasks": _names(hit)}
    out["agreement"] = out["both_pass"]["count"] + out["both_fail"]["count"]
    out["disagreement"] = out["reachable_gap"]["count"] + out["regression"]["count"]
    return out


def _side(rows: list[TaskRow], side: str) -> list[TaskRecord]:
    return [getattr(r, side) for r in rows]


def _recovery(recs: list[TaskRecord]) -> dict[str, Any]:
    tot = Counter()
    for r in recs:
        f = r.features
        tot.update(errors=f.errors, retried=f.retried, quit=f.quit, recovered=f.recovered,
                   thrash=f.thrash, invalid_calls=f.invalid_calls,
                   malformed_messages=f.malformed_messages)
    out: dict[str, Any] = {k: int(tot[k]) for k in ("errors", "retried", "quit", "recovered", "thrash",
                                                     "invalid_calls", "malformed_messages")}
    out["tasks_with_errors"] = sum(1 for r in recs if r.features.errors)
    out["errors_per_task"] = describe([r.features.errors for r in recs])
    return out


def _finish(recs: list[TaskRecord]) -> dict[str, Any]:
    buckets = Counter(r.finish for r in recs)
    raw = Counter((r.finish_raw or "(none)", r.finish) for r in recs)
    return {
        "buckets": {b: int(buckets.get(b, 0)) for b in FINISH_BUCKETS},
        "raw": [{"raw": k[0], "bucket": k[1], "count": int(v)} for k, v in sorted(raw.items())],
    }


def _budget(recs: list[TaskRecord]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens", "cost"):
        vals = [getattr(r, key) for r in recs if getattr(r, key) is not None]
        out[key] = {"total": sum(vals) if vals else None, "tasks_with_field": len(vals)}
    out["steps_counted"] = sum(1 for r in recs if r.steps_source == "counted")
    return out


def summarize(a: TrajectoryRun, b: TrajectoryRun, rows: list[TaskRow], t: Thresholds) -> dict[str, Any]:
    """The JSON-ready summary of one pair (what matrix.json and report.md show)."""
    shared = [r for r in rows if r.outcome is not None]
    train = [r for r in shared if not r.holdout]
    holdout = [r for r in shared if r.holdout]
    unmatched = [r for r in rows if r.outcome is None]
    ra, rb = _side(train, "a"), _side(train, "b")

    divergence = {
        "scope": "shared train/dev tasks (holdout rows excluded)",
        "n": len(train),
        "steps": {"A": describe([r.steps for r in ra]), "B": describe([r.steps for r in rb]),
                  "B_minus_A": describe([y.steps - x.steps for x, y in zip(ra, rb, strict=True)
                                         if x.steps is not None and y.steps is not None])},
        "finish": {"A": _finish(ra), "B": _finish(rb)},
        "distinct_tools": {"A": describe([len(r.features.tools) for r in ra]),
                           "B": describe([len(r.features.tools) for r in rb])},
        "distinct_endpoints": {"A": describe([len(r.features.endpoints) for r in ra]),
                               "B": describe([len(r.features.endpoints) for r in rb])},
        "recovery": {"A": _recovery(ra), "B": _recovery(rb)},
        "first_divergence": {
            "diverged": sum(1 for r in train if r.diverged),
            "identical_call_sequences": sum(1 for r in train if not r.diverged),
            "no_calls_either": sum(1 for r in train if not r.a.features.calls and not r.b.features.calls),
            "position": describe([r.first_divergence for r in train if r.first_divergence is not None]),
        },
        "budget": {"A": _budget(ra), "B": _budget(rb),
                   "note": "token, step and cost figures come from export fields only"},
    }

    gap = [r for r in train if r.outcome == "reachable_gap"]
    excluded = [r for r in gap if r.gap_class == "excluded"]
    classified_pool = [r for r in gap if r.gap_class != "excluded"]
    classes = {c: [r.name for r in classified_pool if r.gap_class == c]
               for c in (*GAP_CLASSES, "unclassified")}
    gap_classes = {
        "scope": "train/dev reachable-gap tasks (A✗B✓); stochastic tasks excluded",
        "n": len(classified_pool),
        "counts": {c: len(v) for c, v in classes.items()},
        "tasks": classes,
        "multi_signal": sum(1 for r in classified_pool if len(r.signals) > 1),
        "signal_counts": {c: sum(1 for r in classified_pool if c in r.signals) for c in GAP_CLASSES},
        "excluded_stochastic": _names(excluded),
        "holdout_reachable_gap": _names([r for r in holdout if r.outcome == "reachable_gap"]),
    }

    clean = [r for r in classified_pool if r.clean]
    not_clean = Counter(reason for r in classified_pool if not r.clean and not r.holdout
                        for reason in r.not_clean)
    warm = {
        "count": len(clean),
        "of_reachable_gap": len(gap),
        "tasks": _names(clean),
        "not_clean_reasons": dict(sorted(not_clean.items())),
        "excluded_holdout": len([r for r in holdout if r.outcome == "reachable_gap"]),
        "excluded_stochastic": len(excluded),
        "rule": f"B passed, finish completed, no invalid calls, no malformed messages, thrash ≤ {t.max_thrash}",
    }

    stab_rows = [r for r in shared if r.stability != "n/a"]
    stab_counts = Counter(r.stability for r in stab_rows)
    unstable = stab_counts["borderline"] + stab_counts["stochastic"]
    rate = unstable / len(stab_rows) if stab_rows else None
    stability = {
        "tasks_with_repeats": len(stab_rows),
        "repeats": {"A": sum(len(v) for v in a.repeats.values()), "B": sum(len(v) for v in b.repeats.values())},
        "counts": {k: int(stab_counts.get(k, 0)) for k in ("stable", "borderline", "stochastic")},
        "unstable_rate": rate,
        "threshold": t.max_unstable,
        "downgrade": bool(rate is not None and rate > t.max_unstable),
        "stochastic_tasks": _names([r for r in stab_rows if r.stability == "stochastic"]),
        "borderline_tasks": _names([r for r in stab_rows if r.stability == "borderline"]),
    }

    holdout_names = sorted({r.name for r in rows if r.holdout}, key=natural_key)
    alignment = {
        "tasks_a": len(a.records),
        "tasks_b": len(b.records),
        "shared": len(shared),
        "shared_train": len(train),
        "shared_holdout": len(holdout),
        "unmatched": [{"task": r.name, "why": r.unmatched} for r in unmatched],
        "only_in_a": _names([r for r in unmatched if r.a is not None and r.b is None]),
        "only_in_b": _names([r for r in unmatched if r.b is not None and r.a is None]),
        "holdout_flagged": holdout_names,
    }
    summary = {
        "baseline": run_info(a),
        "candidate": run_info(b),
        "alignment": alignment,
        "matrix": {"train": _matrix(train), "holdout": _matrix(holdout)},
        "divergence": divergence,
        "gap_classes": gap_classes,
        "warm_start": warm,
        "stability": stability,
        "thresholds": t.__dict__.copy(),
    }
    labels = (a.label or "A", b.label or "B")
    summary["significance"] = {"train": paired_significance(train, a, b, labels, t.min_n),
                               "holdout": paired_significance(holdout, a, b, labels, t.min_n)}
    summary["verdict"] = verdict(summary, t)
    summary["regressions"] = regressions(summary)
    return summary


def run_info(run: TrajectoryRun) -> dict[str, Any]:
    return {
        "label": run.label,
        "path": run.path,
        "selector": run.selector,
        "format": run.format,
        "model": run.model,
        "harness": run.harness,
        "tool_access": run.tool_access,
        "task_set": run.task_set,
        "status": run.status,
        "summary": run.summary(),
        "notes": list(run.notes),
        "skipped": dict(run.skipped),
    }


def verdict(s: dict[str, Any], t: Thresholds) -> dict[str, Any]:
    """RL-shaped / not RL-shaped / mixed, as a hypothesis with N and every reason to doubt it."""
    A, B = s["baseline"]["label"] or "A", s["candidate"]["label"] or "B"
    g = s["gap_classes"]
    n_shared = s["alignment"]["shared_train"]
    counts = g["counts"]
    classified = sum(counts[c] for c in GAP_CLASSES)
    reasons: list[str] = []
    if n_shared < t.min_n:
        reasons.append(f"shared train/dev tasks N={n_shared} < {t.min_n}")
    sig = s.get("significance", {}).get("train")
    if sig and sig["p"] is not None and not sig["significant"] and g["n"]:
        reasons.append(f"the paired test finds no evidence that {B} differs from {A} (p = {sig['p']:.2g})")
    if s["stability"]["downgrade"]:
        reasons.append(f"{s['stability']['unstable_rate']:.1%} of tasks unstable across repeats "
                       f"(> {t.max_unstable:.0%})")
    dominant = None
    if classified:
        top = max(GAP_CLASSES, key=lambda c: (counts[c], -GAP_CLASSES.index(c)))
        if counts[top] / classified > t.dominance:
            dominant = top
    if dominant is None:
        label = "no reachable gap" if not g["n"] else ("unclassified" if not classified else "mixed")
    else:
        label = "RL-shaped" if dominant == "persistence" else "not RL-shaped"
        if counts[dominant] < t.min_n:
            reasons.append(f"class count {counts[dominant]} < {t.min_n}")
    if dominant is None and classified and classified < t.min_n:
        reasons.append(f"classified gap tasks {classified} < {t.min_n}")
    directional = bool(reasons)
    n_text = (f"N = {n_shared} shared train/dev tasks; reachable gap {s['matrix']['train']['reachable_gap']['count']}"
              f" ({classified} classified: " + ", ".join(f"{CLASS_LABELS[c]} {counts[c]}" for c in GAP_CLASSES)
              + f"; {counts['unclassified']} unclassified; {len(g['excluded_stochastic'])} stochastic excluded)")
    hold = s["alignment"]["shared_holdout"]
    hold_text = (f"{hold} shared holdout task(s) segregated: not in this verdict or the warm-start yield"
                 if hold or s["alignment"]["holdout_flagged"] else "No holdout/frozen rows flagged")
    if label == "RL-shaped":
        head = (f"Hypothesis: the reachable gap is RL-shaped — persistence/recovery explains "
                f"{counts['persistence']} of {classified} classified tasks")
    elif label == "not RL-shaped":
        why = (f"{B} called tools/endpoints {A} never attempted" if dominant == "knowledge"
               else f"{A}'s tool calls were malformed")
        head = (f"Hypothesis: the reachable gap is not RL-shaped — {CLASS_LABELS[dominant]} ({why}) "
                f"explains {counts[dominant]} of {classified} classified tasks")
    elif label == "mixed":
        head = "Hypothesis: no single gap class dominates — no RL-shaped verdict"
    elif label == "unclassified":
        head = "No gap class fired on the reachable-gap tasks — no RL-shaped verdict"
    else:
        head = f"No reachable gap: {B} unlocks no train/dev task that {A} fails"
    text = f"{head}. {n_text}. {hold_text}."
    if directional:
        text += " Directional only: " + "; ".join(reasons) + "."
    text += " Labels are hypotheses from trajectory structure — spot-check the samples."
    return {"label": label, "dominant": dominant, "directional_only": directional, "reasons": reasons,
            "n_shared": n_shared, "n_classified": classified, "text": text}


def regressions(s: dict[str, Any]) -> dict[str, Any]:
    """A✓B✗ is always surfaced: a stronger model that loses tasks is not strictly better."""
    A, B = s["baseline"]["label"] or "A", s["candidate"]["label"] or "B"
    tr, ho = s["matrix"]["train"]["regression"], s["matrix"]["holdout"]["regression"]
    n = tr["count"] + ho["count"]
    text = (f"{B} loses {n} task(s) {A} passes ({tr['count']} train/dev, {ho['count']} holdout) — "
            f"{B} is not strictly better." if n else f"No regressions: {B} passes every shared task {A} passes.")
    return {"count": n, "train": tr["tasks"], "holdout": ho["tasks"], "text": text}
