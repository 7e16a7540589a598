"""The arm options every comparing command shares: `--group-by KEY[,KEY…]` and `--no-seeds`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engines load only when a command runs, never while the parser is built
    from ..engines.arms import Grouping

GROUP_BY_HELP = ("group runs into arms by these config keys (comma-separated, repeatable) instead "
                 "of the seed rule: declared seed siblings, else equal configs in one collection")
NO_SEEDS_HELP = "no seed grouping: every run is its own arm"


def add_arm_options(p: argparse.ArgumentParser, *, no_seeds_help: str = NO_SEEDS_HELP,
                    aliases: tuple[str, ...] = ()) -> None:
    """Add --group-by and --no-seeds (plus old spellings of --no-seeds in `aliases`, hidden)."""
    p.add_argument("--group-by", action="append", default=[], metavar="KEY[,KEY…]", help=GROUP_BY_HELP)
    p.add_argument("--no-seeds", action="store_true", help=no_seeds_help)
    for alias in aliases:
        p.add_argument(alias, dest="no_seeds", action="store_true", help=argparse.SUPPRESS)


def grouping_from(args: argparse.Namespace) -> Grouping:
    """The Grouping the flags ask for (reads `[arms]` of the nearest rundiff.toml)."""
    from ..engines.arms import Grouping

    return Grouping.from_options(no_seeds=getattr(args, "no_seeds", False),
                                 group_by=getattr(args, "group_by", None),
                                 project_file=getattr(args, "project_file", None))
