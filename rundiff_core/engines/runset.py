"""What the many-run commands share: loading with progress, seed groups, the common step,
values at that step, GPU hours and anomalies. Same honesty rules as `diff` and `compare`."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MetricNotFoundError
from ..model import Run
from .align import slice_at
from .diff import SEED_KEYS
from .stats import bootstrap_ci, goal_for, robust_spikes, sample_std

KILL_EVENTS = {"kill", "killed", "oom", "out_of_memory", "crash", "crashed", "abort", "aborted", "preempted"}
GPU_KEYS = re.compile(r"(^|\.)(n_?gpus?|num_?gpus?|gpu_?count|gpus_per_node|world_size|devices)$", re.I)
RUNTIME_KEYS = ("_runtime", "runtime", "duration", "elapsed", "train_runtime", "wall_time")


def load_sources(
    sources: Sequence[str], *, progress: bool | None = None, histories: bool = True
) -> list[Run]:
    """Every run of every address, histories loaded on a small thread pool (the parsers release
    the GIL), with a rich progress bar on a terminal when there are many runs."""
    from concurrent.futures import ThreadPoolExecutor

    from ..resolve import open_source

    opened = [(raw, open_source(raw)) for raw in sources]
    refs = [(src, ref) for _raw, src in opened for ref in src.list_runs()]
    show = (sys.stderr.isatty() if progress is None else progress) and len(refs) >= 20

    def load(item: tuple[Any, Any]) -> Run:
        src, ref = item
        run = src.load_run(ref)
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
            return list(results)
        from rich.progress import Progress

        runs: list[Run] = []
        with Progress(transient=True) as bar:
            task = bar.add_task("loading runs", total=len(refs))
            for run in results:
                runs.append(run)
                bar.advance(task)
        return runs


def config_key(run: Run) -> str:
    """The run's config without seed keys: runs sharing it are seeds of one group."""
    flat = {k: v for k, v in run.flat_config.items() if not SEED_KEYS.search(k)}
    return json.dumps(flat, sort_keys=True, default=str)


@dataclass
class Group:
    """Runs whose configs differ only by a seed key (or a single run)."""

    label: str
    runs: list[Run]

    @property
    def n(self) -> int:
        return len(self.runs)


def _group_label(runs: Sequence[Run]) -> str:
    if len(runs) == 1:
        return runs[0].name
    names = [r.name for r in runs]
    prefix = os.path.commonprefix(names).rstrip("-_/.")
    stripped = re.sub(r"([/_-]?seed[-_]?)$", "", prefix, flags=re.I)
    base = stripped or names[0]
    return f"{base} ({len(runs)} seeds)"


def seed_groups(runs: Sequence[Run], *, group_seeds: bool = True) -> list[Group]:
    """Group runs by config-without-seed, keeping first-seen order; labels are full names."""
    if not group_seeds:
        return [Group(r.name, [r]) for r in runs]
    buckets: dict[str, list[Run]] = {}
    for run in runs:
        has_config = bool(run.flat_config)
        key = config_key(run) if has_config else f"__single__{run.address}"
        buckets.setdefault(key, []).append(run)
    groups = [Group(_group_label(rs), rs) for rs in buckets.values()]
    seen: dict[str, int] = {}
    for g in groups:  # labels must be unique to be traceable
        if g.label in seen:
            seen[g.label] += 1
            g.label = f"{g.label} [{seen[g.label]}]"
        else:
            seen[g.label] = 1
    return groups


def last_step(run: Run, metric: str) -> float:
    return run.last_step(metric)


def common_step(runs: Iterable[Run], metric: str) -> float:
    """The latest step every run has reached for `metric`: where all of them can be compared."""
    steps = [last_step(r, metric) for r in runs]
    finite = [s for s in steps if math.isfinite(s)]
    return min(finite) if finite else math.nan


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


def shared_metrics(runs: Sequence[Run], asked: Sequence[str] | None) -> list[str]:
    """The metrics to rank on: those asked (each must be logged by some run), else the
    downstream metrics every run logs, else the proxy ones."""
    keys = [set(r.metric_keys()) for r in runs]
    if asked:
        everywhere = set().union(*keys) if keys else set()
        missing = [m for m in asked if m not in everywhere]
        if missing:
            raise MetricNotFoundError(
                f"metric {', '.join(repr(m) for m in missing)} is logged by no run",
                hint="logged metrics: " + ", ".join(sorted(everywhere)[:20]),
            )
        return list(asked)
    common = sorted(set.intersection(*keys)) if keys else []
    from .roles import classify

    by_group: dict[str, list[str]] = {"downstream": [], "proxy": []}
    for k in common:
        g = classify(k).group
        if g in by_group:
            by_group[g].append(k)
    chosen = by_group["downstream"] or by_group["proxy"]
    if not chosen:
        raise MetricNotFoundError(
            "the runs share no metric to rank on",
            hint="name one with --metric; logged: " + ", ".join(sorted(set().union(*keys))[:20]),
        )
    return chosen[:4]


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
        if GPU_KEYS.search(k) and isinstance(v, int) and not isinstance(v, bool) and v > 0:
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


def spike_rule(steps: np.ndarray, values: np.ndarray) -> list[tuple[float, float, float]]:
    """The loss-spike rule `anomalies` applies: (step, value, score) per spike. The one seam for
    it: the fleet pushdown streams loss series through this same function."""
    return robust_spikes(steps, values)


def loss_spikes(run: Run, metric: str) -> list[tuple[float, float, float]]:
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
    kind: str  # crashed | nan | spike | early_stop | kill
    detail: str
    step: float | None = None


def anomalies(runs: Sequence[Run], metrics: Sequence[str]) -> list[Anomaly]:
    """Crashes, NaN/inf, loss spikes, kill/OOM events and early stops, with their evidence."""
    out: list[Anomaly] = []
    last_steps = {r.address: max((last_step(r, m) for m in metrics if m in r.metric_keys()), default=math.nan)
                  for r in runs}
    finite_last = [s for s in last_steps.values() if math.isfinite(s)]
    typical = float(np.median(finite_last)) if finite_last else math.nan
    for run in runs:
        if run.status == "crashed":
            out.append(Anomaly(run.name, run.address, "crashed", "status crashed"))
        for e in run.events:
            if e.kind in KILL_EVENTS:
                out.append(Anomaly(run.name, run.address, "kill", f"{e.kind} event", e.step))
        keys = run.metric_keys()
        for m in list(metrics) + [k for k in keys if goal_for(k) == "min" and "loss" in k.lower() and k not in metrics]:
            if m not in keys:
                continue
            n_bad, first = run.nonfinite(m)
            if n_bad:
                out.append(Anomaly(run.name, run.address, "nan", f"{n_bad} NaN/inf value(s) in {m}", first))
            if "loss" in m.lower():
                spikes = loss_spikes(run, m)
                spikes = [s for s in spikes if math.isfinite(s[1])]
                if spikes:
                    steps = ", ".join(f"{s[0]:g}" for s in spikes[:5])
                    out.append(Anomaly(run.name, run.address, "spike", f"{len(spikes)} spike(s) in {m} at step {steps}", spikes[0][0]))
        ls = last_steps[run.address]
        if run.status == "finished" and math.isfinite(ls) and math.isfinite(typical) and ls < 0.8 * typical:
            out.append(Anomaly(run.name, run.address, "early_stop",
                               f"finished at step {ls:g}, typical run reaches {typical:g}", ls))
    return out


@dataclass
class Evidence:
    """A finding and the numbers behind it (with the run and step they came from)."""

    text: str
    evidence: list[str] = field(default_factory=list)
