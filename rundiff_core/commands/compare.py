"""`rundiff compare ADDR ADDR…` — every baseline sliced at the student's current step."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..render import dumps
from ..render.formats import emit, format_choices
from ._pushdown import add_switch, push_arms
from .arm_options import add_arm_options, grouping_from
from .goal_options import add_goal_option, goals_from

# engines.options.ALIGN_MODES, spelled out: building the parser imports no engine module
# (tests/core/test_startup_imports.py checks the two agree)
ALIGN_MODES = ("nearest", "interpolate")

if TYPE_CHECKING:
    from ..cli import CommandHost
    from ..engines.arms import Arm, Grouping

EPILOG = """\
The student is the run still training (status running, else the one with the fewest steps), or
--student ADDR. Every baseline is read at the student's current step, never at its own end.
Examples:
  rundiff compare runs/exp-new/seed-0 runs/exp-baseline
  rundiff compare wandb:ent/proj/abc123 journal:runs/foo --metric eval/acc --align interpolate
  rundiff compare A B --x epoch --html report.html --smooth 0.6
"""


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser(
        "compare", help="same-step comparison of runs from any backends (proxy vs downstream)",
        description="Same-step comparison of two or more runs or seed groups from any backends.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("addresses", nargs="+", metavar="ADDR",
                   help="run or seed-group addresses (scheme:locator, a path, or a run name)")
    p.add_argument("--student", metavar="ADDR", help="the run being evaluated (default: the one "
                   "still training, else the one with the fewest steps)")
    p.add_argument("--metric", action="append", default=[], metavar="M",
                   help="metric or glob such as 'val/*' to compare (repeatable; default: the "
                   "metrics the student shares with a baseline, plus downstream metrics a "
                   "baseline logs)")
    p.add_argument("--all", action="store_true",
                   help="show every compared metric as its own row (default: the headline metrics "
                   "and one summary row per family of keys; --format json always holds every cell)")
    p.add_argument("--map", action="append", default=[], metavar="A=B",
                   help="treat logged key A as metric B (repeatable)")
    p.add_argument("--proxy", action="append", default=[], metavar="PATTERN",
                   help="declare metrics (glob) as proxy (repeatable)")
    p.add_argument("--downstream", action="append", default=[], metavar="PATTERN",
                   help="declare metrics (glob) as downstream (repeatable)")
    p.add_argument("--diagnostic", action="append", default=[], metavar="PATTERN",
                   help="declare metrics (glob) as diagnostics, not compared by default")
    p.add_argument("--project-file", metavar="PATH",
                   help="rundiff.toml with a [groups] table (default: found from the cwd upwards)")
    p.add_argument("--align", choices=ALIGN_MODES, default="nearest",
                   help="when a baseline has no point at the student's step (default: nearest)")
    p.add_argument("--x", default="step", metavar="AXIS",
                   help="x-axis: step (default), wall (seconds since start), or a logged monotone "
                   "key such as epoch or tokens")
    p.add_argument("--last", type=int, default=10, metavar="K",
                   help="student points used for the trend (default: 10)")
    add_goal_option(p)
    add_arm_options(p)
    p.add_argument("--format", choices=format_choices("compare", ("md", "json", "csv")), default="md",
                   help="stdout format: Markdown tables (default), JSON, or CSV")
    p.add_argument("--precision", type=int, default=4, help="significant decimals in tables")
    p.add_argument("--trace", action="store_true",
                   help="a source column (address, run id, step) instead of footnotes")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--png", metavar="DIR", help="also write one PNG plot per metric into DIR")
    p.add_argument("--smooth", type=float, default=0.0, metavar="W",
                   help="TensorBoard-style debiased EMA weight for plots only (0 ≤ W < 1)")
    add_switch(p)
    p.set_defaults(func=run)


def resolve_arms(addresses: list[str], student: str | None, siblings: bool = True,
                 grouping: Grouping | None = None) -> tuple[list[Arm], int | None]:
    """Arms for every address (labelled together), and the student's index when --student names
    one. The named addresses are the sides (`engines.arms.named_sides`); when every run given is a
    seed of one arm, the runs are compared one by one."""
    from ..engines.arms import label_arms

    arms, si = _resolve(addresses, student, siblings, grouping)
    label_arms(arms, grouping)
    return arms, si


def _resolve(addresses: list[str], student: str | None, siblings: bool,
             grouping: Grouping | None) -> tuple[list[Arm], int | None]:
    from ..engines.arms import load_arms, named_sides, runs_apart
    from ..resolve import expand_stores

    arms: list[Arm] = []
    for given in addresses:  # a bare folder stands for every store below it, as for `rank`
        for raw in expand_stores(given):
            arms += load_arms(raw, siblings=siblings, grouping=grouping)
    arms = runs_apart(named_sides(arms))
    if student is None:
        return arms, None
    direct = [i for i, arm in enumerate(arms) if arm.address == student]
    if len(direct) == 1:
        return arms, direct[0]
    wanted = load_arms(student, siblings=siblings, grouping=grouping)
    if len(wanted) != 1:
        raise UsageError(f"--student {student} names {len(wanted)} arms", hint="name one run")
    mine = {r.address for r in wanted[0].seeds}
    primary = wanted[0].primary.address
    for i, arm in enumerate(arms):  # the arm holding the student's run itself, else one of its seeds
        if arm.primary.address == primary:
            return arms, i
    for i, arm in enumerate(arms):
        if arm.primary.address in mine or primary in {r.address for r in arm.seeds}:
            return arms, i
    return [wanted[0], *arms], 0


def run(args: argparse.Namespace) -> int:
    from ..engines.compare import run_compare
    from ..engines.metricnames import parse_maps
    from ..engines.roles import build_rules

    if not 0.0 <= args.smooth < 1.0:
        raise UsageError("--smooth must be in [0, 1)", hint="TensorBoard's default is 0.6")
    rules = build_rules(args.proxy, args.downstream, args.diagnostic, args.project_file)
    arms, student = resolve_arms(args.addresses, args.student, grouping=grouping_from(args))
    push_arms(args, arms)  # fleet runs answer from DuckDB where they are sliced
    result = run_compare(
        arms, metrics=args.metric or None, maps=parse_maps(args.map), student=student,
        align=args.align, x=args.x, rules=rules, goals=goals_from(args), last_k=args.last,
        curves=bool(args.html or args.png), show_all=args.all,
    )
    if args.html:
        from ..render.compare_html import write_compare_html

        write_compare_html(result, args.html, precision=args.precision, smooth=args.smooth,
                           trace=args.trace)
        sys.stderr.write(f"wrote {args.html}\n")
    if args.png:
        from ..render.compare_png import write_compare_pngs

        paths = write_compare_pngs(result, args.png, smooth=args.smooth)
        sys.stderr.write(f"wrote {len(paths)} plot(s) to {args.png}\n")
    if emit("compare", args.format, result.to_dict):
        pass
    elif args.format == "json":
        print(dumps(result.to_dict()))
    elif args.format == "csv":
        from ..render.compare_csv import render_compare_csv

        sys.stdout.write(render_compare_csv(result))
    else:
        from ..render.compare_md import render_compare_markdown
        from ..render.terminal import write_markdown

        write_markdown(render_compare_markdown(result, args.precision, args.trace))
    return 0
