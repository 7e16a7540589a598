"""`rundiff ablate --baseline ADDR SRC…` — changed keys and deltas vs a baseline, at the same step."""

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
    p = sub.add_parser("ablate", help="ablation table: changed keys and same-step deltas vs a baseline")
    p.add_argument("sources", nargs="+", metavar="SRC", help="ablation runs or folders of them")
    p.add_argument("--baseline", required=True, help="address of the baseline run or seed folder")
    p.add_argument("--metric", action="append", help="metric (repeatable; first is primary)")
    add_goal_option(p)
    add_arm_options(p)
    p.add_argument("--format", choices=format_choices("ablate", ("md", "json")), default="md")
    p.add_argument("--precision", type=int, default=4)
    add_switch(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engines.ablate import run_ablate
    from ..engines.arms import load_arm, seeds_apart
    from ..engines.runset import load_sources
    from ..render.many_md import render_ablate

    grouping = grouping_from(args)
    arm = load_arm(args.baseline, grouping=grouping)
    named: set[str] = set()
    with pushed(args, args.sources) as runs:
        if runs is None:
            runs = load_sources(args.sources, arms=grouping, named=named)
        result = run_ablate(seeds_apart(arm, named), runs, metrics=args.metric, goal=goals_from(args),
                            grouping=grouping)
    if emit("ablate", args.format, result.to_dict):
        pass
    elif args.format == "json":
        print(dumps(result.to_dict()))
    else:
        from ..render.terminal import write_markdown

        write_markdown(render_ablate(result, args.precision))
    return 0
