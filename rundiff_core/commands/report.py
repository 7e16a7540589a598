"""`rundiff report SRC… [-o report.md|report.html]` — the experiment report."""

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
    p = sub.add_parser("report", help="experiment report: overview, results at one step, findings, next experiments")
    p.add_argument("sources", nargs="*", metavar="SRC")
    p.add_argument("--metric", action="append", help="headline metric (repeatable; first is primary)")
    p.add_argument("-o", "--output", help="write to FILE (.md or .html) instead of stdout")
    add_goal_option(p)
    p.add_argument("--step", type=float, metavar="N", help="read every metric at step N (default: "
                   "per metric, the last step every run reached)")
    add_arm_options(p)
    p.add_argument("--format", choices=format_choices("report", ("md", "json")), default="md")
    add_switch(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engines.report import build_report
    from ..engines.runset import load_sources
    from ..render.many_md import render_report
    from ..resolve import default_addresses

    grouping = grouping_from(args)
    sources = args.sources or default_addresses()
    with pushed(args, sources) as runs:
        if runs is None:
            runs = load_sources(sources, arms=grouping)
        rep = build_report(runs, metrics=args.metric, grouping=grouping, goal=goals_from(args),
                           at=args.step)
        if not args.output and emit("report", args.format, rep.to_dict):
            return 0
        curves = None
        if args.output and args.output.endswith(".html"):
            from ..engines.report import report_curves

            curves = report_curves(rep, runs, grouping, goals_from(args))
    if args.output and args.output.endswith(".html"):  # a page, with plots when there are two arms
        from ..render.report_html import render_report_html

        text = render_report_html(rep, curves)
    elif args.format == "json":
        text = dumps(rep.to_dict()) + "\n"
    else:
        text = render_report(rep)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"report written to {args.output}")
    elif args.format == "json":
        print(text, end="")
    else:
        from ..render.terminal import write_markdown

        write_markdown(text)
    return 0
