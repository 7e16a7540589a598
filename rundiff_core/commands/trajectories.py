"""`rundiff trajectories A B [C …]` — how two agent runs differ, task by task.

Loads trajectory exports through the adapter registry (bare paths go to the `traj:` adapter),
diffs every run against the baseline and writes report.md, matrix.json, tasks.csv and
warm_start.jsonl to `.understudy/trajectory-diffs/<timestamp>/` (or `--out`). Exit 0 on success,
2 on bad input or usage.
"""

from __future__ import annotations

import argparse
import os
import shlex
import string
from datetime import datetime
from typing import TYPE_CHECKING

from ..address import parse_address
from ..errors import UsageError
from ..plugins import get_plugins
from ..render import dumps
from ..render.formats import emit, format_choices

if TYPE_CHECKING:
    from ..cli import CommandHost
    from ..trajectories.engine import Thresholds
    from ..trajectories.model import TrajectoryRun

DEFAULT_ROOT = os.path.join(".understudy", "trajectory-diffs")


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser(
        "trajectories",
        help="task-by-task behavioural diff of agent runs (trajectory exports, Inspect, τ-bench, SWE-bench, "
        "mini-swe-agent, SWE-agent, OpenHands, lm-eval)",
        description="Align agent runs by task name, test whether B differs from A (McNemar's exact "
        "test, paired bootstrap CI), build the outcome matrix, classify the reachable gap "
        "(persistence/recovery, knowledge, format/parsing) and count clean warm-start "
        "trajectories. Reads exports on disk; never runs models; sends nothing anywhere.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="trajectory exports or run folders (JSON/JSONL, Inspect .eval/.json, τ-bench .json, "
                   "SWE-bench reports, mini-swe-agent/SWE-agent folders, OpenHands output.jsonl, lm-eval "
                   "results/samples); labelled A, B, C… in order; PATH#trial=N picks one trial/epoch; "
                   "FOLDER#report=PATH joins SWE-bench outcomes with trajectories")
    p.add_argument("--baseline", metavar="RUN",
                   help="the run every other run is compared against: a label (A, B…) or the "
                   "address as given (default: the first)")
    p.add_argument("--repeats", action="append", default=[], metavar="RUN=PATH[,PATH…]",
                   help="replays of a run on the same tasks, e.g. B=B2.json,B3.json (repeatable)")
    p.add_argument("--out", metavar="DIR", help=f"output folder (default: {DEFAULT_ROOT}/<timestamp>/)")
    p.add_argument("--samples", type=int, default=1, metavar="K",
                   help="redacted sample trajectories per gap class in report.md (default: 1)")
    p.add_argument("--min-n", type=int, default=10, metavar="N",
                   help="below N shared tasks or class members a verdict is directional only (default: 10)")
    p.add_argument("--max-unstable", type=float, default=0.05, metavar="FRAC",
                   help="unstable share of tasks above which every verdict is directional (default: 0.05)")
    p.add_argument("--max-thrash", type=int, default=2, metavar="N",
                   help="error→same-tool retries a clean warm-start trajectory may have (default: 2)")
    p.add_argument("--format", choices=format_choices("trajectories", ("md", "json")), default="md",
                   help="what to print (files are always written)")
    p.set_defaults(func=run)


def _labels(n: int) -> list[str]:
    letters = string.ascii_uppercase
    return [letters[i] if i < len(letters) else f"R{i + 1}" for i in range(n)]


def load_trajectory_run(raw: str) -> TrajectoryRun:
    """Open an address as a trajectory run; a bare path is read by the `traj:` adapter."""
    from ..resolve import open_source

    plugins = get_plugins()
    address = parse_address(raw)
    target = raw if address.scheme and plugins.registry.by_scheme(address.scheme) else f"traj:{raw}"
    if plugins.registry.by_scheme("traj") is None and target.startswith("traj:"):
        raise UsageError("the trajectory adapter is not loaded",
                         hint="check RUNDIFF_DISABLE_PLUGINS; `rundiff plugins --all` lists what loaded")
    source = open_source(target, plugins)
    try:
        loader = getattr(source, "load_trajectories", None)
        if loader is None:
            raise UsageError(f"{raw} is not a trajectory export (it resolved to {type(getattr(source, 'inner', source)).__name__})",
                             hint="give a trajectory export file, or prefix it with traj:")
        return loader()
    finally:
        source.close()


def _resolve(label_or_raw: str, labels: list[str], raws: list[str], what: str) -> int:
    if label_or_raw in labels:
        return labels.index(label_or_raw)
    if label_or_raw.upper() in labels and len(label_or_raw) <= 3:
        return labels.index(label_or_raw.upper())
    if label_or_raw in raws:
        return raws.index(label_or_raw)
    raise UsageError(f"{what} '{label_or_raw}' names no run",
                     hint="use a label (" + ", ".join(labels) + ") or an address exactly as given")


def _add_repeats(target: TrajectoryRun, spec_paths: list[str]) -> None:
    from ..trajectories.engine import Thresholds, validate_pair

    for raw in spec_paths:
        rep = load_trajectory_run(raw)
        validate_pair(target, rep, Thresholds())
        unknown = 0
        for name, rec in rep.records.items():
            if name not in target.records:
                unknown += 1
                continue
            target.repeats.setdefault(name, []).append(rec)
            target.repeats[name].extend(rep.repeats.get(name, ()))
        target.note(f"repeats from {raw}: {len(rep.records) - unknown} task(s)"
                    + (f"; {unknown} task(s) not in this run ignored" if unknown else ""))


def _thresholds(args: argparse.Namespace) -> Thresholds:
    from ..trajectories.engine import Thresholds

    if args.min_n < 1:
        raise UsageError("--min-n must be at least 1")
    if not 0 <= args.max_unstable <= 1:
        raise UsageError("--max-unstable is a share between 0 and 1, e.g. 0.05")
    if args.max_thrash < 0:
        raise UsageError("--max-thrash must be 0 or more")
    if args.samples < 0:
        raise UsageError("--samples must be 0 or more")
    return Thresholds(min_n=args.min_n, max_unstable=args.max_unstable, max_thrash=args.max_thrash)


def _input_path(raw: str) -> str:
    """The file or folder an address reads (scheme and #selector stripped)."""
    address = parse_address(raw)
    path = address.locator if address.scheme else raw
    while True:
        head, sep, tail = path.rpartition("#")
        if not (sep and "=" in tail):
            return path
        path = head


def _out_dir(args: argparse.Namespace, inputs: list[str]) -> str:
    if args.out:
        out = args.out
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = os.path.join(DEFAULT_ROOT, stamp)
        n = 2
        while os.path.exists(out):
            out = os.path.join(DEFAULT_ROOT, f"{stamp}-{n}")
            n += 1
    real = os.path.realpath(out)
    if os.path.isfile(real):
        raise UsageError(f"--out {out} is a file", hint="give a folder")
    for path in inputs:
        rp = os.path.realpath(path)
        if os.path.isdir(rp) and (real == rp or real.startswith(rp + os.sep)):
            raise UsageError(f"refusing to write into input folder {path}",
                             hint="rundiff never writes inside its inputs; choose another --out")
        if os.path.isfile(rp) and real == rp:
            raise UsageError(f"--out {out} is an input file")
    return out


def _command_line(args: argparse.Namespace) -> str:
    parts = ["rundiff", "trajectories", *args.runs]
    if args.baseline:
        parts += ["--baseline", args.baseline]
    for spec in args.repeats:
        parts += ["--repeats", spec]
    return " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    from ..trajectories.engine import diff_runs
    from ..trajectories.render import matrix_document, summary_lines, write_outputs

    if len(args.runs) < 2:
        raise UsageError("trajectories needs at least two runs to compare",
                         hint="rundiff trajectories A.json B.json [C.json …]")
    thresholds = _thresholds(args)
    labels = _labels(len(args.runs))
    runs = []
    for label, raw in zip(labels, args.runs, strict=True):
        r = load_trajectory_run(raw)
        r.label = label
        runs.append(r)
    for spec in args.repeats:
        who, sep, paths = spec.partition("=")
        if not sep or not paths.strip():
            raise UsageError(f"--repeats {spec!r} is not RUN=PATH[,PATH…]", hint="e.g. --repeats B=B2.json,B3.json")
        idx = _resolve(who.strip(), labels, args.runs, "--repeats")
        _add_repeats(runs[idx], [p.strip() for p in paths.split(",") if p.strip()])
    baseline = 0 if args.baseline is None else _resolve(args.baseline, labels, args.runs, "--baseline")
    pairs = diff_runs(runs, baseline, thresholds)
    inputs = [r.path for r in runs] + [_input_path(raw) for raw in args.runs]
    out = _out_dir(args, inputs)
    command = _command_line(args)
    paths = write_outputs(out, runs, pairs, samples=args.samples, command=command)
    def document() -> dict:
        doc = matrix_document(runs, pairs, "", command)
        doc["files"] = paths
        return doc

    if emit("trajectories", args.format, document):
        pass
    elif args.format == "json":
        print(dumps(document()))
    else:
        print("\n".join(summary_lines(pairs, paths["report.md"])))
    return 0
