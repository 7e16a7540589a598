"""Report writers: report.md (people), matrix.json + tasks.csv (machines), warm_start.jsonl (pointers).

Local-first: everything is written under one output folder. Message bodies never leave the
exports — the report shows only short, redacted snippets for the `--samples` spot-checks, and
warm_start.jsonl carries task names and source paths, not bodies.
"""

from __future__ import annotations

import csv
import json
import os
from datetime import UTC, datetime
from typing import Any

from ..render import dumps, fmt
from .engine import CLASS_LABELS, GAP_CLASSES, PairDiff, TaskRow, natural_key
from .model import FINISH_BUCKETS, Call, TaskRecord, TrajectoryRun
from .signals import redact_snippet

SCHEMA = "rundiff.trajectory-diff/1"
LIST_MAX = 40
CALLS_SHOWN = 8

CSV_COLUMNS = (
    "baseline", "candidate", "task", "holdout", "unmatched", "outcome", "gap_class", "gap_signals",
    "evidence", "stability", "stability_a", "stability_b", "warm_start_clean", "not_clean",
    "first_divergence", "a_id", "b_id", "a_passed", "b_passed", "a_score", "b_score", "a_steps",
    "b_steps", "a_steps_source", "b_steps_source", "a_finish", "b_finish", "a_finish_raw",
    "b_finish_raw", "a_calls", "b_calls", "a_tools", "b_tools", "a_endpoints", "b_endpoints",
    "a_errors", "b_errors", "a_retried", "b_retried", "a_quit", "b_quit", "a_recovered",
    "b_recovered", "a_thrash", "b_thrash", "a_invalid_calls", "b_invalid_calls",
    "a_malformed_messages", "b_malformed_messages", "a_input_tokens", "b_input_tokens",
    "a_output_tokens", "b_output_tokens", "a_cost", "b_cost", "a_repeats", "b_repeats",
)


# -- files ------------------------------------------------------------------------------------------


def write_outputs(out_dir: str, runs: list[TrajectoryRun], pairs: list[PairDiff], samples: int = 1,
                  command: str | None = None) -> dict[str, str]:
    """Write report.md, matrix.json, tasks.csv and warm_start.jsonl; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {name: os.path.join(out_dir, name)
             for name in ("report.md", "matrix.json", "tasks.csv", "warm_start.jsonl")}
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    matrix = matrix_document(runs, pairs, generated, command)
    with open(paths["matrix.json"], "w", encoding="utf-8") as fh:
        fh.write(dumps(matrix) + "\n")
    write_tasks_csv(paths["tasks.csv"], pairs)
    write_warm_start(paths["warm_start.jsonl"], pairs)
    with open(paths["report.md"], "w", encoding="utf-8") as fh:
        fh.write(render_report(runs, pairs, samples, generated, command))
    return paths


def matrix_document(runs: list[TrajectoryRun], pairs: list[PairDiff], generated: str,
                    command: str | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "generated_at": generated,
        "command": command,
        "runs": [{"label": r.label, "path": r.path, "selector": r.selector, "model": r.model,
                  "format": r.format} for r in runs],
        "pairs": [p.summary for p in pairs],
    }


def _bool(v: bool | None) -> str:
    return "" if v is None else ("true" if v else "false")


def _num(v: Any) -> str:
    return "" if v is None else fmt(v, 6)


def task_row_dict(p: PairDiff, row: TaskRow) -> dict[str, Any]:
    """One tasks.csv row: every signal the diff computed for a task."""
    out: dict[str, Any] = {
        "baseline": p.baseline.label, "candidate": p.candidate.label, "task": row.name,
        "holdout": _bool(row.holdout), "unmatched": row.unmatched or "", "outcome": row.outcome or "",
        "gap_class": row.gap_class or "", "gap_signals": ";".join(row.signals),
        "evidence": " | ".join(row.evidence), "stability": row.stability,
        "stability_a": row.stability_a, "stability_b": row.stability_b,
        "warm_start_clean": _bool(row.clean), "not_clean": ";".join(row.not_clean),
        "first_divergence": "" if row.first_divergence is None else row.first_divergence,
    }
    for side, rec, run in (("a", row.a, p.baseline), ("b", row.b, p.candidate)):
        f = rec.features if rec else None
        out.update({
            f"{side}_id": (rec.id or "") if rec else "",
            f"{side}_passed": _bool(rec.passed) if rec else "",
            f"{side}_score": _num(rec.score) if rec else "",
            f"{side}_steps": "" if rec is None or rec.steps is None else rec.steps,
            f"{side}_steps_source": rec.steps_source if rec else "",
            f"{side}_finish": rec.finish if rec else "",
            f"{side}_finish_raw": (rec.finish_raw or "") if rec else "",
            f"{side}_calls": len(f.calls) if f else "",
            f"{side}_tools": ";".join(sorted(f.tools)) if f else "",
            f"{side}_endpoints": ";".join(sorted(f.endpoints)) if f else "",
            f"{side}_errors": f.errors if f else "",
            f"{side}_retried": f.retried if f else "",
            f"{side}_quit": f.quit if f else "",
            f"{side}_recovered": f.recovered if f else "",
            f"{side}_thrash": f.thrash if f else "",
            f"{side}_invalid_calls": f.invalid_calls if f else "",
            f"{side}_malformed_messages": f.malformed_messages if f else "",
            f"{side}_input_tokens": _num(rec.input_tokens) if rec else "",
            f"{side}_output_tokens": _num(rec.output_tokens) if rec else "",
            f"{side}_cost": _num(rec.cost) if rec else "",
            f"{side}_repeats": len(run.repeats.get(row.name, ())),
        })
    return out


def write_tasks_csv(path: str, pairs: list[PairDiff]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for p in pairs:
            for row in p.rows:
                writer.writerow(task_row_dict(p, row))


def write_warm_start(path: str, pairs: list[PairDiff]) -> None:
    """One line per clean A✗B✓ trajectory: where to find it, never what it says."""
    with open(path, "w", encoding="utf-8") as fh:
        for p in pairs:
            for row in p.rows:
                if not row.clean or row.b is None:
                    continue
                fh.write(json.dumps({
                    "task": row.name,
                    "source": os.path.abspath(p.candidate.path),
                    "selector": p.candidate.selector,
                    "record_index": row.b.position,
                    "record_id": row.b.id,
                    "candidate": p.candidate.label,
                    "baseline": p.baseline.label,
                    "baseline_source": os.path.abspath(p.baseline.path),
                    "gap_class": row.gap_class,
                    "steps": row.b.steps,
                    "stability": row.stability,
                }, ensure_ascii=False, sort_keys=True) + "\n")


# -- markdown ---------------------------------------------------------------------------------------


def _list(names: list[str], limit: int = LIST_MAX) -> str:
    if not names:
        return "—"
    shown = ", ".join(f"`{n}`" for n in names[:limit])
    return shown + (f", … (+{len(names) - limit} more; see matrix.json)" if len(names) > limit else "")


def _dist(d: dict[str, Any]) -> str:
    if not d or not d.get("n"):
        return "—"
    return f"{fmt(d['median'], 3)} [{fmt(d['q1'], 3)}–{fmt(d['q3'], 3)}]"


def _hist(d: dict[str, Any], width: int = 30) -> list[str]:
    bins = d.get("hist") or []
    if not bins:
        return ["    (no data)"]
    top = max(b["count"] for b in bins) or 1
    lines = []
    for b in bins:
        label = fmt(b["lo"], 3) if b["lo"] == b["hi"] else f"{fmt(b['lo'], 3)}–{fmt(b['hi'], 3)}"
        bar = "█" * max(1 if b["count"] else 0, round(width * b["count"] / top))
        lines.append(f"    {label:>12} | {bar} {b['count']}")
    return lines


def render_report(runs: list[TrajectoryRun], pairs: list[PairDiff], samples: int, generated: str,
                  command: str | None = None) -> str:
    out = ["# Trajectory diff", ""]
    out.append(f"Generated {generated} by `{command or 'rundiff trajectories'}`. Local-only: this folder "
               "holds task names, counts and short redacted snippets; nothing was sent anywhere.")
    out += ["", "## Runs", "", "| run | model | format | harness | task set | tasks | pass rate | path |",
            "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        s = r.summary()
        rate = "—" if s["pass_rate"] is None else f"{s['pass_rate']:.1%} ({s['passed']}/{s['scored']})"
        path = r.path + (f"#{r.selector}" if r.selector else "")
        out.append(f"| {r.label} | {r.model or '—'} | {r.format} | {r.harness or '—'} | {r.task_set or '—'} "
                   f"| {s['tasks']} (+{s['repeats']} repeats) | {rate} | `{path}` |")
    for r in runs:
        for note in r.notes:
            out.append(f"- {r.label}: {note}")
    for r in runs:
        pk = r.summary()["pass_k"]
        if pk:
            out.append(f"- {r.label}: {pass_k_text(pk)}")
    t = pairs[0].thresholds if pairs else None
    if t:
        out += ["", f"Thresholds: min N {t.min_n}; unstable share {t.max_unstable:.0%}; thrash ≤ "
                f"{t.max_thrash} for a clean warm start; task overlap ≥ {t.min_overlap:.0%}; a class dominates "
                f"above {t.dominance:.0%} of classified tasks."]
    for p in pairs:
        out += ["", *render_pair(p, samples)]
    return "\n".join(out) + "\n"


def render_pair(p: PairDiff, samples: int) -> list[str]:
    s = p.summary
    A, B = p.baseline.label, p.candidate.label
    al, mx = s["alignment"], s["matrix"]
    out = [f"## {A} (baseline) vs {B}", ""]
    sig = s["significance"]
    if sig["train"]:
        out += [f"**Paired test (train/dev).** {sig['train']['text']}", ""]
    if sig["holdout"]:
        out += [f"**Paired test (holdout).** {sig['holdout']['text']}", ""]
    out += [f"**Verdict.** {s['verdict']['text']}", "", f"**Regressions.** {s['regressions']['text']}"]
    if s["regressions"]["count"]:
        out.append(f"Lost tasks: {_list(s['regressions']['train'] + s['regressions']['holdout'])}")

    if sig["train"]:
        out += ["", *render_significance(sig["train"])]
    out += ["", "### 1. Alignment", "",
            f"{A}: {al['tasks_a']} tasks, {B}: {al['tasks_b']} tasks; **{al['shared']} shared with an outcome "
            f"in both** ({al['shared_train']} train/dev, {al['shared_holdout']} holdout)."]
    if al["unmatched"]:
        out.append(f"{len(al['unmatched'])} task(s) left out of the divergence maths:")
        out += [f"- `{u['task']}` — {u['why']}" for u in al["unmatched"][:LIST_MAX]]
        if len(al["unmatched"]) > LIST_MAX:
            out.append(f"- … (+{len(al['unmatched']) - LIST_MAX} more; see tasks.csv)")
    else:
        out.append("Every task is present and scored in both runs.")
    out.append(f"Holdout/frozen-flagged tasks: {_list(al['holdout_flagged'])}")

    out += ["", "### 2. Outcome matrix", ""]
    for scope in ("train", "holdout"):
        m = mx[scope]
        total = sum(m[k]["count"] for k in ("both_pass", "both_fail", "reachable_gap", "regression"))
        if scope == "holdout" and not total:
            out += ["Holdout: no shared holdout rows.", ""]
            continue
        out += [f"**{'Train/dev' if scope == 'train' else 'Holdout (segregated: never a training signal)'}** "
                f"— agreement {m['agreement']}, disagreement {m['disagreement']}", "",
                f"| | {B}✓ | {B}✗ |", "|---|---|---|",
                f"| **{A}✓** | {m['both_pass']['count']} | {m['regression']['count']} (regressions) |",
                f"| **{A}✗** | {m['reachable_gap']['count']} (reachable gap) | {m['both_fail']['count']} |", "",
                f"- reachable gap ({A}✗{B}✓): {_list(m['reachable_gap']['tasks'])}",
                f"- regressions ({A}✓{B}✗): {_list(m['regression']['tasks'])}", ""]

    d = s["divergence"]
    out += ["### 3. Behavioural divergence", "", f"Over {d['n']} {d['scope']}; median [IQR].", "",
            f"| signal | {A} | {B} |", "|---|---|---|",
            f"| steps to done | {_dist(d['steps']['A'])} | {_dist(d['steps']['B'])} |",
            f"| distinct tools | {_dist(d['distinct_tools']['A'])} | {_dist(d['distinct_tools']['B'])} |",
            f"| distinct endpoints | {_dist(d['distinct_endpoints']['A'])} | {_dist(d['distinct_endpoints']['B'])} |",
            f"| error results per task | {_dist(d['recovery']['A']['errors_per_task'])} | "
            f"{_dist(d['recovery']['B']['errors_per_task'])} |"]
    for key in ("errors", "retried", "quit", "recovered", "thrash", "invalid_calls", "malformed_messages"):
        out.append(f"| {key.replace('_', ' ')} (total) | {d['recovery']['A'][key]} | {d['recovery']['B'][key]} |")
    for bucket in FINISH_BUCKETS:
        out.append(f"| finish: {bucket} | {d['finish']['A']['buckets'][bucket]} | {d['finish']['B']['buckets'][bucket]} |")
    for key, label in (("input_tokens", "input tokens"), ("output_tokens", "output tokens"), ("cost", "cost")):
        ba, bb = d["budget"]["A"][key], d["budget"]["B"][key]
        out.append(f"| {label} (export fields, total) | {_budget(ba)} | {_budget(bb)} |")
    out += ["", "Raw finish reasons → bucket: " + "; ".join(
        f"{side}: " + ", ".join(f"`{x['raw']}`→{x['bucket']} ({x['count']})" for x in d["finish"][key]["raw"])
        for side, key in ((A, "A"), (B, "B")))]
    counted = [side for side, key in ((A, "A"), (B, "B")) if d["budget"][key]["steps_counted"]]
    if counted:
        out.append(f"Steps for {', '.join(counted)} are counted assistant turns (the export has no `steps` field).")
    fd = d["first_divergence"]
    out += ["", f"First divergence (1-based tool-call position where name + normalised args first differ): "
            f"median {_dist(fd['position'])} over {fd['diverged']} diverging tasks; "
            f"{fd['identical_call_sequences']} identical call sequences ({fd['no_calls_either']} with no calls at all).",
            "", f"Steps to done, {A}:", *_hist(d["steps"]["A"]), f"Steps to done, {B}:", *_hist(d["steps"]["B"]),
            "First-divergence position:", *_hist(fd["position"])]

    g = s["gap_classes"]
    out += ["", "### 4. Gap classes (hypotheses)", "",
            f"Over {g['n']} {g['scope']}. Labels are hypotheses from trajectory structure, not proof.", "",
            "| class | tasks | signal fired (any) |", "|---|---|---|"]
    for c in (*GAP_CLASSES, "unclassified"):
        fired = g["signal_counts"].get(c, "—")
        out.append(f"| {CLASS_LABELS[c]} | {g['counts'][c]} | {fired} |")
    out.append("")
    if g["multi_signal"]:
        out.append(f"{g['multi_signal']} task(s) fired more than one signal (precedence: format > knowledge > "
                   "persistence; all signals are in tasks.csv).")
    if g["excluded_stochastic"]:
        out.append(f"Excluded as stochastic: {_list(g['excluded_stochastic'])}")
    if g["holdout_reachable_gap"]:
        out.append(f"Holdout reachable-gap tasks (not classified into the verdict): {_list(g['holdout_reachable_gap'])}")
    gap_rows = [r for r in p.rows if r.outcome == "reachable_gap" and not r.holdout and r.gap_class != "excluded"]
    for c in (*GAP_CLASSES, "unclassified"):
        members = [r for r in gap_rows if r.gap_class == c]
        if not members:
            continue
        out += ["", f"**{CLASS_LABELS[c]}** ({len(members)}):"]
        out += [f"- `{r.name}` — {'; '.join(r.evidence)}" for r in members[:LIST_MAX]]
        if len(members) > LIST_MAX:
            out.append(f"- … (+{len(members) - LIST_MAX} more; see tasks.csv)")
    if samples > 0 and gap_rows:
        out += ["", f"#### Redacted samples ({samples} per class, for spot-checking the hypothesis)"]
        for c in (*GAP_CLASSES, "unclassified"):
            members = sorted((r for r in gap_rows if r.gap_class == c), key=lambda r: natural_key(r.name))
            for i, r in enumerate(members[:samples], start=1):
                out += ["", f"**{CLASS_LABELS[c]} sample {i}: `{r.name}`**", *render_sample(r, A, B)]

    w = s["warm_start"]
    out += ["", "### 5. Warm-start yield", "",
            f"**{w['count']}** clean {B} trajectories out of {w['of_reachable_gap']} train/dev reachable-gap tasks "
            f"(rule: {w['rule']}). Holdout tasks excluded: {w['excluded_holdout']}; stochastic excluded: "
            f"{w['excluded_stochastic']}. Pointers (no bodies) in warm_start.jsonl."]
    if w["not_clean_reasons"]:
        out.append("Not clean: " + ", ".join(f"{k} ({v})" for k, v in w["not_clean_reasons"].items()) + ".")

    st = s["stability"]
    out += ["", "### 6. Repeat stability", ""]
    if not st["tasks_with_repeats"]:
        out.append("No repeats given: stability not measured (a single run can mistake sampling noise for a "
                   "behavioural gap; pass `--repeats` or use exports with epochs/trials).")
    else:
        c = st["counts"]
        out.append(f"{st['tasks_with_repeats']} shared task(s) with repeats ({A}: {st['repeats']['A']} repeat "
                   f"attempts, {B}: {st['repeats']['B']}): stable {c['stable']}, borderline {c['borderline']}, "
                   f"stochastic {c['stochastic']}; unstable share {st['unstable_rate']:.1%} "
                   f"(threshold {st['threshold']:.0%}).")
        if st["downgrade"]:
            out.append("**Above the threshold: every verdict in this section is directional only.** "
                       "Fix decoding (temperature, seed) before trusting the classes.")
        if st["stochastic_tasks"]:
            out.append(f"Stochastic: {_list(st['stochastic_tasks'])}")
        if st["borderline_tasks"]:
            out.append(f"Borderline: {_list(st['borderline_tasks'])}")
    return out


def pass_k_text(pk: dict[str, Any], *, listing: bool = False) -> str:
    """A run's pass^k and pass@k (`paired.pass_hat_k`) in words, the one text of both outputs:
    the report's `pass^1 0.420 · pass^2 … | pass@4 0.700 — over 50 tasks × 4 trials`, or with
    `listing` the line `rundiff ls` prints, `50 tasks × 4 trials: pass^1 0.420, …; pass@4 0.700`."""
    sep, number = (", ", "{:.3f}".format) if listing else (" · ", lambda v: fmt(v, 3))
    hat = sep.join(f"pass^{k} {number(v)}" for k, v in pk["pass_hat_k"].items())
    at = sep.join(f"pass@{k} {number(v)}" for k, v in pk["pass_at_k"].items())
    over = f"{pk['tasks']} tasks × {pk['trials']} trials"
    left = f"{pk['tasks_excluded']} task(s) with fewer trials left out" if pk["tasks_excluded"] else ""
    if listing:
        return f"{over}: {hat}; {at}" + (f"; {left}" if left else "")
    return f"{hat} | {at} — over {over}" + (f" ({left})" if left else "")


def render_significance(sig: dict[str, Any]) -> list[str]:
    """The paired-test table: what was tested, on which values, with which interval."""
    ci = sig["ci"]
    rows = ["| paired statistic | value |", "|---|---|",
            f"| tasks (N) | {sig['n']} |",
            f"| pass rate A → B | {sig['pass_rate_a']:.1%} → {sig['pass_rate_b']:.1%} |",
            f"| discordant (gained / lost) | {sig['discordant']} ({sig['gained']} / {sig['lost']}) |",
            f"| McNemar exact p ({sig['mcnemar']['scope']}) | {fmt(sig['mcnemar']['p'], 4)} |",
            f"| mean difference ({sig['values']}) | {fmt(sig['difference'], 4)} |",
            f"| {ci['level']:.0%} CI | {fmt(ci['lo'], 4)} … {fmt(ci['hi'], 4)} ({ci['method']}) |",
            f"| SE (CLT, paired) | {'—' if sig['se'] is None else fmt(sig['se'], 4)} |"]
    if sig["clusters"]:
        c = sig["clusters"]
        rows.append(f"| clustered SE ({c['n']} clusters) | {fmt(c['se'], 4)} (normal CI {fmt(c['ci_normal']['lo'], 4)} … "
                    f"{fmt(c['ci_normal']['hi'], 4)}) |")
    if not sig["test"]["test"].startswith("McNemar"):
        rows.append(f"| {sig['test']['test']} on {sig['test']['on']} | p = {fmt(sig['test']['p'], 4)} |")
    sc = sig.get("scores")
    if sc:
        rows.append(f"| scores: mean A → B | {fmt(sc['mean_a'], 4)} → {fmt(sc['mean_b'], 4)}; paired t p = "
                    f"{'—' if sc['p'] is None else fmt(sc['p'], 4)}; CI {fmt(sc['ci']['lo'], 4)} … {fmt(sc['ci']['hi'], 4)} |")
    return rows


def _budget(b: dict[str, Any]) -> str:
    if b["total"] is None:
        return "not in export"
    return f"{fmt(b['total'], 4)} ({b['tasks_with_field']} tasks)"


def _calls(calls: list[Call]) -> str:
    if not calls:
        return "no tool calls"
    parts = []
    for c in calls[:CALLS_SHOWN]:
        args = redact_snippet(c.args_key, 60) or ""
        mark = "" if c.valid else " ⚠invalid"
        parts.append(f"{c.name}({args}) → {c.result or 'no result'}{mark}")
    more = f" … +{len(calls) - CALLS_SHOWN} more" if len(calls) > CALLS_SHOWN else ""
    return "; ".join(parts) + more


def render_sample(row: TaskRow, A: str, B: str) -> list[str]:
    """A short, redacted side-by-side of one task (call names, truncated args, results)."""
    lines = [f"- evidence: {'; '.join(row.evidence)}"]
    for label, rec in ((A, row.a), (B, row.b)):
        if rec is None:
            continue
        lines.append(f"- {label} ({_outcome(rec)}): {_calls(rec.features.calls)}")
        if rec.features.first_error_raw:
            lines.append(f"  - first error result: “{redact_snippet(rec.features.first_error_raw, 160)}”")
        if rec.features.final_text_raw:
            lines.append(f"  - last assistant text: “{redact_snippet(rec.features.final_text_raw, 160)}”")
    if row.first_divergence is not None:
        lines.append(f"- first divergence at tool call #{row.first_divergence}")
    return lines


def _outcome(rec: TaskRecord) -> str:
    state = "pass" if rec.passed else "fail"
    return f"{state}, finish {rec.finish} ({rec.finish_raw or 'none'}), {rec.steps} steps"


# -- one-screen summary -----------------------------------------------------------------------------


SUMMARY_PAIRS = 4  # pair blocks (≤ 9 lines each) the terminal summary shows


TASK_IDS_SHOWN = 10  # gained/lost task ids named in the terminal summary up to this many


def summary_lines(pairs: list[PairDiff], report_path: str | None = None) -> list[str]:
    """What the CLI prints: one block per pair, short enough for one screen."""
    out: list[str] = []
    for p in pairs[:SUMMARY_PAIRS]:
        s = p.summary
        A, B = p.baseline.label, p.candidate.label
        tr = s["matrix"]["train"]
        g, w, st = s["gap_classes"], s["warm_start"], s["stability"]
        out.append(f"{A} = {p.baseline.display}  vs  {B} = {p.candidate.display}")
        if s["significance"]["train"]:
            out.append(f"  {s['significance']['train']['text']}")
        out.append(f"  shared {s['alignment']['shared']} ({s['alignment']['shared_train']} train/dev, "
                   f"{s['alignment']['shared_holdout']} holdout), unmatched {len(s['alignment']['unmatched'])}")
        out.append(f"  {A}✓{B}✓ {tr['both_pass']['count']}  {A}✗{B}✗ {tr['both_fail']['count']}  "
                   f"{A}✗{B}✓ {tr['reachable_gap']['count']} (reachable gap)  "
                   f"{A}✓{B}✗ {tr['regression']['count']} (regressions)")
        for outcome, word in (("reachable_gap", "gained"), ("regression", "lost")):
            ids = tr[outcome]["tasks"]
            if 0 < len(ids) <= TASK_IDS_SHOWN:  # few enough to name: the ids to look at
                out.append(f"  {word} by {B}: {', '.join(map(str, ids))}")
        out.append("  gap classes: " + ", ".join(f"{CLASS_LABELS[c]} {g['counts'][c]}"
                                                  for c in (*GAP_CLASSES, "unclassified")))
        out.append(f"  warm-start yield: {w['count']} clean of {w['of_reachable_gap']}")
        if st["tasks_with_repeats"]:
            out.append(f"  stability: {st['counts']['stable']} stable, {st['counts']['borderline']} borderline, "
                       f"{st['counts']['stochastic']} stochastic ({st['unstable_rate']:.1%} unstable)")
        out.append(f"  verdict: {s['verdict']['label']}"
                   + (" (directional only)" if s["verdict"]["directional_only"] else "")
                   + f" — N={s['verdict']['n_shared']} shared, {s['verdict']['n_classified']} classified")
        out.append(f"  {s['regressions']['text']}")
    if len(pairs) > SUMMARY_PAIRS:
        out.append(f"… and {len(pairs) - SUMMARY_PAIRS} more pairs"
                   + (" in the report" if report_path else " (--format json lists all)"))
    if report_path:
        out.append(f"report: {report_path}")
    return out
