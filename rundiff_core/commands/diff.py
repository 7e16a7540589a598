"""`rundiff diff A B` — the decision-grade runs-diff."""

from __future__ import annotations

import argparse

from ..engines.arms import load_arm
from ..engines.diff import run_diff
from ..engines.stats import STATISTICS
from ..render import dumps
from ..render.diff_md import render_diff_markdown
from ..render.formats import emit, format_choices


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="decision-grade diff of two runs (config, headline, seeds, verdict)")
    p.add_argument("a", metavar="A", help="address of run A (e.g. runs/exp-a/seed-0, journal:PATH)")
    p.add_argument("b", metavar="B", help="address of run B")
    p.add_argument("--metric", help="headline metric (default: loss, else the main loss or "
                   "accuracy both runs log)")
    p.add_argument("--goal", choices=("min", "max"), help="override the direction guessed from the name")
    p.add_argument("--stat", default="last10_mean", choices=STATISTICS, help="per-seed statistic")
    p.add_argument("--all-keys", action="store_true", help="list every changed config key")
    p.add_argument("--no-seeds", action="store_true", help="ignore sibling seed-* runs")
    p.add_argument("--format", choices=format_choices("diff", ("md", "json")), default="md")
    p.add_argument("--precision", type=int, default=4)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    a = load_arm(args.a, siblings=not args.no_seeds)
    b = load_arm(args.b, siblings=not args.no_seeds)
    result = run_diff(a, b, metric=args.metric, goal=args.goal, statistic=args.stat, all_keys=args.all_keys)
    if emit("diff", args.format, result.to_dict):
        pass
    elif args.format == "json":
        print(dumps(result.to_dict()))
    else:
        from ..render.terminal import write_markdown

        write_markdown(render_diff_markdown(result, args.precision))
    return 0
