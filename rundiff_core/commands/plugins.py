"""`rundiff plugins [--all]` — loaded plugins as JSON: name, version, hooks, adapters.

Shape: `{"plugins": [{name, module, package, version, builtin, hooks, adapters, reporters,
commands}], "errors": [one line each], "skipped": [{name, reason}]}` (plugins left out by
RUNDIFF_LOAD_PLUGINS or RUNDIFF_DISABLE_PLUGINS). With --all, the `builtins` plugin lists
rundiff's own commands and formats, registered through the same hooks.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..plugins import get_plugins
from ..render import dumps

if TYPE_CHECKING:
    from ..cli import CommandHost


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("plugins", help="list installed plugins (JSON); --all includes built-ins")
    p.add_argument("--all", action="store_true", help="include built-in plugins")
    p.set_defaults(func=run, _opens_no_source=True)  # no reuse scope to set up


def run(args: argparse.Namespace) -> int:
    plugins = get_plugins()
    print(dumps({"plugins": plugins.describe(all_plugins=args.all), "errors": plugins.errors,
                 "skipped": plugins.skipped}))
    return 0
