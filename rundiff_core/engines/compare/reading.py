"""Phase 10 of a comparison: the reading — every table as a metric's comparison, what the text
shows, and the sentences that close it."""

from __future__ import annotations

from collections.abc import Sequence

from ..arms import Arm
from ..directions import declared_headline
from ..metricnames import NameResolution
from ..selection import is_glob, natural_key
from .alignment import Table
from .axis import _Axis
from .curves import _display_curves
from .keys import KeyChoice
from .prose import _conclusion, _describe_mapped, trend_lines
from .request import Request
from .result import ArmInfo, CompareResult, MetricComparison, Trend
from .selection import select
from .series import Loaded
from .student import Student

_SECTION_ORDER = {"downstream": 1, "proxy": 0, "diagnostic": 2}


def read_out(req: Request, keys: KeyChoice, names: NameResolution, student: Student,
             tables: Sequence[Table], trends: Sequence[list[Trend]], loaded: Loaded, axis: _Axis,
             *, align: str, last_k: int, curves: bool, show_all: bool) -> CompareResult:
    """The result: metrics in section order, the rows the text shows, the closing sentences."""
    si, labels = student.index, req.labels
    comparisons = [_comparison(t, tr, names) for t, tr in zip(tables, trends, strict=True)]
    comparisons.sort(key=lambda c: (_SECTION_ORDER.get(c.group, 3), natural_key(c.metric)))
    # Declared names are always rows: --metric, --proxy/--downstream names, rundiff.toml names.
    in_project = [p for names_ in req.rules.project.values() for p in names_ if not is_glob(p)]
    explicit = list(dict.fromkeys([*keys.declared, *req.rules.explicit_names(), *in_project]))
    baselines = [labels[i] for i in range(len(req.arms)) if i != si]
    shown, fams = select(comparisons, explicit, baselines)
    infos = [_arm_info(a, labels[i], "student" if i == si else "baseline", req.running[i],
                       student.current[i]) for i, a in enumerate(req.arms)]
    lead = keys.declared[0] if keys.declared else None
    if lead is None:  # the metric the runs' framework picks its best model by, when compared
        found = declared_headline(req.runs, student.metrics)
        lead = found[0] if found else None
    result = CompareResult(
        student=infos[si],
        baselines=[info for i, info in enumerate(infos) if i != si],
        student_reason=student.reason,
        x_axis=axis.axis,
        x_label=axis.label(),
        x_keys=dict(loaded.x_keys),
        current_x=student.x,
        align=align,
        last_k=last_k,
        metrics=comparisons,
        mapped=_describe_mapped(names, student.metrics, req.arms, labels),
        suggestions=list(names.suggestions),
        not_compared=student.not_compared,
        conclusion=[],
        warnings=list(dict.fromkeys(loaded.warnings)),
        project_file=req.rules.project_file,
        shown=shown,
        families=fams,
        skipped=student.skipped,
        show_all=show_all,
        headline=lead,
    )
    result.trend_lines = trend_lines(result)
    result.conclusion = _conclusion(result)
    if curves:
        result.curves, result.bands = _display_curves(req.arms, labels, si, student.metrics,
                                                      loaded.series)
    return result


def _comparison(t: Table, trends: list[Trend], names: NameResolution) -> MetricComparison:
    return MetricComparison(
        metric=t.metric, group=t.decision.group, group_source=t.decision.source,
        group_reason=t.decision.reason, goal=t.direction.goal, state=t.state, target=t.target,
        keys=dict(names.keys[t.metric]), rows=t.rows, trends=trends, note=t.note,
        direction=t.direction.to_dict(),
    )


def _arm_info(arm: Arm, label: str, role: str, running: bool, current_x: float) -> ArmInfo:
    return ArmInfo(
        label=label, role=role, address=arm.address,
        status="running" if running else arm.primary.status, n_seeds=len(arm.seeds),
        single_seed=len(arm.seeds) == 1, current_x=current_x,
        seeds=[{"name": r.name, "address": r.address, "run_id": r.run_id, "adapter": r.adapter,
                "seed": r.seed, "status": r.status} for r in arm.seeds],
        members=arm.members, how=arm.how,
    )
