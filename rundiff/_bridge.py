"""The one place the Python API touches rundiff_core: every engine, loader and renderer call.

Each function here calls what the matching CLI command calls (rundiff_core/commands/*.py), with
the same options, so `rundiff.compare(...)` and `rundiff compare ...` give the same numbers. When
the engines, the arm loader, the CLI plumbing or the Markdown renderers move, re-point them here;
nothing else in the `rundiff` package imports rundiff_core's engines or renderers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# A check every loaded run's address passes before anything is computed from it (the MCP server
# confines reads to its roots with it); None for the plain API.
_RUN_GUARD: ContextVar[Callable[[Iterable[str]], None] | None] = ContextVar("rundiff_run_guard",
                                                                           default=None)


@contextmanager
def guarded(check: Callable[[Iterable[str]], None]) -> Iterator[None]:
    """Run the block with `check(addresses)` called on every run any loader here produces."""
    token = _RUN_GUARD.set(check)
    try:
        yield
    finally:
        _RUN_GUARD.reset(token)


def _checked(addresses: Iterable[str]) -> None:
    check = _RUN_GUARD.get()
    if check is not None:
        check(list(addresses))


# ---- loading -----------------------------------------------------------------------------------
def load_runs(address: str) -> list[Any]:
    """Every run an address names, metadata loaded, histories lazy (as `rundiff ls`)."""
    from rundiff_core.resolve import load_runs as _load_runs

    runs = _load_runs(address)
    _checked(r.address for r in runs)
    return runs


def load_sources(addresses: Sequence[str], arms: Any = None, named: set[str] | None = None
                 ) -> list[Any]:
    """Runs for `rank`/`ablate` (as the CLI; no progress bar: the API prints nothing)."""
    from rundiff_core.engines.runset import load_sources as _load_sources

    runs = _load_sources(list(addresses), progress=False, arms=arms, named=named)
    _checked(r.address for r in runs)
    return runs


def default_addresses() -> list[str]:
    from rundiff_core.resolve import default_addresses as _default

    return _default()


def grouping(seeds: bool = True, group_by: Sequence[str] | None = None) -> Any:
    """The arm rule the CLI's `--no-seeds` / `--group-by` ask for (commands/arm_options.py)."""
    from rundiff_core.engines.arms import Grouping

    return Grouping.from_options(no_seeds=not seeds, group_by=list(group_by or []),
                                 project_file=None)


def load_arm(address: str, *, siblings: bool) -> Any:
    from rundiff_core.engines.arms import load_arm as _load_arm

    arm = _load_arm(address, grouping=grouping(siblings))
    _checked([arm.primary.address, *(r.address for r in arm.seeds)])
    return arm


def resolve_arms(addresses: Sequence[str], student: str | None, siblings: bool) -> tuple[list[Any], int | None]:
    from rundiff_core.commands.compare import resolve_arms as _resolve_arms

    arms, student_index = _resolve_arms(list(addresses), student, grouping=grouping(siblings))
    _checked(r.address for arm in arms for r in [arm.primary, *arm.seeds])
    return arms, student_index


# ---- engines -----------------------------------------------------------------------------------
def run_diff(a: str, b: str, *, metric: str | None, goal: Sequence[str], stat: str, all_keys: bool,
             seeds: bool) -> Any:
    """`rundiff diff A B` (commands/diff.py)."""
    from rundiff_core.engines.arms import label_arms, named_sides
    from rundiff_core.engines.diff import run_diff as _run_diff

    arm_a = load_arm(a, siblings=seeds)
    arm_b = load_arm(b, siblings=seeds)
    arm_a, arm_b = named_sides([arm_a, arm_b])  # the named runs are the sides, as in the CLI
    label_arms([arm_a, arm_b], grouping(seeds))
    return _run_diff(arm_a, arm_b, metric=metric, goal=list(goal), statistic=stat,
                     all_keys=all_keys)


def run_compare(addresses: Sequence[str], *, student: str | None, metrics: Sequence[str] | None,
                maps: Sequence[str], proxy: Sequence[str], downstream: Sequence[str],
                diagnostic: Sequence[str], project_file: str | None, align: str, x: str,
                last: int, goals: Sequence[str], seeds: bool, curves: bool,
                at: float | None = None) -> Any:
    """`rundiff compare ADDR…` (commands/compare.py); `goals` and `maps` as the CLI spells them;
    `at`: the student read at that step (≤ its current one)."""
    from rundiff_core.engines.compare import run_compare as _run_compare
    from rundiff_core.engines.directions import goal_rules
    from rundiff_core.engines.metricnames import parse_maps
    from rundiff_core.engines.roles import build_rules

    rules = build_rules(list(proxy), list(downstream), list(diagnostic), project_file)
    arms, student_index = resolve_arms(addresses, student, seeds)
    return _run_compare(
        arms, metrics=list(metrics) if metrics else None, maps=parse_maps(list(maps)),
        student=student_index, align=align, x=x, rules=rules, goals=goal_rules(list(goals), project_file),
        last_k=last, curves=curves, at=at,
    )


def loaded_run(address: str) -> tuple[Any, frozenset[str], str]:
    """(the run an address names, the addresses of its arm's runs, how the arm rule formed that
    arm): what `run_compare_runs` groups ticked runs by; `rundiff serve` keeps them loaded."""
    arm = load_arm(address, siblings=True)
    return arm.primary, frozenset(r.address for r in arm.seeds), arm.how


def run_compare_runs(addresses: Sequence[str], *, student: str | None,
                     metrics: Sequence[str] | None, at: float | None, seeds: bool = True,
                     load: Callable[[str], tuple[Any, frozenset[str], str]] = loaded_run) -> Any:
    """`compare` of runs ticked one by one (`rundiff serve`'s selection): runs that are seeds of
    one arm by the CLI's arm rule (`load_arm`: declared siblings, seed folders, equal configs)
    are one arm of the ticked seeds only; every other run is its own arm (every run, with
    `seeds=False`, as `compare --no-seeds`). `student` is one of the addresses. `load` gives an
    address's run and arm (`loaded_run`; a caller that keeps runs loaded passes its own)."""
    from rundiff_core.engines.arms import Arm, label_arms, runs_apart
    from rundiff_core.engines.compare import run_compare as _run_compare
    from rundiff_core.engines.directions import goal_rules
    from rundiff_core.engines.roles import build_rules

    groups: list[tuple[frozenset[str], str, list[Any]]] = []  # (the arm's runs, how, ticked runs)
    for raw in dict.fromkeys(addresses):
        run, members, how = load(raw)
        _checked([run.address])
        for arm_runs, _how, ticked in groups if seeds else ():
            if run.address in arm_runs:
                if all(r.address != run.address for r in ticked):
                    ticked.append(run)
                break
        else:
            groups.append((members, how, [run]))
    arms = [Arm(address=ticked[0].address, primary=ticked[0], seeds=ticked,
                how=how if len(ticked) > 1 else "one run") for _m, how, ticked in groups]
    rule = grouping(seeds)
    label_arms(arms, rule)
    arms = runs_apart(arms)
    index = None
    if student is not None:
        found = [i for i, arm in enumerate(arms) if student in {r.address for r in arm.seeds}]
        index = found[0] if found else None
    return _run_compare(arms, metrics=list(metrics) if metrics else None, student=index,
                        rules=build_rules([], [], [], None), goals=goal_rules([], None),
                        curves=True, at=at)


def run_rank(addresses: Sequence[str], *, metrics: Sequence[str] | None, goal: Sequence[str],
             align: str, seed_groups: bool, step: float | None = None) -> Any:
    """`rundiff rank SRC…` (commands/rank.py); no address means project detection, as there."""
    from rundiff_core.engines.rank import run_rank as _run_rank

    rule = grouping(seed_groups)
    runs = load_sources(list(addresses) or default_addresses(), arms=rule)
    return _run_rank(runs, metrics=list(metrics) if metrics else None, goal=list(goal),
                     grouping=rule, align=align, at=step)


def run_ablate(sources: Sequence[str], *, baseline: str, metrics: Sequence[str] | None,
               goal: Sequence[str]) -> Any:
    """`rundiff ablate --baseline B SRC…` (commands/ablate.py)."""
    from rundiff_core.engines.ablate import run_ablate as _run_ablate
    from rundiff_core.engines.arms import seeds_apart

    rule = grouping(True)
    arm = load_arm(baseline, siblings=True)
    named: set[str] = set()
    runs = load_sources(sources, arms=rule, named=named)
    return _run_ablate(seeds_apart(arm, named), runs, metrics=list(metrics) if metrics else None, goal=list(goal),
                       grouping=rule)


def run_trajectories(runs: Sequence[str], *, baseline: str | None, repeats: dict[str, Sequence[str]],
                     min_n: int, max_unstable: float, max_thrash: int, samples: int
                     ) -> tuple[list[Any], list[Any], str]:
    """`rundiff trajectories A B…` without writing its output folder: (runs, pairs, command line)."""
    from rundiff_core.commands import trajectories as cmd
    from rundiff_core.errors import UsageError
    from rundiff_core.trajectories.engine import diff_runs

    if len(runs) < 2:
        raise UsageError("trajectories needs at least two runs to compare",
                         hint="rundiff.trajectories('A.json', 'B.json')")
    ns = argparse.Namespace(runs=list(runs), baseline=baseline, min_n=min_n,
                            max_unstable=max_unstable, max_thrash=max_thrash, samples=samples,
                            repeats=[f"{who}={','.join(paths)}" for who, paths in repeats.items()])
    thresholds = cmd._thresholds(ns)
    labels = cmd._labels(len(ns.runs))
    loaded = []
    for label, raw in zip(labels, ns.runs, strict=True):
        r = cmd.load_trajectory_run(raw)
        _checked([r.path])
        r.label = label
        loaded.append(r)
    for who, paths in repeats.items():
        idx = cmd._resolve(who.strip(), labels, ns.runs, "repeats")
        wanted = [p for p in paths if p.strip()]
        _checked(wanted)
        cmd._add_repeats(loaded[idx], wanted)
    index = 0 if baseline is None else cmd._resolve(baseline, labels, ns.runs, "baseline")
    pairs = diff_runs(loaded, index, thresholds)
    return loaded, pairs, cmd._command_line(ns)


# ---- what the CLI prints -----------------------------------------------------------------------
def as_json(report: Any) -> Any:
    """Exactly what `--format json` prints, parsed back: the CLI's `dumps` then `json.loads`."""
    from rundiff_core.render import dumps

    return json.loads(dumps(report))


def diff_markdown(result: Any, precision: int) -> str:
    from rundiff_core.render.diff_md import render_diff_markdown

    return render_diff_markdown(result, precision)


def compare_markdown(result: Any, precision: int, trace: bool) -> str:
    from rundiff_core.render.compare_md import render_compare_markdown

    return render_compare_markdown(result, precision, trace)


def compare_report(result: Any, precision: int, trace: bool) -> Any:
    """The tables the Markdown and HTML compare reports share (compare_md.build_report)."""
    from rundiff_core.render.compare_md import build_report

    return build_report(result, precision, trace)


def compare_figures(result: Any, smooth: float) -> list[Any]:
    from rundiff_core.render.compare_plots import build_figures

    return build_figures(result, smooth)


def compare_page(result: Any, precision: int, smooth: float, trace: bool) -> str:
    """The self-contained page `rundiff compare --html FILE` writes, as a string."""
    from rundiff_core.render.compare_html import render_compare_html

    return render_compare_html(result, precision=precision, smooth=smooth, trace=trace)


def require(module: str) -> Any:
    """Import an optional plotting package, or raise the CLI's "install rundiff[plots]" error."""
    from rundiff_core.render.compare_plots import require as _require

    return _require(module)


def rank_markdown(result: Any, precision: int) -> str:
    from rundiff_core.render.many_md import render_rank

    return render_rank(result, precision)


def ablate_markdown(result: Any, precision: int) -> str:
    from rundiff_core.render.many_md import render_ablate

    return render_ablate(result, precision)


def trajectories_document(runs: list[Any], pairs: list[Any], generated: str, command: str) -> dict:
    from rundiff_core.trajectories.render import matrix_document

    return matrix_document(runs, pairs, generated, command)


def trajectories_markdown(runs: list[Any], pairs: list[Any], samples: int, generated: str,
                          command: str) -> str:
    """The report.md `rundiff trajectories` writes into its output folder."""
    from rundiff_core.trajectories.render import render_report

    return render_report(runs, pairs, samples, generated, command)


def trajectories_summary(pairs: list[Any]) -> list[str]:
    from rundiff_core.trajectories.render import summary_lines

    return summary_lines(pairs)


def trajectories_task_rows(pairs: list[Any]) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """One tasks.csv row per (pair, task), and the tasks.csv columns."""
    from rundiff_core.trajectories.render import CSV_COLUMNS, task_row_dict

    return [task_row_dict(p, row) for p in pairs for row in p.rows], tuple(CSV_COLUMNS)


def markdown_to_html(text: str) -> str:
    from rundiff_core.render.report_html import markdown_to_html as _to_html

    return _to_html(text)


def ls_listing(addresses: Sequence[str], points: bool) -> tuple[list[dict[str, Any]], str]:
    """What `rundiff ls` prints: (the JSON rows, the text) — commands/ls.py's own builders."""
    from rundiff_core.commands.ls import listing, text_lines

    rows, headers = listing(list(addresses), points)
    _checked(r["address"] for r in rows)
    return rows, "".join(line + "\n" for line in text_lines(rows, headers))


def listed_runs(address: str) -> tuple[list[tuple[Any, str | None]], list[str], dict[str, str]]:
    """The runs `rundiff ls ADDRESS` lists, as (run, store) pairs, with the lines saying where a
    folder's stores were found and the files left unread (commands/ls.py's own search)."""
    from rundiff_core.commands.ls import runs_of

    headers: list[str] = []
    unread: dict[str, str] = {}
    pairs = runs_of(address, headers, unread)
    _checked(run.address for run, _store in pairs)
    return pairs, headers, unread


def iter_listed_runs(address: str, headers: list[str], unread: dict[str, str]
                     ) -> Iterator[tuple[Any, str | None]]:
    """`listed_runs`, one (run, store) at a time as each is read (commands/ls.py's own search);
    the store lines go to `headers`, the files left unread to `unread`."""
    from rundiff_core.commands.ls import iter_runs_of

    for run, store in iter_runs_of(address, headers, unread):
        _checked([run.address])
        yield run, store


def ls_row(run: Any, store: str | None, points: bool = True) -> dict[str, Any]:
    """A run's row of `rundiff ls --format json` (`points=False`: of `ls --no-points`), parsed
    back."""
    from rundiff_core.commands.ls import summarize

    row = summarize(run, points)
    if store is not None:
        row["store"] = store
    return as_json(row)


def reload_run(address: str) -> list[Any]:
    """A run read again from its address (its files grew)."""
    return load_runs(address)


def run_table(runs: Sequence[Any], *, now: float, stale_after: float,
              states: Any = None) -> dict[str, Any]:
    """The columns `rundiff serve`'s run table adds to `ls` (engines/runtable.py), as JSON;
    `states`: the runs' states already read (`run_state`), by address."""
    from rundiff_core.engines.runtable import run_table as _run_table

    return as_json(_run_table(runs, now=now, stale_after=stale_after, states=states).to_dict())


def run_state(run: Any, *, now: float, stale_after: float) -> Any:
    """What a run's row shows from its history (engines/runtable.py), kept by `rundiff serve`."""
    from rundiff_core.engines.runtable import run_state as _run_state

    return _run_state(run, now=now, stale_after=stale_after)


def newest_write(run: Any) -> float | None:
    """When the run's files were last written (the watch engine's freshness check)."""
    from rundiff_core.engines.watch import newest_write as _newest_write

    return _newest_write(run)


def found_in(addresses: Sequence[str]) -> str:
    from rundiff_core.engines.naming import found_in as _found_in

    return _found_in(list(addresses))


def parse_duration(text: str) -> float:
    from rundiff_core.engines.watch import parse_duration as _parse

    return _parse(text)


def figure_json(figure: Any) -> dict[str, Any]:
    """A compare figure as the plotly-ready JSON the compare page draws (compare_html)."""
    from rundiff_core.render.compare_html import figure_json as _figure_json

    return _figure_json(figure)


def report_page(addresses: Sequence[str], *, metrics: Sequence[str] | None, step: float | None
                ) -> str:
    """The HTML `rundiff report SRC… -o report.html` writes (commands/report.py), as a string."""
    from rundiff_core.engines.directions import goal_rules
    from rundiff_core.engines.report import build_report, report_curves
    from rundiff_core.render.report_html import render_report_html

    rule = grouping(True)
    goals = goal_rules([], None)  # as the CLI's goals_from: the nearest rundiff.toml's [goals]
    runs = load_sources(list(addresses), arms=rule)
    rep = build_report(runs, metrics=list(metrics) if metrics else None, grouping=rule,
                       goal=goals, at=step)
    return render_report_html(rep, report_curves(rep, runs, rule, goals))


def detect_path(path: str) -> tuple[dict[str, Any], str]:
    """What `rundiff detect PATH` prints: (the JSON report, the text lines)."""
    from rundiff_core.detect import collect_claims, sniff_path
    from rundiff_core.errors import RundiffError
    from rundiff_core.plugins import get_plugins

    plugins = get_plugins()
    claims = collect_claims(path, plugins)
    rows = [{"adapter": c.spec.name, "priority": c.spec.priority, "reason": c.claim.reason,
             "scheme": c.spec.schemes[0], "locator": c.claim.locator or path} for c in claims]
    winner, address, error = None, None, None
    try:
        best = sniff_path(path, plugins)
        winner = best.spec.name
        address = f"{best.spec.schemes[0]}:{best.claim.locator or path}"
    except RundiffError as exc:
        error = exc.message if not exc.hint else f"{exc.message} (hint: {exc.hint})"
    lines = [f"claim: {r['adapter']} (priority {r['priority']}): {r['reason']}" for r in rows]
    lines.append(f"winner: {winner} → {address}" if winner else f"winner: none — {error}")
    report = {"path": path, "claims": rows, "winner": winner, "address": address, "error": error}
    return report, "".join(line + "\n" for line in lines)


def redact_text(text: str) -> str:
    from rundiff_core.redact import redact_text as _redact_text

    return _redact_text(text)


def registered_schemes() -> dict[str, str]:
    """Scheme → adapter name, for every adapter that loaded."""
    from rundiff_core.plugins import get_plugins

    registry = get_plugins().registry
    return {scheme: registry.by_scheme(scheme).name for scheme in registry.schemes}
