"""Result objects of the Python API: one engine result, four ways to read it.

Every result keeps the engine's own object (`.raw`) and offers `to_dict()` (what the CLI prints
with `--format json`), `to_frame()` (a tidy pandas frame, one row per cell), `to_markdown()` (what
the CLI prints) and Jupyter's `_repr_markdown_` / `_repr_html_`. Nothing here prints or writes.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _bridge

if TYPE_CHECKING:
    import pandas as pd

_STYLE = ("<style>.rundiff-result table{border-collapse:collapse;margin:.4em 0}"
          ".rundiff-result th,.rundiff-result td{border:1px solid #ccc;padding:2px 6px;"
          "text-align:left}</style>")


_EMPHASIS = re.compile(r"<p>_(.+)_</p>")
_FOOTNOTE = re.compile(r"\[\^(\d+)\]:?")
_CODE = re.compile(r"`([^`<>]+)`")
_STRONG = re.compile(r"\*\*([^*<>]+)\*\*")


def notebook_html(markdown: str) -> str:
    """The report's Markdown as HTML, with the spans rundiff writes that the core's small
    converter leaves as text: `_emphasis_` paragraphs, `[^N]` footnote marks, code, bold."""
    body = _EMPHASIS.sub(r"<p><em>\1</em></p>", _bridge.markdown_to_html(markdown))
    body = _FOOTNOTE.sub(r"<sup>\1</sup>", body)
    body = _CODE.sub(r"<code>\1</code>", _STRONG.sub(r"<strong>\1</strong>", body))
    return f'<div class="rundiff-result">{_STYLE}{body}</div>'


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=list(columns))


def _num(x: Any) -> float:
    """A number for a frame: None (JSON's missing) and non-numbers become NaN."""
    if isinstance(x, bool) or x is None:
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


@dataclass(repr=False)
class Result:
    """Base of every API result: `raw` is the engine's result object."""

    raw: Any
    precision: int = 4
    _markdown: str | None = field(default=None, init=False, repr=False)

    command = ""

    def to_dict(self) -> dict[str, Any]:
        """Exactly the report `rundiff <command> --format json` prints, as plain JSON values
        (sorted keys; NaN and ±inf as the strings "NaN", "inf", "-inf")."""
        return _bridge.as_json(self.raw.to_dict())

    def to_frame(self) -> pd.DataFrame:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def to_markdown(self) -> str:
        """What `rundiff <command>` prints (Markdown), cached."""
        if self._markdown is None:
            self._markdown = self._render_markdown()
        return self._markdown

    def _render_markdown(self) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return notebook_html(self.to_markdown())

    def __str__(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        return f"<rundiff.{type(self).__name__}: {self._headline()}>"

    def _headline(self) -> str:
        return f"rundiff {self.command}"


@dataclass(repr=False)
class DiffResult(Result):
    """`rundiff diff A B`: config diff, headline metric, seeds, stability and a strict verdict."""

    command = "diff"

    @property
    def verdict(self) -> str:
        """One of the four strict templates (`rundiff_core.engines.diff.VERDICTS`), without the
        " (preliminary)" mark; see `preliminary` and `verdict_line`."""
        return self.raw.verdict.removesuffix(" (preliminary)")

    @property
    def verdict_line(self) -> str:
        """The verdict as the report prints it (" (preliminary)" while a run is still going)."""
        return self.raw.verdict

    @property
    def preliminary(self) -> bool:
        return bool(self.raw.preliminary)

    @property
    def delta(self) -> float:
        """mean(B) − mean(A) of the per-seed statistic."""
        return float(self.raw.delta)

    @property
    def pooled_sigma(self) -> float:
        return float(self.raw.pooled_sigma)

    def _headline(self) -> str:
        return f"{self.raw.a_name} vs {self.raw.b_name} on {self.raw.metric}: {self.verdict_line}"

    def _render_markdown(self) -> str:
        return _bridge.diff_markdown(self.raw, self.precision)

    def to_frame(self) -> pd.DataFrame:
        """One row per number of the report: each arm's headline values (final, best,
        last10_mean, with the step behind each) and each seed's per-seed statistic."""
        r = self.raw
        rows: list[dict[str, Any]] = []
        for arm, h in (("A", r.headline_a), ("B", r.headline_b)):
            if not h:
                continue
            for stat, step in (("final", h["final_step"]), ("best", h["best_step"]),
                               ("last10_mean", h["last10_from_step"])):
                rows.append({"section": "headline", "arm": arm, "run": h["run"],
                             "address": h["address"], "seed": None, "metric": r.metric,
                             "statistic": stat, "value": float(h[stat]), "step": float(step),
                             "n_points": int(h["n_points"])})
        for arm, var in (("A", r.variance_a), ("B", r.variance_b)):
            for s in var.samples if var else ():
                rows.append({"section": "seed", "arm": arm, "run": s.run, "address": s.address,
                             "seed": s.seed, "metric": r.metric, "statistic": r.statistic,
                             "value": float(s.value), "step": float(s.step),
                             "n_points": int(s.n_points)})
        return _frame(rows, ("section", "arm", "run", "address", "seed", "metric", "statistic",
                             "value", "step", "n_points"))


@dataclass(repr=False)
class CompareResult(Result):
    """`rundiff compare ADDR…`: every baseline sliced at the student's current step."""

    trace: bool = False
    smooth: float = 0.0
    command = "compare"

    @property
    def student(self) -> str:
        return self.raw.student.label

    @property
    def step(self) -> float:
        """The student's current x: where every baseline was read."""
        return float(self.raw.current_x)

    @property
    def conclusion(self) -> list[str]:
        return list(self.raw.conclusion)

    def _headline(self) -> str:
        return (f"{len(self.raw.baselines)} baseline(s) at {self.raw.x_label} {self.step:g} of "
                f"student {self.student}, {len(self.raw.metrics)} metric(s)")

    def _render_markdown(self) -> str:
        return _bridge.compare_markdown(self.raw, self.precision, self.trace)

    def to_frame(self) -> pd.DataFrame:
        """One row per run per metric: the arm's row (value, σ, N, Δ vs student) and the
        run's own cell — the logged key, the target x, the step actually used and how."""
        r = self.raw
        rows: list[dict[str, Any]] = []
        for m in r.metrics:
            for row in m.rows:
                base = {"metric": m.metric, "group": m.group, "goal": m.goal,
                        "target": float(m.target), "role": row.role, "arm": row.arm,
                        "state": row.state, "arm_value": float(row.value),
                        "arm_std": float(row.std), "arm_n": int(row.n), "delta": float(row.delta),
                        "student_better": row.student_better}
                cells = row.cells or [None]
                for c in cells:
                    rows.append({**base,
                                 "run": c.run if c else None, "address": c.address if c else None,
                                 "run_id": c.run_id if c else None, "seed": c.seed if c else None,
                                 "key": c.key if c else None,
                                 "value": float(c.value) if c else math.nan,
                                 "x_used": float(c.x_used) if c else math.nan,
                                 "step_used": float(c.step_used) if c else math.nan,
                                 "method": c.method if c else row.method})
        return _frame(rows, ("metric", "group", "goal", "target", "role", "arm", "state",
                             "arm_value", "arm_std", "arm_n", "delta", "student_better", "run",
                             "address", "run_id", "seed", "key", "value", "x_used", "step_used",
                             "method"))

    def figures(self) -> list[Any]:
        """One plotly figure per compared metric (needs `rundiff[plots]`)."""
        from ._plotly import plotly_figures

        return plotly_figures(_bridge.compare_figures(self.raw, self.smooth))

    def to_html(self) -> str:
        """The self-contained page `rundiff compare --html FILE` writes (plotly.js inline)."""
        return _bridge.compare_page(self.raw, self.precision, self.smooth, self.trace)

    def _repr_html_(self) -> str:
        body = super()._repr_html_()
        try:
            figures = self.figures()
        except Exception as exc:  # plots are extra: the tables stand without them
            note = html.escape(f"plots unavailable: {exc}")
            return body.replace("</div>", f"<p><em>{note}</em></p></div>", 1)
        from ._plotly import figures_html

        return body[: -len("</div>")] + figures_html(figures) + "</div>"


@dataclass(repr=False)
class RankResult(Result):
    """`rundiff rank SRC…`: groups ranked at the latest step all runs reached."""

    command = "rank"

    @property
    def best(self) -> str | None:
        """The best group on the primary (first) metric."""
        return self.raw.metrics[0].best if self.raw.metrics else None

    def _headline(self) -> str:
        return f"{self.raw.n_runs} run(s) in {self.raw.n_groups} group(s); best: {self.best}"

    def _render_markdown(self) -> str:
        return _bridge.rank_markdown(self.raw, self.precision)

    def to_frame(self) -> pd.DataFrame:
        """One row per run per ranked metric: the group's rank, mean ± σ, CI and test, and the
        run's own value at the common step."""
        rows: list[dict[str, Any]] = []
        for m in self.raw.metrics:
            for rank, g in enumerate(m.order, start=1):
                base = {"metric": m.metric, "goal": m.goal, "step": float(m.step), "rank": rank,
                        "group": g.label, "mean": float(g.mean), "std": float(g.std), "n": g.n,
                        "ci_low": _num(g.ci[0]), "ci_high": _num(g.ci[1]),
                        "p_adjusted": _num(m.p_adjusted.get(g.label)),
                        "top_group": g.label in m.top_group}
                for p in g.points:
                    rows.append({**base, "run": p.run, "address": p.address, "run_id": p.run_id,
                                 "value": float(p.value), "step_used": float(p.step_used),
                                 "method": p.method})
        return _frame(rows, ("metric", "goal", "step", "rank", "group", "mean", "std", "n",
                             "ci_low", "ci_high", "p_adjusted", "top_group", "run", "address",
                             "run_id", "value", "step_used", "method"))


@dataclass(repr=False)
class AblateResult(Result):
    """`rundiff ablate --baseline B SRC…`: changed keys and same-step deltas vs the baseline."""

    command = "ablate"

    def _headline(self) -> str:
        return f"{len(self.raw.ablations)} ablation(s) vs {self.raw.baseline}"

    def _render_markdown(self) -> str:
        return _bridge.ablate_markdown(self.raw, self.precision)

    def to_frame(self) -> pd.DataFrame:
        """One row per ablation per metric: baseline and ablation at the common step, Δ, SE, p."""
        rows: list[dict[str, Any]] = []
        for a in self.raw.ablations:
            changes = "; ".join(f"{c.key}: {c.old!r} → {c.new!r}" for c in a.changes)
            for e in a.effects:
                rows.append({"ablation": a.label, "changes": changes, "metric": e.metric,
                             "goal": e.goal, "step": float(e.step), "baseline": float(e.baseline),
                             "value": float(e.value), "delta": float(e.delta),
                             "relative": float(e.relative), "se": float(e.se), "p": float(e.p),
                             "n_baseline": e.n_baseline, "n_ablation": e.n_ablation,
                             "improves": e.improves, "impact": float(a.impact)})
        return _frame(rows, ("ablation", "changes", "metric", "goal", "step", "baseline", "value",
                             "delta", "relative", "se", "p", "n_baseline", "n_ablation",
                             "improves", "impact"))


@dataclass(repr=False)
class TrajectoriesResult(Result):
    """`rundiff trajectories A B…`: the per-task behavioural diff, kept in memory."""

    runs: list[Any] = field(default_factory=list)
    samples: int = 1
    generated: str = ""
    command_line: str = ""
    command = "trajectories"

    @property
    def pairs(self) -> list[Any]:
        return list(self.raw)

    @property
    def verdicts(self) -> list[str]:
        """Each pair's "is this gap RL-shaped?" verdict text."""
        return [p.summary["verdict"]["text"] for p in self.raw]

    def _headline(self) -> str:
        return "; ".join(f"{p.baseline.label} vs {p.candidate.label}: {p.summary['verdict']['label']}"
                         for p in self.raw)

    def to_dict(self) -> dict[str, Any]:
        """The matrix document `--format json` prints, without its `files` (nothing is written)."""
        doc = _bridge.trajectories_document(self.runs, self.raw, "", self.command_line)
        return _bridge.as_json(doc)

    def _render_markdown(self) -> str:
        """The full report (report.md of the CLI's output folder)."""
        return _bridge.trajectories_markdown(self.runs, self.raw, self.samples, self.generated,
                                             self.command_line)

    def summary(self) -> str:
        """The one-screen summary the CLI prints (without the report path)."""
        return "\n".join(_bridge.trajectories_summary(self.raw)) + "\n"

    def to_frame(self) -> pd.DataFrame:
        """tasks.csv as a frame: one row per task per pair, every signal the diff computed."""
        rows, columns = _bridge.trajectories_task_rows(self.raw)
        return _frame(rows, columns)
