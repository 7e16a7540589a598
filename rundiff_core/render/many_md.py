"""Markdown for the many-run commands (rank, ablate, report, watch): full names, steps, sources."""

from __future__ import annotations

import math
import re

from ..engines.primary import skipped_text
from ..engines.rank import RankResult
from . import fmt, fmt_pm, fmt_step, md_table

ANOMALY_CAP = 8  # run/kind groups listed before "and N more"
ARM_LINES = 6  # arms with several seeds listed before "and N more"
RANK_ROWS = 15
WATCH_RUNS = 20  # runs listed by watch before "and N more" (a fleet can have thousands)
REPORT_ROWS = 20
ABLATE_ROWS = 24  # ablation × metric rows (largest impact first) before "and N more"  # results-table rows before "and N more"  # rows per ranked metric before "and N more"


def mean_pm(mean: float, std: float, n: int, precision: int = 4) -> str:
    if n >= 2 and math.isfinite(std):
        return f"{fmt_pm(mean, std, precision)} (N={n})"
    return f"{fmt(mean, precision)} (N={n}, single-seed)"


def goal_text(goal: str | None) -> str:
    """`goal: min` / `goal: max`, or `direction unknown` (then no best, better or worse)."""
    return f"goal: {goal}" if goal else "direction unknown"


def _config_column(arms: list[dict]) -> dict[str, str]:
    """label → the parameters that tell the arm apart, when some arm is named otherwise (by its
    run's name or its folder); empty when the labels already are the parameters."""
    differs = {a["label"]: a.get("differs", "") for a in arms}
    if not any(differs.values()) or all(k == v for k, v in differs.items()):
        return {}
    return differs


def _cell(config: dict[str, str], label: str) -> str:
    text = config.get(label, "")
    return "" if text == label else text


def arm_lines(arms: list[dict], cap: int = ARM_LINES) -> list[str]:
    """The members of every arm a command formed (one line each), when some arm has seeds."""
    formed = [a for a in arms if len(a["members"]) > 1]
    if not formed:
        return []
    out = ["", f"## Arms ({len(arms)}; {len(formed)} with several seeds)"]
    for a in formed[:cap]:
        members = ", ".join(a["members"][:6]) + (f" and {len(a['members']) - 6} more"
                                                  if len(a["members"]) > 6 else "")
        named = "" if a["label"] == members else f"{a['label']}: "
        out.append(f"- {named}{members} ({a['how']})")
    if len(formed) > cap:
        out.append(f"- … and {len(formed) - cap} more arms (--format json lists all)")
    return out


def render_rank(r: RankResult, precision: int = 4) -> str:
    out = [f"# Ranking: {r.n_runs} runs in {r.n_groups} groups"]
    if r.statements:
        out += [""] + [f"> {s}" for s in r.statements]
    out += ["", f"Headline: {r.metrics[0].metric} — {r.headline_rule}."
            + (f" Skipped, no information: {skipped_text(r.skipped)}." if r.skipped else "")]
    for m in r.metrics:
        out += ["", f"## {m.metric} ({goal_text(m.goal)}) at common step {fmt_step(m.step)}"]
        if m.note:
            out.append(f"> {m.note}")
        off = any(p.step_used != m.step for s in m.order for p in s.points)
        if m.step_rule != "the last step every run reached" or off:
            out.append(f"_step: {m.step_rule}"
                       + ("; a run without a point there is read at its nearest logged point "
                          "(step used)" if off else "") + "_")
        rows = []
        config = _config_column(r.arms)
        top = set(m.top_group)  # a fleet has thousands of arms: no list scans per row
        for i, s in enumerate(m.order[:RANK_ROWS], start=1):
            ci = "—" if not math.isfinite(s.ci[0]) else f"[{fmt(s.ci[0], precision)}, {fmt(s.ci[1], precision)}]"
            if m.goal is None:
                vs = "—"
            elif s.label == m.best:
                vs = "best"
            elif s.label in top:
                vs = f"indistinguishable (p_holm={fmt(m.p_adjusted[s.label], 3)})"
            elif s.label in m.p_adjusted:
                vs = f"worse (p_holm={fmt(m.p_adjusted[s.label], 3)})"
            else:
                vs = "untestable (single seed)"
            steps = sorted({fmt_step(p.step_used) for p in s.points})
            rank = str(i) if m.goal is not None else "·"
            rows.append([rank, s.label, *([_cell(config, s.label)] if config else []),
                         mean_pm(s.mean, s.std, s.n, precision), ci, ", ".join(steps), vs])
        for miss in m.not_reached[:RANK_ROWS]:
            last = "no finite step" if not math.isfinite(miss.last_step) else \
                f"last at step {fmt_step(miss.last_step)}"
            who = miss.group if miss.group == miss.run else f"{miss.group} — {miss.run}"
            rows.append(["–", who, *([_cell(config, miss.group)] if config else []),
                         f"not reached ({last})", "—", "—", "—"])
        out += md_table(["#", "run / group", *(["config"] if config else []), "value at step",
                         "95% bootstrap CI", "step used", "vs best"], rows)
        if len(m.order) > RANK_ROWS:
            out.append(f"… and {len(m.order) - RANK_ROWS} more groups (--format json lists all)")
        if len(m.not_reached) > RANK_ROWS:
            out.append(f"… and {len(m.not_reached) - RANK_ROWS} more runs not reached")
    primary = r.metrics[0]
    out += ["", "## Summary"]
    out.append(f"- best overall ({primary.metric}): {primary.best or '—'}"
               + (" (direction unknown)" if primary.goal is None else ""))
    for m in r.metrics[1:]:
        out.append(f"- best on {m.metric}: {m.best or '—'}"
                   + (" (direction unknown)" if m.goal is None else ""))
    out.append(f"- most efficient: {r.most_efficient or '—'} — {r.efficiency_note}")
    out += arm_lines(r.arms)
    out += anomaly_lines(r.anomalies)
    out += damage_lines(r.notes)
    return "\n".join(out) + "\n"


def _runs(names: list[str], cap: int = 4) -> str:
    head = ", ".join(names[:cap])
    return head + (f" and {len(names) - cap} more" if len(names) > cap else "")


#: Notes that say a reader skipped or could not read part of a file: the ones a number may rest on.
_DAMAGE = re.compile(r"skipped|unreadable|malformed|ragged|damaged|not valid|truncated|torn|"
                     r"cannot be read|could not be read|bad (?:row|line|cell)", re.I)


def damage_lines(notes: dict[str, list[str]], cap: int = 5) -> list[str]:
    """The runs whose numbers rest on a file read with something skipped, with the note that
    says what (the first few; --format json holds every note of every run)."""
    hit = [(run, n) for run, ns in notes.items() for n in ns if _DAMAGE.search(n)
           and not n.startswith("layout:")]
    if not hit:
        return []
    out = ["", f"## Read with damage ({len({r for r, _ in hit})} run(s))"]
    out += [f"- {run}: {note}" for run, note in hit[:cap]]
    if len(hit) > cap:
        out.append(f"- … {len(hit) - cap} more (--format json lists every run's notes)")
    return out


def anomaly_lines(anomalies: list, cap: int = ANOMALY_CAP, per: int = 3) -> list[str]:  # noqa: ANN001
    """Anomalies grouped by run and kind (runs reading the same merged), most severe first,
    capped with a count."""
    if not anomalies:
        return []
    from ..engines.runset import group_anomalies

    groups = group_anomalies(anomalies)
    runs = {a.run for a in anomalies}
    out = ["", f"## Anomalies ({len(anomalies)} in {len(runs)} run{'s' if len(runs) != 1 else ''}, "
               "most severe first)"]
    for g in groups[:cap]:
        if len(g.runs) > 1:
            out.append(f"- {g.kind} in {len(g.runs)} runs ({_runs(g.runs)}): {g.items[0].detail}")
            continue
        head = f"{g.kind} ×{len(g.items)}" if len(g.items) > 1 else g.kind
        details = "; ".join(a.detail for a in g.items[:per])
        more = f"; and {len(g.items) - per} more" if len(g.items) > per else ""
        out.append(f"- {g.runs[0]} — {head}: {details}{more}")
    if len(groups) > cap:
        rest = sum(len(g.items) for g in groups[cap:])
        out.append(f"- … and {rest} more in {len(groups) - cap} run/kind groups (--format json lists all)")
    rules = dict.fromkeys(a.rule for a in anomalies if a.kind == "spike" and a.rule)
    out += [f"- rule (spike): {rule}" for rule in rules]
    return out


def _change(c) -> str:  # noqa: ANN001 - ConfigChange
    """`key: old → new`, a key one side lacks written as absent (never None)."""
    old = "absent" if c.change == "added" else repr(c.old)
    new = "absent" if c.change == "removed" else repr(c.new)
    return f"{c.key}: {old} → {new}"


def render_ablate(r, precision: int = 4) -> str:  # noqa: ANN001 - AblateResult
    from . import fmt_delta

    out = [f"# Ablations vs baseline {r.baseline} (N={r.baseline_n})"]
    if r.statements:
        out += [""] + [f"> {s}" for s in r.statements]
    out += ["", "Ranked by impact (largest relative change on any metric first).", ""]
    rows = []
    for a in r.ablations:
        changed = "; ".join(_change(c) for c in a.changes[:4]) or "(no config change)"
        if len(a.changes) > 4:
            changed += f"; +{len(a.changes) - 4} more"
        for e in a.effects:
            unc = f"± {fmt(e.se, precision)} (p={fmt(e.p, 3)})" if math.isfinite(e.se) else "single-seed"
            verdict = "—" if e.improves is None else ("better" if e.improves else "worse")
            if math.isfinite(e.se) and abs(e.delta) <= 2 * e.se:
                verdict += " (within 2 SE)"
            rows.append([a.label, changed, e.metric, fmt_step(e.step), fmt(e.baseline, precision),
                         fmt(e.value, precision), f"{fmt_delta(e.delta, precision)} {unc}", f"N={e.n_baseline}/{e.n_ablation}", verdict])
            changed = "〃"
    out += md_table(["ablation", "changed keys", "metric", "step", "baseline", "value", "Δ", "N base/abl", "direction"],
                    rows[:ABLATE_ROWS])
    if len(rows) > ABLATE_ROWS:
        out.append(f"… and {len(rows) - ABLATE_ROWS} more rows, smaller impact (--format json lists all)")
    out += arm_lines(getattr(r, "arms", []))
    if r.interactions:
        out += ["", "## Interactions"]
        for i in r.interactions[:ANOMALY_CAP]:
            out.append(f"- {i.keys[0]} × {i.keys[1]} on {i.metric}: {i.detail}")
        if len(r.interactions) > ANOMALY_CAP:
            out.append(f"- … and {len(r.interactions) - ANOMALY_CAP} more (--format json lists all)")
    return "\n".join(out) + "\n"


def render_report(rep, precision: int = 4) -> str:  # noqa: ANN001 - ExperimentReport
    out = ["# Experiment report", "", "## Overview"]
    lo, hi = rep.date_range
    out.append(f"- total runs: {rep.total_runs}")
    out.append(f"- date range: {lo} → {hi}" if lo else "- date range: no wall times logged")
    rule = getattr(rep, "headline_rule", "")
    out.append(f"- headline: {rep.primary}" + (f" — {rule}" if rule else "")
               + (f" (skipped, no information: {skipped_text(rep.skipped)})"
                  if getattr(rep, "skipped", None) else ""))
    out.append(f"- best result: {rep.best.text}" if rep.best else "- best result: —")
    if rep.best:
        out += [f"  - {e}" for e in rep.best.evidence]
    out += [f"- note: {n}" for n in getattr(rep, "notes", ())]
    out += ["", f"## Results (every row at step {fmt_step(rep.step)} of {rep.primary})", ""]
    header = ["Run", "Step", "Config", "Proxy", "Downstream", "GPU hours", "Status"]
    rows = []
    for r in rep.rows:
        cd = getattr(r, "differs", "") or "—"  # what tells its arm apart; JSON: config_diff

        def cells(values: dict, r=r) -> str:  # noqa: ANN001
            out = []
            for k, v in values.items():
                at = r.steps.get(k)
                if v is None:
                    text = (f"not reached (last at step {fmt_step(at)})" if at is not None
                            else "not logged")
                    out.append(f"{k} {text}")
                    continue
                mark = f" @ {fmt_step(at)}" if at is not None and at != rep.step else ""
                out.append(f"{k} {fmt(v, precision)}{mark}")
            return "; ".join(out) or "—"

        rows.append([r.run, fmt_step(r.step), cd, cells(r.proxy), cells(r.downstream),
                     "—" if r.gpu_hours is None else f"{r.gpu_hours:.2f}", r.status])
    out += md_table(header, rows[:REPORT_ROWS])
    if len(rows) > REPORT_ROWS:
        out.append(f"… and {len(rows) - REPORT_ROWS} more runs (--format json lists all)")
    out += ["", "## Key findings"]
    if not rep.findings:
        out.append("- none")
    for f in rep.findings:
        out.append(f"- {f.text}")
        out += [f"  - evidence: {e}" for e in f.evidence]
    out += ["", "## Recommendations (next experiments)"]
    if not rep.recommendations:
        out.append("- none")
    for f in rep.recommendations:
        out.append(f"- {f.text} — because {'; '.join(f.evidence)}")
    out += arm_lines(getattr(rep, "arms", []))
    out += damage_lines(getattr(rep, "run_notes", {}))
    return "\n".join(out) + "\n"


def render_watch(result, alerts_per_run: int = 3,  # noqa: ANN001 - WatchResult
                 max_runs: int | None = None) -> str:
    """One line per run (status, progress, age in human units) and its alerts, capped per run.
    Past `max_runs` runs (default WATCH_RUNS): a headline with the alert counts first, then the runs whose alerts
    need a look (anything but "finished"), then the others, cut at `max_runs` with a count."""
    from collections import Counter

    from ..engines.watch import human_age

    out = []
    notes = [f"> {n}" for n in getattr(result, "notes", ())]
    runs = list(result.runs)
    max_runs = WATCH_RUNS if max_runs is None else max_runs
    if len(runs) > max_runs:
        kinds = Counter(a.kind for c in runs for a in c.alerts)
        listed = ", ".join(f"{n} {k}" for k, n in kinds.most_common()) or "none"
        out.append(f"{len(runs)} runs watched; alerts: {listed}")
        look = [c for c in runs if any(a.kind != "finished" for a in c.alerts)]
        seen = {id(c) for c in look}
        runs = (look + [c for c in runs if id(c) not in seen])[:max_runs]
    out += notes
    for c in runs:
        prog = ", ".join(f"{k} {v['now']:.4g}" for k, v in list(c.progress.items())[:4])
        if len(c.progress) > 4:
            prog += f" (+{len(c.progress) - 4} keys)"
        age = "—" if c.age_seconds is None else f"{human_age(c.age_seconds)} ago"
        moved = (f"step {c.previous_step:g} → {c.last_step:g}"
                 if c.previous_step is not None and c.last_step is not None
                 else f"step {c.last_step:g}" if c.last_step is not None else "no points")
        arm = f" (arm {c.arm})" if getattr(c, "arm_size", 1) > 1 else ""
        out.append(f"{c.run}{arm} [{c.status}] {moved}, {c.new_points} new points, last data {age}"
                   + (f"; {prog}" if prog else ""))
        out += [f"  ALERT {a.kind}: {a.message}" for a in c.alerts[:alerts_per_run]]
        out += [f"  read with damage: {n}" for n in getattr(c, "notes", ())
                if _DAMAGE.search(n) and not n.startswith("layout:")][:2]
        if len(c.alerts) > alerts_per_run:
            out.append(f"  … and {len(c.alerts) - alerts_per_run} more alerts (--format json lists all)")
    if len(result.runs) > len(runs):
        out.append(f"… and {len(result.runs) - len(runs)} more runs (--format json lists all)")
    return "\n".join(out) + ("\n" if out else "")
