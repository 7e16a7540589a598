"""`rundiff adapters` — every adapter, its schemes, priority, provider and install state."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..plugins import get_plugins
from ..render import dumps, md_table

if TYPE_CHECKING:
    from ..cli import CommandHost


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("adapters", help="list adapters in detection order")
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.set_defaults(func=run, _opens_no_source=True)  # no reuse scope to set up


def run(args: argparse.Namespace) -> int:
    plugins = get_plugins()
    rows = plugins.registry.describe()
    if args.format == "json":
        print(dumps(rows))
    else:
        table = [
            [r["name"], ", ".join(f"{s}:" for s in r["schemes"]), str(r["priority"]),
             f"{r['package']} ({r['plugin']})",
             "yes" if r["installed"] else f"no — {r['install_hint'] or 'missing ' + ', '.join(r['missing'])}"]
            for r in rows
        ]
        print("\n".join(md_table(["adapter", "schemes", "priority", "provided by", "installed"], table)))
    if plugins.report is None:  # the process-wide set already printed its errors to stderr
        for err in plugins.errors:
            sys.stderr.write(f"rundiff: plugin error: {err}\n")
    return 0
