"""What a comparison returns: cells, rows, trends and the whole result (stable JSON shape)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..jsonable import jsonable

SCHEMA = "rundiff.compare/1"
STATES = ("ok", "not yet", "not reached", "not logged")
TREND_STATUSES = (
    "on track to catch up", "gap widening", "gap steady", "level", "converged", "ahead, gap widening",
    "ahead, gap narrowing", "ahead, gap steady", "insufficient data",
)


@dataclass
class Cell:
    """One run's value at one target x, and exactly where it came from."""

    run: str
    address: str
    run_id: str
    adapter: str
    seed: int | None
    key: str | None
    target: float
    method: str  # exact | nearest | interpolate | not reached | not started | not logged | empty
    value: float
    x_used: float
    step_used: float  # the logged step behind the value (interpolated for method=interpolate)
    bracket_steps: tuple[float, float] | None = None


@dataclass
class Row:
    """An arm's line in a metric table: the student's value, or a baseline's and its Δ."""

    role: str  # "student" | "baseline"
    arm: str
    state: str  # ok | not yet | not reached | not logged
    value: float
    std: float
    n: int  # seeds that contributed
    n_seeds: int
    single_seed: bool
    x_used: list[float]  # distinct logged x used (one per contributing seed, deduplicated)
    method: str  # exact | nearest | interpolate | mixed | the state
    delta: float  # this run − student (NaN when either is missing)
    student_better: bool | None
    note: str | None
    cells: list[Cell]


@dataclass
class Trend:
    """The gap between student and one baseline over the student's last K points."""

    student: str
    baseline: str
    status: str
    text: str
    k: int
    points: list[dict[str, float]]  # x, student, baseline, gap (= student − baseline)
    gap_last: float
    slope: float  # d(gap)/dx, raw units
    projected_x: float | None
    student_last5: list[tuple[float, float]]
    student_converged: bool


@dataclass
class MetricComparison:
    metric: str
    group: str
    group_source: str
    group_reason: str
    goal: str | None  # None: direction unknown — no better, worse, ahead or behind
    state: str  # ok | not yet | not logged (the student's side)
    target: float  # the x every baseline was sliced at (NaN when the student has no point)
    keys: dict[str, str]  # run address → logged key
    rows: list[Row]
    trends: list[Trend]
    note: str | None = None
    direction: dict[str, Any] = field(default_factory=dict)  # goal, source, reason


@dataclass
class ArmInfo:
    label: str
    role: str
    address: str
    status: str
    n_seeds: int
    single_seed: bool
    current_x: float
    seeds: list[dict[str, Any]]
    members: str = ""  # the arm named by its runs: `version_11…13 (3 seeds)`
    how: str = ""  # the arm rule that grouped them (docs/diff.md, Arms)


@dataclass
class Curve:
    """Display data for one run of one metric (never used for statistics)."""

    arm: str
    role: str
    run: str
    x: np.ndarray
    y: np.ndarray


@dataclass
class Band:
    """A seed group's mean ± σ on the primary seed's x grid (display only)."""

    arm: str
    role: str
    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n: np.ndarray


@dataclass
class FamilySummary:
    """Keys sharing a pattern (`val/ngram_<n>`) against one baseline, as one row."""

    family: str
    group: str
    goal: str | None  # min | max | mixed; None: direction unknown (no better/worse counted)
    baseline: str
    members: list[str]  # natural order
    compared: int  # members with a value on both sides
    student_better: int
    baseline_better: int
    ties: int
    median_delta: float  # baseline − student, over compared members
    min_delta: float
    max_delta: float
    worst: str | None  # the member furthest against the student
    worst_delta: float
    steps: list[float]  # distinct x every member was read at


@dataclass
class Skipped:
    """A metric left out of the comparison, and why (grouped by `cause` in the text)."""

    metric: str
    cause: str  # diagnostic | not logged by the student | no baseline logs it
    detail: str


@dataclass
class CompareResult:
    student: ArmInfo
    baselines: list[ArmInfo]
    student_reason: str
    x_axis: str
    x_label: str
    x_keys: dict[str, str]
    current_x: float
    align: str
    last_k: int
    metrics: list[MetricComparison]
    mapped: list[str]
    suggestions: list[str]
    not_compared: list[str]
    conclusion: list[str]
    warnings: list[str]
    project_file: str | None = None
    shown: list[str] = field(default_factory=list)  # metrics the text shows as rows
    families: list[FamilySummary] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    trend_lines: list[str] = field(default_factory=list)  # shown metrics, one line per run pair
    show_all: bool = False
    headline: str | None = None  # the first --metric, else the metric the runs declare their best by
    curves: dict[str, list[Curve]] = field(default_factory=dict, repr=False)
    bands: dict[str, list[Band]] = field(default_factory=dict, repr=False)

    def group(self, name: str) -> list[MetricComparison]:
        return [m for m in self.metrics if m.group == name]

    def shown_group(self, name: str) -> list[MetricComparison]:
        """A section's metrics the text shows as rows (all of them with `show_all`)."""
        keep = set(self.shown)
        return [m for m in self.group(name) if self.show_all or m.metric in keep]

    @property
    def hidden(self) -> int:
        """Compared metrics not shown as their own row."""
        return 0 if self.show_all else len(self.metrics) - len(set(self.shown))

    def to_dict(self) -> dict[str, Any]:
        """Stable JSON shape (`schema` names its version); plot data is not included."""
        d = jsonable(self, omit=("curves", "bands"))  # the plot data is never converted
        d["schema"] = SCHEMA
        return d
