"""The functions `import rundiff` offers: the CLI's commands as calls that return results.

Every function takes the addresses the CLI takes (`journal:runs/a`, a path, `wandb:ent/proj/id`…)
and the same options under the same names (`--no-seeds` is `seeds=False`), runs the same engine,
and raises the same typed errors (`rundiff.RundiffError` and its subclasses) instead of exiting.
Nothing is printed and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from . import _bridge
from .results import AblateResult, CompareResult, DiffResult, RankResult, TrajectoriesResult

if TYPE_CHECKING:
    import pandas as pd

    from rundiff_core.model import Run

HISTORY_COLUMNS = ("run", "address", "step", "key", "value", "wall_time")


def _usage(message: str, hint: str | None = None) -> Exception:
    from rundiff_core.errors import UsageError

    return UsageError(message, hint=hint)


Goal = str | Sequence[str] | Mapping[str, str] | None
"""A direction: 'min' or 'max' for every metric, {"metric": "max"}, or ["metric=max", …]."""


def _goal(goal: Goal) -> list[str]:
    """`goal` as the command line spells it (`min`, `M=max`…); a bad one is a UsageError."""
    from rundiff_core.engines.directions import parse_goals

    if isinstance(goal, Mapping):
        items = [f"{k}={v}" for k, v in goal.items()]
    elif goal is None:
        items = []
    else:
        items = [goal] if isinstance(goal, str) else list(goal)
    if not all(isinstance(g, str) for g in items):
        raise _usage(f"goal {goal!r} is not 'min', 'max' or METRIC=min|max")
    parse_goals(items)
    return items


def _metrics(metric: str | Sequence[str] | None) -> list[str] | None:
    if metric is None:
        return None
    items = [metric] if isinstance(metric, str) else list(metric)
    if not all(isinstance(m, str) and m for m in items):
        raise _usage(f"metric must be a name or a list of names, not {metric!r}")
    return items or None


def _addresses(addresses: Iterable[str]) -> list[str]:
    out = list(addresses)
    bad = [a for a in out if not isinstance(a, str) or not a]
    if bad:
        raise _usage(f"an address is a non-empty string, not {bad[0]!r}",
                     hint="e.g. 'journal:runs/exp-a/seed-0' or a path")
    return out


def runs(*addresses: str) -> list[Run]:
    """Every run the addresses name (project detection when none), metadata only: each run's
    `history()` loads its points when first called."""
    out: list[Run] = []
    for raw in _addresses(addresses) or _bridge.default_addresses():
        out.extend(_bridge.load_runs(raw))
    return out


def history(*addresses: str, keys: Iterable[str] | None = None) -> pd.DataFrame:
    """Every logged point of every run the addresses name, never sampled, in one long frame:
    `run` (name), `address`, `step`, `key`, `value`, `wall_time` (Unix seconds, NaN if not kept).
    `keys` keeps only those metric keys."""
    import pandas as pd

    wanted = None if keys is None else [keys] if isinstance(keys, str) else list(keys)
    frames = []
    for run in runs(*addresses):
        h = run.history(wanted)
        frame = pd.DataFrame({
            "run": pd.Series([run.name] * len(h), dtype="object"),
            "address": pd.Series([run.address] * len(h), dtype="object"),
            "step": h["step"].to_numpy(), "key": h["key"].astype(str).to_numpy(dtype=object),
            "value": h["value"].to_numpy(), "wall_time": h["wall_time"].to_numpy(),
        }, columns=list(HISTORY_COLUMNS))
        frames.append(frame)
    if not frames:
        return pd.DataFrame({c: pd.Series([], dtype="float64" if c in ("step", "value", "wall_time")
                                          else "object") for c in HISTORY_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def diff(a: str, b: str, *, metric: str | None = None, goal: Goal = None,
         stat: str = "last10_mean", all_keys: bool = False, seeds: bool = True,
         precision: int = 4) -> DiffResult:
    """`rundiff diff A B`: config diff, headline metric (default: `loss`, else the main metric
    both runs log that carries information), sibling seeds as
    variance samples (`seeds=False` is `--no-seeds`), stability, and `.verdict`, one of the four
    strict templates."""
    a, b = _addresses((a, b))
    raw = _bridge.run_diff(a, b, metric=metric, goal=_goal(goal), stat=stat,
                           all_keys=all_keys, seeds=seeds)
    return DiffResult(raw, precision=precision)


def compare(*addresses: str, metric: str | Sequence[str] | None = None, student: str | None = None,
            maps: Mapping[str, str] | None = None, proxy: Sequence[str] = (),
            downstream: Sequence[str] = (), diagnostic: Sequence[str] = (),
            project_file: str | None = None, align: str = "nearest", x: str = "step",
            last: int = 10, goals: Goal = None, seeds: bool = True,
            precision: int = 4, trace: bool = False, smooth: float = 0.0,
            step: float | None = None) -> CompareResult:
    """`rundiff compare ADDR…`: every baseline read at the student's current step (the run still
    training, or `student=`). `metric` is one name or several; `maps={"logged": "metric"}`,
    `goals={"metric": "min"}`; `smooth` affects plots only; `step` reads every baseline where the
    student stood at that step (≤ its current one)."""
    if not 0.0 <= smooth < 1.0:
        raise _usage("smooth must be in [0, 1)", hint="TensorBoard's default is 0.6")
    raw = _bridge.run_compare(
        _addresses(addresses), student=student, metrics=_metrics(metric),
        maps=[f"{k}={v}" for k, v in (maps or {}).items()], proxy=proxy, downstream=downstream,
        diagnostic=diagnostic, project_file=project_file, align=align, x=x, last=last,
        goals=_goal(goals), seeds=seeds, curves=True, at=step,
    )
    return CompareResult(raw, precision=precision, trace=trace, smooth=smooth)


def rank(*addresses: str, metric: str | Sequence[str] | None = None, goal: Goal = None,
         align: str = "nearest", seed_groups: bool = True, step: float | None = None,
         precision: int = 4) -> RankResult:
    """`rundiff rank SRC…`: groups ranked per metric at the last step every run reached, or at
    `step` (project detection when no address is given); the first metric is the headline."""
    if align not in ("nearest", "interpolate"):
        raise _usage(f"align {align!r} is not 'nearest' or 'interpolate'")
    raw = _bridge.run_rank(_addresses(addresses), metrics=_metrics(metric), goal=_goal(goal),
                           align=align, seed_groups=seed_groups, step=step)
    return RankResult(raw, precision=precision)


def ablate(*sources: str, baseline: str, metric: str | Sequence[str] | None = None,
           goal: Goal = None, precision: int = 4) -> AblateResult:
    """`rundiff ablate --baseline B SRC…`: each ablation's changed config keys and its
    same-step deltas against the baseline, ranked by impact."""
    (baseline,) = _addresses((baseline,))
    sources_ = _addresses(sources)
    if not sources_:
        raise _usage("ablate needs ablation runs besides the baseline",
                     hint="rundiff.ablate('runs/abl-*', baseline='runs/base')")
    raw = _bridge.run_ablate(sources_, baseline=baseline, metrics=_metrics(metric),
                             goal=_goal(goal))
    return AblateResult(raw, precision=precision)


def trajectories(a: str, b: str, *more: str, baseline: str | None = None,
                 repeats: Mapping[str, Sequence[str]] | None = None, samples: int = 1,
                 min_n: int = 10, max_unstable: float = 0.05,
                 max_thrash: int = 2) -> TrajectoriesResult:
    """`rundiff trajectories A B…`, in memory: the outcome matrix, behavioural divergence, gap
    classes, warm-start yield and the RL-shaped verdict of each run against the baseline (a
    label such as "A", or the address as given). `repeats={"B": ["B2.json"]}` is `--repeats`."""
    addresses = _addresses((a, b, *more))
    spec = {str(k): [str(p) for p in ([v] if isinstance(v, str) else v)]
            for k, v in (repeats or {}).items()}
    loaded, pairs, command = _bridge.run_trajectories(
        addresses, baseline=baseline, repeats=spec, min_n=min_n, max_unstable=max_unstable,
        max_thrash=max_thrash, samples=samples)
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return TrajectoriesResult(pairs, runs=loaded, samples=samples, generated=generated,
                              command_line=command)
