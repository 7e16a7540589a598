"""The compare report as Markdown (terminal default) and the table model the HTML report reuses.

Columns follow DVC's diffs: metric | run | step used | value | Δ vs student. Proxy and downstream
metrics get separate tables. Every row is traceable: a footnote marker `[^n]` in the run cell points
at a Sources line (address, run id, key, step used, how it was aligned), or `--trace` puts the same
in a column. Run names are always the full names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..engines.compare import Cell, CompareResult, MetricComparison, Row
from . import fmt, fmt_step, md_table

GROUP_TITLES = {
    "proxy": "Proxy metrics (track convergence; not the target)",
    "downstream": "Downstream metrics (the target)",
    "diagnostic": "Diagnostics (not quality metrics)",
}


@dataclass
class Table:
    """One group's table: header, string cells, and the source line behind each row."""

    group: str
    title: str
    header: list[str]
    rows: list[list[str]]
    trends: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Everything both the Markdown and the HTML report print, already formatted."""

    title: str
    preamble: list[str]
    tables: list[Table]
    sources: list[str]
    conclusion: list[str]
    warnings: list[str]


def num(x: float, precision: int = 4) -> str:
    """Fixed decimals so a column lines up (3.0000, not 3); `fmt` for tiny, huge and non-finite."""
    if isinstance(x, float) and math.isfinite(x) and (x == 0 or 10 ** -precision <= abs(x) < 1e6):
        return f"{x:.{precision}f}"
    return fmt(x, precision)


def signed(x: float, precision: int = 4) -> str:
    text = num(x, precision)
    return text if text.startswith("-") or text in ("NaN", "—") else f"+{text}"


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


def _step_used(row: Row, target: float, align: str) -> str:
    if row.state != "ok":
        return "—"
    xs = row.x_used
    text = fmt_step(xs[0]) if len(xs) == 1 else f"{fmt_step(min(xs))}–{fmt_step(max(xs))}"
    if row.method == "interpolate":
        return f"{text} (interpolated)"
    if row.method in ("nearest", "mixed") and any(x != target for x in xs):
        return f"{text} (nearest to {fmt_step(target)})"
    return text


def _value(row: Row, precision: int) -> str:
    if row.state != "ok":
        return row.state + (f" ({row.note})" if row.note else "")
    if row.single_seed:
        return f"{num(row.value, precision)} (single-seed)"
    spread = num(row.std, precision) if math.isfinite(row.std) else "n/a"
    text = f"{num(row.value, precision)} ± {spread} (N={row.n})"
    return text + (f" — {row.note}" if row.note else "")


def _delta(row: Row, student: Row, precision: int) -> str:
    if row.role == "student":
        return "(student)"
    if row.state != "ok" or student.state != "ok":
        return "n/a"
    mark = "" if row.student_better is None else (" (student better)" if row.student_better
                                                    else " (student worse)")
    return signed(row.delta, precision) + mark


def build_report(r: CompareResult, precision: int = 4, trace: bool = False) -> Report:
    """Format the result once; Markdown and HTML print the same words."""
    xname = r.x_label
    s = r.student
    title = f"Same-{xname} comparison at {xname} {fmt_step(r.current_x)} — student: {s.label}"
    seeds = "single-seed" if s.single_seed else f"{s.n_seeds} seeds"
    pre = [f"Student: {s.label} — {_address_of(s)} ({s.status}; current {xname} "
           f"{fmt_step(s.current_x)}; {seeds}) — chosen as {r.student_reason}"]
    for b in r.baselines:
        seeds = "single-seed" if b.single_seed else f"{b.n_seeds} seeds"
        pre.append(f"Baseline: {b.label} — {_address_of(b)} ({b.status}; last {xname} "
                   f"{fmt_step(b.current_x)}; {seeds})")
    align = ("nearest — a baseline without a point at the student's step uses the nearest logged "
             "point" if r.align == "nearest" else
             "interpolate — a baseline without a point at the student's step is read on a straight "
             "line between the two logged points around it")
    pre.append(f"Every baseline is sliced at the student's {xname}, never at its own end. "
               f"x-axis: {xname}" + (f" (keys: {_keys(r.x_keys)})" if r.x_keys else "")
               + f"; align: {align}; the step actually used is shown. Δ vs student = run − student.")
    if r.mapped:
        pre.append("Mapped metric names: " + "; ".join(r.mapped))
    if r.suggestions:
        pre.append("Suggested (not applied): " + "; ".join(r.suggestions))
    if r.not_compared:
        pre.append("Not compared: " + "; ".join(r.not_compared))
    if r.project_file:
        pre.append(f"Groups from {r.project_file} where declared; otherwise the heuristic")

    sources: list[str] = []
    tables: list[Table] = []
    for group in ("proxy", "downstream", "diagnostic"):
        metrics = r.group(group)
        if not metrics and group == "diagnostic":
            continue
        header = ["metric", "run", f"{xname} used", "value", "Δ vs student"] + (["source"] if trace else [])
        rows: list[list[str]] = []
        trends: list[str] = []
        notes: list[str] = []
        for m in metrics:
            rows += _metric_rows(m, r, precision, trace, sources)
            trends += [f"{m.metric}: {t.text}" for t in m.trends]
            if m.note:
                notes.append(f"{m.metric}: {m.note}")
        if group == "downstream" and not metrics:
            notes.append("No downstream metric is logged (or declared with --downstream / "
                         "rundiff.toml): only proxy metrics can be compared.")
        tables.append(Table(group, GROUP_TITLES[group], header, rows, trends, notes))
    return Report(title, pre, tables, sources, list(r.conclusion), list(r.warnings))


def _address_of(info) -> str:  # noqa: ANN001 - ArmInfo
    if info.n_seeds == 1:
        return info.seeds[0]["address"]
    return f"given as {info.address}, seeds listed under Sources"


def _keys(keys: dict[str, str]) -> str:
    distinct = sorted(set(keys.values()))
    return ", ".join(distinct)


def _metric_rows(m: MetricComparison, r: CompareResult, precision: int, trace: bool,
                 sources: list[str]) -> list[list[str]]:
    out = []
    student = m.rows[0]
    for row in m.rows:
        source = row_source(row, r.x_label)
        if trace:
            run_cell = row.arm + (" (student)" if row.role == "student" else "")
        else:
            sources.append(source)
            run_cell = row.arm + (" (student)" if row.role == "student" else "") + f" [^{len(sources)}]"
        line = [f"{m.metric} ({m.goal})", run_cell, _step_used(row, m.target, r.align),
                _value(row, precision), _delta(row, student, precision)]
        if trace:
            line.append(source)
        out.append(line)
    return out


def render_compare_markdown(r: CompareResult, precision: int = 4, trace: bool = False) -> str:
    rep = build_report(r, precision, trace)
    out = [f"# {rep.title}", ""]
    out += [f"- {line}" for line in rep.preamble]
    if rep.warnings:
        out.append("")
        shown = rep.warnings[:6]
        out += [f"> note: {w}" for w in shown]
        if len(rep.warnings) > len(shown):
            out.append(f"> … {len(rep.warnings) - len(shown)} more notes (--format json lists all)")
    for t in rep.tables:
        out += ["", f"## {t.title}", ""]
        if t.rows:
            out += md_table(t.header, t.rows)
        for note in t.notes:
            out += ["", f"_{note}_"]
        if t.trends:
            out += ["", f"Trend over the student's last {r.last_k} points:"]
            out += [f"- {line}" for line in t.trends]
    if rep.sources:
        out += ["", "## Sources", ""]
        out += [f"[^{i}]: {s}" for i, s in enumerate(rep.sources, start=1)]
    out += ["", "## Reading", ""]
    out += rep.conclusion
    return "\n".join(out) + "\n"
