"""What the many-run commands share: loading with progress, arms (engines.arms), the common step,
values at that step, GPU hours and anomalies. Same honesty rules as `diff` and `compare`."""

from __future__ import annotations

import math
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import MetricNotFoundError
from ..model import Run
from .align import slice_at
from .arms import Grouping, arm_for_ref, arms_of, attach, label_arms, runs_apart
from .directions import GoalRules, vocabulary
from .primary import Choice, choose, skipped_text
from .selection import natural_sorted
from .stats import SPIKE_RULE, Spike, bootstrap_ci, sample_std, spike_episodes

KILL_EVENTS = {"kill", "killed", "oom", "out_of_memory", "crash", "crashed", "abort", "aborted", "preempted"}
GPU_KEYS = re.compile(r"(^|\.)(n_?gpus?|num_?gpus?|gpu_?count|gpus_per_node|world_size|devices)$", re.I)
RUNTIME_KEYS = ("_runtime", "runtime", "duration", "elapsed", "train_runtime", "wall_time")


def load_sources(
    sources: Sequence[str], *, progress: bool | None = None, histories: bool = True,
    arms: Grouping | None = None, named: set[str] | None = None,
) -> list[Run]:
    """Every run of every address, histories loaded on a small thread pool (the parsers release
    the GIL), with a rich progress bar on a terminal when there are many runs. With `arms`, an
    address naming one run brings the other seeds of its arm (engines.arms) too. `named` collects
    the addresses of the runs named one by one (not listed by a collection)."""
    from concurrent.futures import ThreadPoolExecutor

    from ..resolve import expand_stores, open_source

    # a bare folder no adapter claims stands for every store below it (rundiff_core.tree)
    opened = [(raw, open_source(raw)) for given in sources for raw in expand_stores(given)]
    refs: list[Any] = []
    for raw, src in opened:
        listed = src.list_runs()
        if named is not None and len(listed) == 1:
            named.add(listed[0].address)
        if arms is not None and arms.seeds and len(listed) == 1:
            refs += arm_for_ref(src, listed[0], arms, address=raw).seeds
        else:
            refs += [(src, ref) for ref in listed]
    show = (sys.stderr.isatty() if progress is None else progress) and len(refs) >= 20

    def load(item: Any) -> Run:
        if isinstance(item, Run):  # already loaded as a seed of a named run's arm
            run = item
        else:
            src, ref = item
            run = attach(src, ref, src.load_run(ref))
        if histories:
            run.history()
        return run

    # Only sources that declare `thread_safe = True` share a pool (clients and sqlite connections
    # of other adapters may not be safe across threads).
    parallel = len(refs) > 4 and all(getattr(src, "thread_safe", False) for _raw, src in opened)
    workers = min(4, os.cpu_count() or 1) if parallel else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(load, refs)
        if not show:
            return _unique(results)
        from rich.progress import Progress

        runs: list[Run] = []
        with Progress(transient=True) as bar:
            task = bar.add_task("loading runs", total=len(refs))
            for run in results:
                runs.append(run)
                bar.advance(task)
        return _unique(runs)


def _unique(runs: Iterable[Run]) -> list[Run]:
    """Each run once (two named seeds of one arm bring each other), in first-seen order."""
    seen: dict[str, Run] = {}
    for run in runs:
        seen.setdefault(run.address, run)
    return list(seen.values())


@dataclass
class Group:
    """One arm of a many-run command: its label (engines.arms' labeller) and its runs."""

    label: str
    runs: list[Run]
    how: str = "one run"
    #: the few parameters that tell this arm from the others (`Arm.differs`)
    differs: str = ""

    @property
    def n(self) -> int:
        return len(self.runs)


def seed_groups(runs: Sequence[Run], *, group_seeds: bool = True,
                grouping: Grouping | None = None, notes: list[str] | None = None,
                what: str = "ranked") -> list[Group]:
    """The runs' arms (engines.arms: declared siblings, else equal configs in one collection, else
    alone; `grouping` carries --group-by/--no-seeds), first-seen order, unique labels.

    When every run falls into one arm by the default rules, one group says nothing: the runs are
    taken one by one, and a note (appended to `notes`) says so."""
    if grouping is None:
        grouping = Grouping() if group_seeds else Grouping(seeds=False)
    elif not group_seeds:
        grouping = Grouping(seeds=False, rules=grouping.rules)
    arms = arms_of(runs, grouping)
    if grouping.seeds and not grouping.group_by and len(arms) == 1 and arms[0].n > 1:
        arms = runs_apart(arms, what)
        label_arms(arms, grouping)
        if notes is not None:
            notes += arms[0].notes
    return [Group(a.label, a.seeds, a.how, a.differs) for a in arms]


def arm_members(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """Who is in each arm a command formed and which rule put them there (for every output)."""
    return [{"label": g.label, "differs": g.differs, "members": [r.name for r in g.runs],
             "addresses": [r.address for r in g.runs], "how": g.how} for g in groups]


def last_step(run: Run, metric: str) -> float:
    return run.last_step(metric)


REACH = 0.8
"""A run whose last step of a metric is below REACH × the median last step of the runs stopped
early for that metric: the common step is not pulled back to it, and it is listed as not reached."""


def reach_step(lasts: Iterable[float], running: Iterable[bool] | None = None) -> float:
    """The step a ranking compares a metric at, from each run's last step of it: the shortest
    last step among the runs still running and the runs that reached REACH × the median (a run
    that stopped before that is not reached; one still training pulls the step back to where it
    is, as `compare` reads baselines at the student's step). NaN when no run has a step."""
    lasts = list(lasts)
    flags = list(running) if running is not None else [False] * len(lasts)
    pairs = [(x, bool(r)) for x, r in zip(lasts, flags, strict=True)]
    finite = [(x, r) for x, r in pairs if math.isfinite(x)]
    if not finite:
        return math.nan
    median = float(np.median([x for x, _r in finite]))
    floor = REACH * median if median > 0 else -math.inf
    return min(x for x, r in finite if r or x >= floor)


def common_step(runs: Iterable[Run], metric: str) -> float:
    """The step every run that did not stop early has reached for `metric` (`reach_step`)."""
    runs = list(runs)
    return reach_step((last_step(r, metric) for r in runs), (r.status == "running" for r in runs))


@dataclass
class StepChoice:
    """Where one metric is compared across runs, how that step was found, and the runs that
    stopped logging the metric before it (address → their last step; NaN: no finite step)."""

    step: float
    how: str
    not_reached: dict[str, float] = field(default_factory=dict)


def choose_step(runs: Sequence[Run], metric: str, at: float | None = None,
                align: str = "nearest") -> StepChoice:
    """The step every row of a metric's table is read at: `at` (`--step`) when given, else the
    shortest last step among the runs still running and the runs that did not stop early
    (`reach_step`). Runs whose last step is before it are not reached, never read at their own
    last point; a run without a point at the step is read by `align`, its step used shown."""
    lasts = {r.address: last_step(r, metric) for r in runs}
    if at is not None:
        step, how = float(at), "--step"
    else:
        step = reach_step(lasts.values(), (r.status == "running" for r in runs))
        how = "the last step every run reached"
    if math.isnan(step):
        return StepChoice(step, "no run logged a finite step", dict(lasts))
    late = {a: x for a, x in lasts.items() if not x >= step}
    if late and at is None:
        how = "the last step every run reached, leaving out the runs that stopped early"
    return StepChoice(step, how, late)


@dataclass
class Point:
    """A value at the common step and where it came from."""

    run: str
    address: str
    run_id: str
    step_used: float
    value: float
    method: str


def value_at(run: Run, metric: str, step: float, align: str = "nearest") -> Point:
    """The run's value at `step` (`slice_at`); a fleet run answers from a pushed-down query."""
    pushed = getattr(run, "pushed_slice", None)  # fleet/pushdown.py PushedRun
    if pushed is not None:
        s = pushed(metric, step, align)
    else:
        steps, values, _ = run.series(metric)
        s = slice_at(steps, values, step, align)
    return Point(run.name, run.address, run.run_id, s.x_used, s.value, s.method)


@dataclass
class GroupStat:
    """A group's values at the common step: mean ± σ, N, a bootstrap CI when N ≥ 2."""

    label: str
    metric: str
    step: float
    points: list[Point]
    mean: float
    std: float
    n: int
    ci: tuple[float, float]

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points if math.isfinite(p.value)]


def group_stat(group: Group, metric: str, step: float, align: str = "nearest") -> GroupStat:
    points = [value_at(r, metric, step, align) for r in group.runs if metric in r.metric_keys()]
    values = [p.value for p in points if math.isfinite(p.value)]
    return GroupStat(
        label=group.label,
        metric=metric,
        step=step,
        points=points,
        mean=float(np.mean(values)) if values else math.nan,
        std=sample_std(values),
        n=len(values),
        ci=bootstrap_ci(values) if len(values) >= 2 else (math.nan, math.nan),
    )


def shared_metrics(runs: Sequence[Run], asked: Sequence[str] | None,
                   goals: GoalRules | None = None) -> list[str]:
    """The metrics to rank on (`choose_metrics`), the headline first."""
    return choose_metrics(runs, asked, goals).metrics


def choose_metrics(runs: Sequence[Run], asked: Sequence[str] | None,
                   goals: GoalRules | None = None) -> Choice:
    """The metrics to rank on and why: those asked (each must be logged by some run; globs
    expand), else the headline rules of `engines.primary` over the metrics most runs log. Runs
    that logged nothing are left out of the count (they are reported as anomalies, never a reason
    to stop)."""
    keys = [set(r.metric_keys()) for r in runs]
    everywhere = set().union(*keys) if keys else set()
    if asked:
        from .selection import expand

        names, unmatched = expand(list(asked), everywhere)
        missing = unmatched + [m for m in names if m not in everywhere]
        if missing:
            raise MetricNotFoundError(
                f"metric {', '.join(repr(m) for m in missing)} is logged by no run",
                hint="logged metrics: " + ", ".join(natural_sorted(everywhere)[:20]),
            )
        return Choice(names, "named with --metric")
    logging = [k for k in keys if k]
    counts = Counter(k for ks in logging for k in ks)
    quorum = len(logging) / 2
    common = natural_sorted(k for k, c in counts.items() if c > quorum or c == len(logging))
    from .roles import classify

    groups = {k: classify(k, runs=_declaring(runs)).group for k in common}
    choice = choose(runs, [k for k in common if groups[k] != "diagnostic"], counts,
                    groups=groups, goals=goals or GoalRules())
    if not choice.metrics:
        if logging and choice.skipped:
            raise MetricNotFoundError(
                "no metric the runs share carries information: " + skipped_text(choice.skipped),
                hint="name one with --metric; logged: " + ", ".join(natural_sorted(everywhere)[:20]))
        raise MetricNotFoundError(
            "the runs share no metric to rank on" if logging else "no run logged any metric",
            hint="name one with --metric; logged: " + ", ".join(natural_sorted(everywhere)[:20]),
        )
    return choice


def _declaring(runs: Sequence[Run]) -> list[Run]:
    """The runs whose format declares metric groups (a few: one of each kind is enough)."""
    seen: dict[str, Run] = {}
    for r in runs:
        if isinstance(r.meta, dict) and r.meta.get("groups"):
            seen.setdefault(str(r.meta.get("layout") or r.adapter), r)
    return list(seen.values())


@lru_cache(maxsize=4096)  # a fleet's runs share their config and meta key names
def _names_gpus(key: str) -> bool:
    return GPU_KEYS.search(key) is not None


@dataclass
class Efficiency:
    gpu_hours: float | None
    how: str


def gpu_hours(run: Run) -> Efficiency:
    """Runtime × GPU count from what the run logged; says what was missing otherwise."""
    runtime_s = None
    for key in RUNTIME_KEYS:
        v = run.summary.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            runtime_s, source = float(v), f"summary.{key}"
            break
    if runtime_s is None:
        n_wall, first_wall, last_wall = run.wall_span()
        if n_wall >= 2:
            runtime_s, source = last_wall - first_wall, "logged wall-time span"
    gpus = None
    for k, v in {**run.flat_config, **{f"meta.{k}": v for k, v in run.meta.items()}}.items():
        if _names_gpus(k) and isinstance(v, int) and not isinstance(v, bool) and v > 0:
            gpus, gpu_source = v, k
            break
    if gpus is None:
        cvd = run.env.get("CUDA_VISIBLE_DEVICES")
        if isinstance(cvd, str) and cvd.strip():
            gpus, gpu_source = len([d for d in cvd.split(",") if d.strip()]), "env CUDA_VISIBLE_DEVICES"
    if runtime_s is None and gpus is None:
        return Efficiency(None, "no runtime and no GPU count logged")
    if runtime_s is None:
        return Efficiency(None, f"no runtime logged ({gpus} GPUs from {gpu_source})")
    if gpus is None:
        return Efficiency(None, f"no GPU count logged (runtime {runtime_s / 3600:.2f} h from {source})")
    return Efficiency(runtime_s / 3600 * gpus, f"{runtime_s / 3600:.2f} h ({source}) × {gpus} GPU ({gpu_source})")


# Kinds of anomaly, most severe first (the text lists them in this order within a run).
ANOMALY_KINDS = ("no metrics", "crashed", "kill", "nan", "spike", "early_stop")


def spike_rule(steps: np.ndarray, values: np.ndarray) -> list[Spike]:
    """The loss-spike rule `anomalies` applies: one `Spike` per episode (stats.SPIKE_RULE). The one
    seam for it: the fleet pushdown streams loss series through this same function."""
    return spike_episodes(steps, values)


def loss_spikes(run: Run, metric: str) -> list[Spike]:
    """`spike_rule` over the run's `metric`; a fleet run streams it in batches with its fleet."""
    pushed = getattr(run, "pushed_spikes", None)  # fleet/pushdown.py PushedRun
    if pushed is not None:
        return pushed(metric, spike_rule)
    steps, values, _ = run.series(metric)
    return spike_rule(steps, values)


@dataclass
class Anomaly:
    run: str
    address: str
    kind: str  # one of ANOMALY_KINDS
    detail: str
    step: float | None = None
    metric: str | None = None
    severity: float = 0.0  # higher first; spikes by how far they stood out
    rule: str | None = None  # which rule fired


def _severity(kind: str, score: float = 0.0) -> float:
    rank = ANOMALY_KINDS.index(kind) if kind in ANOMALY_KINDS else len(ANOMALY_KINDS)
    return float((len(ANOMALY_KINDS) - rank) * 1000 + min(max(score, 0.0), 999.0))


def anomalies(runs: Sequence[Run], metrics: Sequence[str]) -> list[Anomaly]:
    """Empty runs, crashes, kill/OOM events, NaN/inf, loss spikes and early stops, most severe
    first, each with the rule that fired and where."""
    out: list[Anomaly] = []
    last_steps = {r.address: max((last_step(r, m) for m in metrics if m in r.metric_keys()),
                                 default=math.nan) for r in runs}
    finite_last = [s for s in last_steps.values() if math.isfinite(s)]
    typical = float(np.median(finite_last)) if finite_last else math.nan
    for run in runs:
        keys = run.metric_keys()
        if not keys:
            out.append(Anomaly(run.name, run.address, "no metrics",
                               f"logged no scalar at all (status {run.status})",
                               severity=_severity("no metrics"), rule="no metric key in the run"))
        if run.status == "crashed":
            out.append(Anomaly(run.name, run.address, "crashed", "status crashed",
                               severity=_severity("crashed"), rule="the tracker recorded a crash"))
        for e in run.events:
            if e.kind in KILL_EVENTS:
                at = f" at step {e.step:g}" if e.step is not None else ""
                out.append(Anomaly(run.name, run.address, "kill", f"{e.kind} event{at}", e.step,
                                   severity=_severity("kill"), rule="a kill/OOM event was logged"))
        watched = list(metrics) + [k for k in keys if vocabulary(k).goal == "min" and "loss" in k.lower()
                                   and k not in metrics]
        for m in watched:
            if m not in keys:
                continue
            n_bad, first = run.nonfinite(m)
            if n_bad:
                out.append(Anomaly(run.name, run.address, "nan",
                                   f"{n_bad} NaN/inf value(s) in {m}, first at step {first:g}",
                                   first, m, _severity("nan"), "a non-finite value"))
            if "loss" in m.lower():
                for e in loss_spikes(run, m):
                    if not math.isfinite(e.value):
                        continue
                    times = f"{e.value / e.level:.3g}× the local level {e.level:.4g}, " if e.level > 0 else ""
                    # a burst is reported from the step it began, its peak named beside
                    where = (f"from step {e.first:g} (burst of {e.points} points to step {e.last:g}, "
                             f"peak {e.value:.4g} at step {e.step:g}: " if e.points > 1
                             else f"{e.value:.4g} at step {e.step:g} (")
                    out.append(Anomaly(
                        run.name, run.address, "spike",
                        f"{m} {where}{times}{min(e.score, 1e6):.3g} robust σ)",
                        e.first, m, _severity("spike", e.score), SPIKE_RULE))
        ls = last_steps[run.address]
        if run.status == "finished" and math.isfinite(ls) and math.isfinite(typical) and ls < 0.8 * typical:
            out.append(Anomaly(run.name, run.address, "early_stop",
                               f"finished at step {ls:g}, typical run reaches {typical:g}", ls,
                               severity=_severity("early_stop"),
                               rule="finished before 80% of the median last step"))
    out.sort(key=lambda a: -a.severity)
    return out


@dataclass
class AnomalyGroup:
    """Anomalies of one kind: one run's (several spikes) or several runs' with the same detail."""

    kind: str
    runs: list[str]
    items: list[Anomaly]

    @property
    def severity(self) -> float:
        return max(a.severity for a in self.items)


def group_anomalies(anomalies: Sequence[Anomaly]) -> list[AnomalyGroup]:
    """By run and kind, then runs whose anomaly reads the same merged (twelve empty runs are one
    line, not twelve); most severe first."""
    by_run: dict[tuple[str, str], list[Anomaly]] = {}
    for a in sorted(anomalies, key=lambda a: -a.severity):
        by_run.setdefault((a.run, a.kind), []).append(a)
    merged: dict[tuple[str, str], AnomalyGroup] = {}
    out: list[AnomalyGroup] = []
    for (run, kind), items in by_run.items():
        same = (kind, items[0].detail) if len(items) == 1 else None
        if same is not None and same in merged:
            merged[same].runs.append(run)
            merged[same].items += items
            continue
        group = AnomalyGroup(kind, [run], list(items))
        if same is not None:
            merged[same] = group
        out.append(group)
    return sorted(out, key=lambda g: -g.severity)


@dataclass
class Evidence:
    """A finding and the numbers behind it (with the run and step they came from)."""

    text: str
    evidence: list[str] = field(default_factory=list)
