"""`rundiff diff A B` — the decision-grade runs-diff."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..render import dumps
from ..render.formats import emit, format_choices
from .arm_options import add_arm_options, grouping_from
from .goal_options import add_goal_option, goals_from

# engines.options.STATISTICS, spelled out: building the parser imports no engine module
# (tests/core/test_startup_imports.py checks the two agree)
STATISTICS = ("last10_mean", "final", "best")

if TYPE_CHECKING:
    from ..cli import CommandHost


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("diff", help="decision-grade diff of two runs (config, headline, seeds, verdict)")
    p.add_argument("a", metavar="A", help="address of run A (e.g. runs/exp-a/seed-0, journal:PATH)")
    p.add_argument("b", metavar="B", help="address of run B")
    p.add_argument("--metric", help="headline metric (default: loss, else the main loss or "
                   "accuracy both runs log)")
    add_goal_option(p)
    p.add_argument("--stat", default="last10_mean", choices=STATISTICS, help="per-seed statistic")
    p.add_argument("--all-keys", action="store_true", help="list every changed config key")
    add_arm_options(p, no_seeds_help="compare the two named runs only, without their seeds")
    p.add_argument("--format", choices=format_choices("diff", ("md", "json")), default="md")
    p.add_argument("--precision", type=int, default=4)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engines.arms import label_arms, load_arm, named_sides
    from ..engines.diff import run_diff
    from ..render.diff_md import render_diff_markdown

    grouping = grouping_from(args)
    a = load_arm(args.a, grouping=grouping)
    b = load_arm(args.b, grouping=grouping)
    a, b = named_sides([a, b])  # the named runs are the sides, never seeds of each other's arm
    label_arms([a, b], grouping)
    result = run_diff(a, b, metric=args.metric, goal=goals_from(args), statistic=args.stat, all_keys=args.all_keys)
    if emit("diff", args.format, result.to_dict):
        pass
    elif args.format == "json":
        print(dumps(result.to_dict()))
    else:
        from ..render.terminal import write_markdown

        write_markdown(render_diff_markdown(result, args.precision))
    return 0
