"""The runs-diff Markdown report: one screen (≤ ~50 lines), fixed sections, verdict last."""

from __future__ import annotations

import math

from ..engines.diff import DiffResult
from ..engines.naming import found_in
from ..redact import redact
from . import fmt, fmt_delta, fmt_step, md_table

MAX_SPIKES_SHOWN = 6
MAX_FLAGS = 3


def render_diff_markdown(r: DiffResult, precision: int = 4) -> str:
    out: list[str] = [f"# Runs diff: {r.a_name} vs {r.b_name}", ""]
    out.append(f"runs in {found_in([r.a_address, r.b_address])}" + ("  " if r.arms else ""))
    for side in ("A", "B") if r.arms else ():
        arm = r.arms[side]
        named = f" — {arm['label']}" if arm["label"] != arm["members"] else ""
        how = "" if arm["how"] == "one run" else f" ({arm['how']})"
        out.append(f"arm {side}: {arm['members']}{named}{how}" + ("  " if side == "A" else ""))
    if r.warnings:
        out.append("")
        shown = r.warnings[:3]
        out += [f"> warning: {w}" for w in shown]
        if len(r.warnings) > len(shown):
            out.append(f"> … {len(r.warnings) - len(shown)} more warnings (--format json lists all)")
    out += ["", "## Config diff"]
    if r.config_missing:
        names = {"A": r.a_name, "B": r.b_name}
        who = " and ".join(f"{s} ({names[s]})" for s in r.config_missing)
        out.append(f"no config found for {who}: the configs cannot be compared"
                   + ("" if len(r.config_missing) == 2 else " (unknown, not identical)"))
    elif not r.config_total:
        out.append("identical parameters" if r.config_hidden else "identical")
    else:
        if r.config_collapsed:
            out.append(f"{r.config_total} keys changed; top 5 (use --all-keys for all):")
        for c in r.config_changes:
            old, new = redact(c.old, c.key), redact(c.new, c.key)
            if c.change == "added":
                out.append(f"- `{c.key}`: (absent) → {new!r}")
            elif c.change == "removed":
                out.append(f"- `{c.key}`: {old!r} → (absent)")
            else:
                out.append(f"- `{c.key}`: {old!r} → {new!r}")
    if r.config_hidden and not r.config_missing:
        n = sum(r.config_hidden.values())
        kinds = ", ".join(r.config_hidden)
        out.append(f"_{n} non-parameter value{'s' if n > 1 else ''} hidden ({kinds}); "
                   "`--all-keys` shows them_")
    if r.goal is None:
        goal = r.goal_reason or f"direction unknown for {r.metric}: pass --goal {r.metric}=max or min"
    else:
        how = {"--goal": "set with --goal", "declared": "declared by the runs",
               "rundiff.toml": "from rundiff.toml"}.get(r.goal_source)
        goal = f"goal: {r.goal}" + (f", {how}" if how else "")
    out += ["", f"## Headline metric: {r.metric} ({goal})"]
    if r.metric_rule.startswith("declared"):
        out.append(f"_{r.metric} is the headline: {r.metric_rule}_")
    if r.goal_source == "declared" and (r.goal_reason or "") not in r.metric_rule:
        out.append(f"_{r.goal_reason}_")  # once: the headline's reason often already says it
    if r.headline_unavailable or r.headline_a is None or r.headline_b is None:
        out.append(r.headline_unavailable or "unavailable")
    else:
        a, b = r.headline_a, r.headline_b
        rows = [
            ["final (step)", f"{fmt(a['final'], precision)} ({fmt_step(a['final_step'])})",
             f"{fmt(b['final'], precision)} ({fmt_step(b['final_step'])})",
             fmt_delta(b["final"] - a["final"], precision)],
            ["best (step)", f"{fmt(a['best'], precision)} ({fmt_step(a['best_step'])})",
             f"{fmt(b['best'], precision)} ({fmt_step(b['best_step'])})",
             fmt_delta(b["best"] - a["best"], precision)] if r.goal else
            ["best (step)", "— (direction unknown)", "— (direction unknown)", "—"],
            ["last-10%-mean", fmt(a["last10_mean"], precision), fmt(b["last10_mean"], precision),
             fmt_delta(b["last10_mean"] - a["last10_mean"], precision)],
        ]
        out += md_table(["metric", "A", "B", "Δ (B − A)"], rows)
        if r.lengths_differ:
            out.append(f"**Unequal lengths:** {r.lengths_differ}.")
        shared = set(r.available_metrics.get("A", [])) & set(r.available_metrics.get("B", []))
        if len(shared) > 1:
            out.append(f"{len(shared) - 1} other shared metrics: `rundiff compare` tables them, "
                       "`--metric` makes one the headline.")
    out += ["", "## Stability"]
    st = r.stability
    for label in ("A", "B"):
        g = st["grad_norm"].get(label, {})
        if not g.get("key"):
            out.append(f"- grad-norm {label}: not logged")
            continue
        spikes = g["spikes"]
        if spikes:
            steps = ", ".join(fmt_step(s["step"]) for s in spikes[:MAX_SPIKES_SHOWN])
            more = f" (+{len(spikes) - MAX_SPIKES_SHOWN} more)" if len(spikes) > MAX_SPIKES_SHOWN else ""
            out.append(f"- grad-norm {label} (`{g['key']}`): {len(spikes)} spike(s) at step {steps}{more}")
        else:
            out.append(f"- grad-norm {label} (`{g['key']}`): no spikes in {g['points']} points")
    out.append(f"- lr schedule: {st['lr']}")
    ea, eb = st["events"]["A"], st["events"]["B"]
    out.append(
        "- events: A " + ", ".join(f"{k} {v}" for k, v in ea.items())
        + "; B " + ", ".join(f"{k} {v}" for k, v in eb.items())
    )
    out += [f"- **{flag}**" for flag in st["flags"][:MAX_FLAGS]]
    if len(st["flags"]) > MAX_FLAGS:
        out.append(f"- … {len(st['flags']) - MAX_FLAGS} more findings (--format json lists all)")
    out += ["", f"## Variance ({r.statistic} per seed)"]
    if r.variance_a is None or r.variance_b is None:
        out.append("unavailable")
    else:
        for label, v in (("A", r.variance_a), ("B", r.variance_b)):
            out.append(f"- {label}: N={v.n}, mean={fmt(v.mean, precision)}, σ={fmt(v.std, precision)}")
        out.append(f"- pooled σ: {fmt(r.pooled_sigma, precision)}")
        out.append(f"- |Δ|: {fmt(r.abs_delta, precision)}")
        inside = "—" if r.outside_2sigma is None else ("outside" if r.outside_2sigma else "inside")
        two_sigma = 2 * r.pooled_sigma if math.isfinite(r.pooled_sigma) else math.nan
        out.append(f"- |Δ| vs 2σ ({fmt(two_sigma, precision)}): {inside}")
    out += ["", "## Verdict"]
    if r.verdict_note:
        out.append(f"_{r.verdict_note}_  ")
    if r.lengths_differ:
        out.append(f"_unequal lengths: {r.lengths_differ.split(':')[0]} (see the headline)_  ")
    out.append(r.verdict)
    return "\n".join(out) + "\n"
