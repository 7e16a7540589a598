"""`rundiff rank SRC…` — rank runs or seed groups at a common step."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..render import dumps
from ..render.formats import emit, format_choices
from ._pushdown import add_switch, pushed
from .arm_options import add_arm_options, grouping_from
from .goal_options import add_goal_option, goals_from

if TYPE_CHECKING:
    from ..cli import CommandHost


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("rank", help="rank runs or seed groups on headline metrics at a common step")
    p.add_argument("sources", nargs="*", metavar="SRC", help="addresses (default: detect the project)")
    p.add_argument("--metric", action="append", help="metric to rank on (repeatable; first is primary)")
    add_goal_option(p)
    p.add_argument("--align", choices=("nearest", "interpolate"), default="nearest")
    p.add_argument("--step", type=float, metavar="N", help="compare every metric at step N (default: "
                   "per metric, the last step every run reached; runs that stopped earlier are listed as "
                   "not reached)")
    add_arm_options(p, no_seeds_help="rank every run on its own", aliases=("--no-seed-groups",))
    p.add_argument("--format", choices=format_choices("rank", ("md", "json")), default="md")
    p.add_argument("--precision", type=int, default=4)
    add_switch(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engines.rank import run_rank
    from ..engines.runset import load_sources
    from ..render.many_md import render_rank
    from ..resolve import default_addresses

    grouping = grouping_from(args)
    sources = args.sources or default_addresses()
    with pushed(args, sources) as runs:
        if runs is None:
            runs = load_sources(sources, arms=grouping)
        result = run_rank(runs, metrics=args.metric, goal=goals_from(args), grouping=grouping,
                          align=args.align, at=args.step)
    if emit("rank", args.format, result.to_dict):
        return 0
    if args.format == "json":
        print(dumps(result.to_dict()))
        return 0
    from ..render.terminal import write_markdown

    write_markdown(render_rank(result, args.precision))
    return 0
