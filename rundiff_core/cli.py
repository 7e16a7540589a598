"""The `rundiff` command line: argparse subcommands, one module each under `commands/`.

User errors (RundiffError) print one line plus a hint and exit 2; `--debug` shows the traceback.
Exit codes: 0 success, 1 a check the user asked for failed (e.g. `watch --once` raised alerts),
2 usage or input error, 3 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from .errors import RundiffError

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
    return parser


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
