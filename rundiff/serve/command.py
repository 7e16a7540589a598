"""`rundiff serve`'s command line: a local comparison page for runs from any tracker."""

from __future__ import annotations

import argparse

EPILOG = """\
Opens nothing by itself: it prints a URL with a per-launch token (as `jupyter lab` does) on
127.0.0.1. Another --host needs an explicit --token. Reads only under the roots (default: the
folders of the sources given, else the working directory); never writes. See docs/serve.md.
Examples:
  rundiff serve runs/
  rundiff serve tb:logs/baseline runs/student --port 8770
"""

DEFAULT_PORT = 8770


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="a local page to compare runs from any tracker (run table, same-step "
        "compare, live curves)",
        description="Serve a local page: the run table, the same-step comparison of the runs "
        "you select, their curves, updated live as runs train.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sources", nargs="*", metavar="SRC",
                   help="addresses or folders, as `rundiff ls` takes them (default: the working "
                   "directory)")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="a folder the page may read (repeatable; default: each folder given, "
                   "else the working directory)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}, the next free one if taken; 0: any)")
    p.add_argument("--token", help="the token the URL carries (default: a random one per launch)")
    p.add_argument("--stale", default="30m",
                   help="mark a run stale after this long without new data, as `watch` does "
                   "(4× as long: likely killed)")
    p.add_argument("--allow-remote", action="store_true",
                   help="let addresses name tracking servers (wandb:ENT/PROJ, mlflow:http://…)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .server import serve

    return serve(args.sources, roots=args.root or None, host=args.host, port=args.port,
                 token=args.token, stale=args.stale, allow_remote=args.allow_remote,
                 verbose=args.verbose)
