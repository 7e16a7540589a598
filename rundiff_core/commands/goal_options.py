"""`--goal [METRIC=]min|max`, shared by every command that says better or worse."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engines.directions import GoalRules

GOAL_HELP = ("direction of a metric: METRIC=min or METRIC=max (repeatable; globs allowed), or a "
             "bare min|max for every metric. Without it the direction is what the runs declare, "
             "else the vocabulary of docs/directions.md, else unknown (no better/worse is claimed)")


def add_goal_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--goal", action="append", default=[], metavar="[M=]min|max", help=GOAL_HELP)


def goals_from(args: argparse.Namespace) -> GoalRules:
    """The GoalRules the flags ask for, with `[goals]` of the nearest (or --project-file) rundiff.toml."""
    from ..engines.directions import goal_rules

    return goal_rules(list(getattr(args, "goal", None) or []),
                      getattr(args, "project_file", None))
