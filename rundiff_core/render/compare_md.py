"""The compare report as Markdown (terminal default) and the table model the HTML report reuses.

One wide table per section (proxy, downstream, diagnostic): a row per shown metric, a column per
run or seed group (`value ± σ (N=…)`), a Δ column per baseline. Traceability comes from the legend
above the tables (every run's full name, address and run id) and the step stated once per table;
only cells read differently (nearest step, interpolated, a seed missing) get a footnote. Families
of keys get one summary row each; every other metric is one `--all` away, every cell in JSON.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..engines.compare import Cell, CompareResult, FamilySummary, Row
from ..engines.naming import found_in
from . import decimals, fmt, fmt_pm, fmt_step, md_table

GROUP_TITLES = {
    "proxy": "Proxy metrics (track convergence; not the target)",
    "downstream": "Downstream metrics (the target)",
    "diagnostic": "Diagnostics (not quality metrics)",
}
ARROW = {"min": "↓", "max": "↑", "mixed": "↕"}
NAMES_CAP = 6  # metric names listed in one note before "and N more"
FAMILY_ROWS = 8  # families summarised per section before "and N more families"


@dataclass
class Table:
    """One section: its metric rows, its family rows, and the notes that belong to it."""

    group: str
    title: str
    header: list[str]
    rows: list[list[str]]
    trends: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    family_header: list[str] = field(default_factory=list)
    family_rows: list[list[str]] = field(default_factory=list)
    step: str = ""  # "every cell at step 199" / "cells at step 11 unless marked @"


@dataclass
class Report:
    """Everything both the Markdown and the HTML report print, already formatted."""

    title: str
    preamble: list[str]
    tables: list[Table]
    sources: list[str]  # footnotes: only cells read differently
    conclusion: list[str]
    warnings: list[str]
    notes: list[str] = field(default_factory=list)
    more: str = ""
    legend: str = ""


def num(x: float, precision: int = 4) -> str:
    """Fixed decimals so a column lines up (3.0000, not 3); `fmt` for tiny, huge and non-finite."""
    if isinstance(x, float) and math.isfinite(x) and (x == 0 or 10 ** -precision <= abs(x) < 1e6):
        return f"{x:.{decimals(x, precision)}f}"
    return fmt(x, precision)


def signed(x: float, precision: int = 4) -> str:
    text = num(x, precision)
    return text if text.startswith("-") or text in ("NaN", "—") else f"+{text}"


def names_list(names: list[str], cap: int = NAMES_CAP) -> str:
    """`a, b, c and 14 more` — a note lists each metric once, shortened with a count."""
    head = ", ".join(names[:cap])
    return head + (f" and {len(names) - cap} more" if len(names) > cap else "")


def _cell_source(c: Cell, xname: str) -> str:
    if c.method in ("not logged", "empty"):
        return f"{c.address} (run id {c.run_id}): {c.method}"
    if c.method in ("not reached", "not started"):
        edge = "last" if c.method == "not reached" else "first"
        return (f"{c.address} (run id {c.run_id}), key {c.key}: {c.method} at {xname} "
                f"{fmt_step(c.target)} ({edge} point at {fmt_step(c.x_used)})")
    how = {"exact": "exact", "nearest": f"nearest to {fmt_step(c.target)}",
           "interpolate": "interpolated"}[c.method]
    step = (f"step {fmt_step(c.step_used)}" if c.bracket_steps is None else
            f"step {fmt_step(c.step_used)} between logged steps {fmt_step(c.bracket_steps[0])} and "
            f"{fmt_step(c.bracket_steps[1])}")
    x = "" if xname == "step" else f"{xname} {fmt_step(c.x_used)}, "
    return f"{c.address} (run id {c.run_id}), key {c.key}, {x}{step} ({how})"


def row_source(row: Row, xname: str) -> str:
    """The provenance of a row: one cell, or every seed of a group."""
    if len(row.cells) == 1:
        return _cell_source(row.cells[0], xname)
    return f"{len(row.cells)} seeds: " + "; ".join(_cell_source(c, xname) for c in row.cells)


def _odd(row: Row) -> bool:
    """A cell read differently from an exact point at the target (it gets a footnote)."""
    if row.state != "ok":
        return row.note is not None
    return (row.method == "interpolate" or row.note is not None
            or (row.method in ("nearest", "mixed") and any(x != c.target for c in row.cells
                                                           for x in [c.x_used]
                                                           if c.method == "nearest")))


def _footnote(row: Row, target: float, xname: str) -> str:
    """Why a cell is read differently, without the metric, so arms read alike share one note."""
    if row.state != "ok":
        return f"{row.arm}: {row.state} — {row.note}"
    parts = []
    for c in row.cells:
        who = "" if len(row.cells) == 1 else f"seed {c.run_id}: "
        if c.method == "nearest" and c.x_used != c.target:
            parts.append(f"{who}no point at {xname} {fmt_step(c.target)}, the nearest logged "
                         f"{xname} {fmt_step(c.x_used)} is used")
        elif c.method == "interpolate":
            lo, hi = c.bracket_steps or (math.nan, math.nan)
            parts.append(f"{who}interpolated at {xname} {fmt_step(c.target)} between logged "
                         f"steps {fmt_step(lo)} and {fmt_step(hi)}")
    if row.note:
        parts.append(row.note)
    return f"{row.arm}: " + "; ".join(parts)


def _value(row: Row, precision: int) -> str:
    if row.state != "ok":
        return row.state
    if row.single_seed:
        return num(row.value, precision)
    if not math.isfinite(row.std):
        return f"{num(row.value, precision)} ± n/a (N={row.n})"
    return f"{fmt_pm(row.value, row.std, precision)} (N={row.n})"


def _delta(row: Row, student: Row, precision: int) -> str:
    if row.state != "ok" or student.state != "ok":
        return "n/a"
    mark = "" if row.student_better is None else (" (student better)" if row.student_better
                                                    else " (student worse)")
    return signed(row.delta, precision) + mark


def _legend(r: CompareResult, trace: bool = False) -> list[str]:
    """Every run by name and run id, where they are in one line (docs/names.md); with `trace`
    (--verbose) every address in full — the traceability of every cell."""
    out = []
    for info in [r.student, *r.baselines]:
        role = f" (student: {r.student_reason})" if info.role == "student" else ""
        if info.n_seeds == 1:
            seed = info.seeds[0]
            where = (f"`{seed['address']}` · " if trace else "") + f"run id {seed['run_id']} · single-seed"
        else:
            ids = ", ".join(str(sd["run_id"]) for sd in info.seeds)
            given = info.address.rstrip("/")
            apart = [sd["address"] for sd in info.seeds if given not in str(sd["address"])]
            where = (f"{info.n_seeds} seeds" + (f" given as `{info.address}`" if trace else "")
                     + f" · run ids {ids}"
                     + (f" ({', '.join(f'`{a}`' for a in apart)})" if apart and trace else ""))
        members = info.members or (str(info.seeds[0]["name"]) if info.n_seeds == 1 else "")
        who = f" = {members}" if members and members != info.label else ""
        out.append(f"**{info.label}**{who}{role} — {where} · {info.status}")
    return out


def _shared_step(rows: list[Row]) -> float:
    xs = Counter(x for row in rows if row.state == "ok" for x in row.x_used)
    return xs.most_common(1)[0][0] if xs else math.nan


def _section(r: CompareResult, group: str, precision: int, trace: bool,
             sources: list[str]) -> Table:
    metrics = r.shown_group(group)
    arms = [r.student.label, *[b.label for b in r.baselines]]
    header = ["metric", f"{r.student.label} (student)", *arms[1:]]
    header += [f"Δ {b}" for b in arms[1:]] + (["source"] if trace else [])
    all_rows = [row for m in metrics for row in m.rows]
    fams = [f for f in r.families if f.group == group]
    step = _shared_step(all_rows)
    fam_steps = {x for f in fams for x in f.steps}
    if not math.isfinite(step) and len(fam_steps) == 1:
        step = fam_steps.pop()
    rows: list[list[str]] = []
    for m in metrics:
        student = m.rows[0]
        by_arm = {row.arm: row for row in m.rows}
        cells, deltas = [], []
        for label in arms:
            row = by_arm.get(label)
            if row is None:
                cells.append("—")
                continue
            text = _value(row, precision)
            if row.state == "ok" and row.x_used and any(x != step for x in row.x_used):
                text += " @ " + "/".join(fmt_step(x) for x in row.x_used)
            if not trace and _odd(row):
                note = _footnote(row, m.target, r.x_label)
                if note not in sources:
                    sources.append(note)
                text += f" [^{sources.index(note) + 1}]"
            cells.append(text)
            if row.role != "student":
                deltas.append(_delta(row, student, precision))
        line = [f"{m.metric} {ARROW.get(m.goal, '')}".rstrip(), *cells, *deltas]
        if trace:
            line.append(" | ".join(f"{row.arm}: {row_source(row, r.x_label)}" for row in m.rows)
                        .replace("|", "/"))
        rows.append(line)
    odd_steps = any(row.state == "ok" and any(x != step for x in row.x_used) for row in all_rows)
    odd_steps = odd_steps or any(x != step for f in fams for x in f.steps)
    where = (f"{r.x_label} {fmt_step(step)}" if math.isfinite(step) else "")
    step_text = ("" if not where else f"cells at {where} unless marked @" if odd_steps
                 else f"every cell at {where}")
    fam_header: list[str] = []
    fam_rows: list[list[str]] = []
    notes: list[str] = []
    if fams:
        multi = len(r.baselines) > 1
        fam_header = ["family", "metrics", *(["vs"] if multi else []), "student better",
                      "baseline better" if multi else f"{r.baselines[0].label} better",
                      "median Δ", "Δ range", "worst for student"]
        names = list(dict.fromkeys(f.family for f in fams))
        keep = set(names[:FAMILY_ROWS]) if not r.show_all else set(names)
        fam_rows = [_family_row(f, multi, precision) for f in fams if f.family in keep]
        if len(keep) < len(names):
            rest = [n for n in names if n not in keep]
            notes.append(f"{len(rest)} more families ({names_list(rest, 3)}): `--all` shows them")
    if group == "downstream" and not r.group("downstream"):
        notes.append("No downstream metric is compared (none is logged under a downstream name, "
                     "declared with --downstream / rundiff.toml, or asked for): only proxy "
                     "metrics can be compared.")
    return Table(group, GROUP_TITLES[group], header, rows, [], notes, fam_header, fam_rows, step_text)


def _family_row(f: FamilySummary, multi: bool, precision: int) -> list[str]:
    name = f"{f.family} {ARROW.get(f.goal, '')}".rstrip()
    if not f.compared:
        return [name, str(len(f.members)), *([f.baseline] if multi else []), "—", "—", "—", "—",
                "no same-step values"]
    at = "" if len(f.steps) == 1 else f" ({len(f.steps)} steps)"
    worst = (f"{f.worst} ({signed(f.worst_delta, precision)})" if f.worst else "none behind")
    count = str(len(f.members)) + (f" ({f.compared} compared)" if f.compared < len(f.members) else "")
    if f.goal is None:  # no direction: Δ as numbers, no better, worse or worst
        return [name, count + at, *([f.baseline] if multi else []), "—", "—",
                signed(f.median_delta, precision),
                f"{signed(f.min_delta, precision)} … {signed(f.max_delta, precision)}",
                "direction unknown"]
    return [name, count + at, *([f.baseline] if multi else []), str(f.student_better),
            str(f.baseline_better), signed(f.median_delta, precision),
            f"{signed(f.min_delta, precision)} … {signed(f.max_delta, precision)}", worst]


def _notes(r: CompareResult) -> list[str]:
    """Notes grouped by cause; each lists its metrics once."""
    out = []
    causes: dict[str, list[str]] = {}
    for sk in r.skipped:
        causes.setdefault(sk.cause, []).append(sk.metric)
    wording = {
        "diagnostic": "Not compared, diagnostics (name them with --metric)",
        "not logged by the student": f"Not compared, not logged by the student {r.student.label} "
                                     "(name them with --metric)",
        "no baseline logs it": "Not compared, no baseline logs them",
        "no information": "Not compared, no information: the same value in every run (name them "
                          "with --metric)",
    }
    for cause, names in causes.items():
        out.append(f"{wording.get(cause, cause)}: {names_list(names)}")
    earlier = [m for m in r.metrics if m.state == "ok" and m.target < r.current_x]
    if earlier:
        by_step: dict[float, list[str]] = {}
        for m in earlier:
            by_step.setdefault(m.target, []).append(m.metric)
        where = "; ".join(f"{names_list(v)} at {r.x_label} {fmt_step(k)}" for k, v in by_step.items())
        out.append(f"Read where the student last logged them (before its current {r.x_label} "
                   f"{fmt_step(r.current_x)}): {where}")
    unknown = [m.metric for m in r.metrics if m.goal is None and m.state == "ok"]
    if unknown:  # named by family where a family holds them (`val/ngram_<n>`)
        family_of = {m: f.family for f in r.families for m in f.members}
        shown = list(dict.fromkeys(family_of.get(m, m) for m in unknown))
        example = shown[0].replace("<n>", "*")
        example = f"'{example}=max'" if "*" in example else f"{example}=max"
        out.append(f"Direction unknown for {names_list(shown)}: no better or worse is claimed; "
                   f"pass --goal {example} or min")
    pending = [m.metric for m in r.metrics if m.state != "ok"]
    if pending:
        out.append(f"Not logged by the student yet (baselines read at {r.x_label} "
                   f"{fmt_step(r.current_x)}): {names_list(pending)}")
    if r.mapped:
        out.append("Mapped metric names: " + "; ".join(r.mapped[:NAMES_CAP])
                   + (f" and {len(r.mapped) - NAMES_CAP} more" if len(r.mapped) > NAMES_CAP else ""))
    if r.suggestions:
        out.append("Suggested (not applied): " + "; ".join(r.suggestions[:3]))
    if r.x_keys:
        out.append(f"x-axis keys: {', '.join(sorted(set(r.x_keys.values())))}")
    if r.project_file:
        out.append(f"Groups from {r.project_file} where declared; otherwise the heuristic")
    out += [f"Trend over the student's last {r.last_k} points, {line}" for line in r.trend_lines]
    return out


def _warnings(r: CompareResult, cap: int = 6) -> list[str]:
    """Fidelity notes grouped by their text, each naming its runs once."""
    grouped: dict[str, list[str]] = {}
    for w in r.warnings:
        run, sep, text = w.partition(": ")
        key, who = (text, run) if sep else (w, "")
        grouped.setdefault(key, [])
        if who and who not in grouped[key]:
            grouped[key].append(who)
    out = [f"{text} ({', '.join(runs)})" if runs else text for text, runs in grouped.items()]
    if len(out) > cap:
        out = out[:cap] + [f"… {len(out) - cap} more notes (--format json lists all)"]
    return out


def build_report(r: CompareResult, precision: int = 4, trace: bool = False) -> Report:
    """Format the result once; Markdown and HTML print the same words."""
    xname = r.x_label
    title = f"Same-{xname} comparison at {xname} {fmt_step(r.current_x)} — student: {r.student.label}"
    align = "nearest logged point" if r.align == "nearest" else "straight line between neighbours"
    legend = (f"Δ = run − student; every baseline is read at the student's {xname}, never at its own "
              f"end (missing points: {align}); ↓ lower is better, ↑ higher. Runs in "
              + found_in([str(sd["address"]) for i in [r.student, *r.baselines] for sd in i.seeds],
                         shared=True) + ".")
    sources: list[str] = []
    tables = []
    for group in ("proxy", "downstream", "diagnostic"):
        if group == "diagnostic" and not r.group(group):
            continue
        tables.append(_section(r, group, precision, trace, sources))
    more = ""
    if r.hidden:
        more = (f"{r.hidden} more metrics were compared (summarised per family or left out of the "
                f"headline): `--all` lists every one; `--format json` holds every cell.")
    return Report(title, _legend(r, trace), tables, sources, list(r.conclusion), _warnings(r), _notes(r),
                  more, legend)


def render_compare_markdown(r: CompareResult, precision: int = 4, trace: bool = False) -> str:
    rep = build_report(r, precision, trace)
    out = [f"# {rep.title}", "", rep.legend, ""]
    out += [f"- {line}" for line in rep.preamble]
    for t in rep.tables:
        out += ["", f"## {t.title}" + (f" — {t.step}" if t.step else ""), ""]
        if t.rows:
            out += md_table(t.header, t.rows)
        if t.family_rows:
            out += ([""] if t.rows else []) + md_table(t.family_header, t.family_rows)
        if not t.rows and not t.family_rows and not t.notes:
            out.append("_No metric of this group is compared._")
        for note in t.notes:
            out.append(f"_{note}_")
    if rep.more:
        out += ["", rep.more]
    if rep.sources:
        out += [""] + [f"[^{i}]: {s}" for i, s in enumerate(rep.sources, start=1)]
    if rep.notes or rep.warnings:
        out += ["", "## Notes", ""]
        out += [f"- {n}" for n in rep.notes]
        out += [f"- note: {w}" for w in rep.warnings]
    out += ["", "## Reading", ""]
    out += [" ".join(rep.conclusion)]
    return "\n".join(out) + "\n"
