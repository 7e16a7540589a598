"""The `rundiff` command line: argparse subcommands, one module each under `commands/`.

User errors (RundiffError) print one line plus a hint and exit 2; `--debug` shows the traceback.
Exit codes: 0 success, 1 a check the user asked for failed (e.g. `watch --once` raised alerts),
2 usage or input error, 3 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from .errors import PluginError, RundiffError

COMMAND_MODULES: tuple[str, ...] = (
    "rundiff_core.commands.diff",
    "rundiff_core.commands.ls",
    "rundiff_core.commands.adapters",
    "rundiff_core.commands.detect",
    "rundiff_core.commands.plugins",
)

OPTIONAL_COMMAND_MODULES: tuple[str, ...] = (
    "rundiff_core.commands.compare",
    "rundiff_core.commands.trajectories",
    "rundiff_core.commands.rank",
    "rundiff_core.commands.ablate",
    "rundiff_core.commands.report",
    "rundiff_core.commands.watch",
    "rundiff_core.commands.export",
    "rundiff_core.commands.mcp",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with a one-line message, like every user error
        self.print_usage(sys.stderr)
        sys.stderr.write(f"rundiff: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rundiff", description="Compare ML runs wherever they were logged.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--tracking-uri", metavar="URI",
                        help="MLflow tracking URI for mlflow: addresses without a store "
                             "(same as MLFLOW_TRACKING_URI)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES + OPTIONAL_COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.add_parser(sub)
    from .plugins import get_plugins

    plugins = get_plugins()
    plugins.add_commands(CommandHost(sub, plugins))
    return parser


class CommandHost:
    """What `rundiff_register_commands(cli)` receives: adds a plugin's subcommands, refusing a
    name that is taken, and records them for `rundiff plugins`."""

    def __init__(self, sub: argparse._SubParsersAction, plugins: Any, plugin: str = "") -> None:
        self._sub, self._plugins, self.plugin = sub, plugins, plugin

    def for_plugin(self, plugin: str) -> CommandHost:
        return CommandHost(self._sub, self._plugins, plugin)

    def add_command(self, name: str, *, help: str = "", description: str | None = None,
                    **kwargs: object) -> argparse.ArgumentParser:
        """A new subcommand's parser: add arguments, then `set_defaults(func=run)`."""
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]{1,31}", name):
            raise PluginError(f"plugin '{self.plugin}' added the command name {name!r}",
                              hint="use a word such as 'slack-notify'")
        owner = self._owner(name)
        if owner is not None:
            raise PluginError(f"plugin '{self.plugin}' added the command '{name}', which "
                              f"{owner} already has", hint="rename the plugin's command")
        parser = self._sub.add_parser(name, help=help or None, description=description or help,
                                      **kwargs)
        parser.set_defaults(func=_no_handler(self.plugin, name), _plugin=self.plugin)
        info = getattr(self._plugins, "info", {}).get(self.plugin)
        if info is not None and name not in info.commands:
            info.commands.append(name)
        return parser

    def _owner(self, name: str) -> str | None:
        taken = self._sub.choices.get(name)
        if taken is None:
            return None
        plugin = taken.get_default("_plugin")
        return f"plugin '{plugin}'" if plugin else "rundiff"


def _no_handler(plugin: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise PluginError(f"plugin '{plugin}' added the command '{name}' without a handler",
                          hint="the plugin must call parser.set_defaults(func=run)")
    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if args.tracking_uri:
        import os

        os.environ["MLFLOW_TRACKING_URI"] = args.tracking_uri
    try:
        return int(args.func(args) or 0)
    except RundiffError as exc:
        if args.debug:
            traceback.print_exc()
        sys.stderr.write(f"rundiff: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {exc.hint}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("rundiff: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
