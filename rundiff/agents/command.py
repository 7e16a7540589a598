"""`rundiff mcp`'s command line: serve rundiff's read-only tools to AI agents over the Model
Context Protocol. Built only when `mcp` is used; the SDK is imported in `run`, by the server."""

from __future__ import annotations

import argparse

EPILOG = """\
Register with an MCP client (stdio):
  {"mcpServers": {"rundiff": {"command": "rundiff", "args": ["mcp", "--root", "/path/to/runs"]}}}
Tools: ls, detect, diff, compare, rank, trajectories — each answers a Markdown report (text) and
its JSON (structured content). Reads only under the roots; stdout is the protocol, logs go to
stderr. See docs/agents.md.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp", help="serve rundiff's read-only tools to AI agents (Model Context Protocol)",
        description="An MCP server (stdio by default) whose tools answer with rundiff's reports.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="a folder the tools may read (repeatable; default: the working directory)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                   "(loopback addresses only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="let addresses name tracking servers (wandb:ENT/PROJ, mlflow:http://…); "
                   "default: local files under the roots only")
    p.add_argument("--max-chars", type=int, default=24_000, metavar="N",
                   help="cap on each answer's text and JSON, with a truncation notice "
                   "(default: 24000)")
    p.add_argument("--verbose", action="store_true", help="log every tool call to stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .server import serve

    return serve(args.root or None, http=args.http, allow_remote=args.allow_remote,
                 max_chars=args.max_chars, verbose=args.verbose)
