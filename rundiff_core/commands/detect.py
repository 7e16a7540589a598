"""`rundiff detect [PATH]` — every claim with its reason, and the winner."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from ..detect import collect_claims, detect_project, winning_claim
from ..errors import RundiffError
from ..plugins import get_plugins
from ..registry import claim_priority

if TYPE_CHECKING:
    from ..cli import CommandHost


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("detect", help="show which adapter claims a path (or the project) and why")
    p.add_argument("path", nargs="?", help="a path to sniff (default: project-level detection)")
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plugins = get_plugins()
    if args.path is None:
        claims = detect_project(plugins=plugins)
        rows = [{"adapter": s.name, "priority": claim_priority(c, s), "reason": c.reason, "address": c.address}
                for c, s in claims]
        result = {"cwd": os.getcwd(), "claims": rows, "winner": rows[0] if rows else None}
        if args.format == "json":
            from ..render import dumps

            print(dumps(result))
        else:
            for r in rows:
                print(f"claim: {r['adapter']} (priority {r['priority']}): {r['reason']} → {r['address']}")
            print(f"winner: {rows[0]['adapter']} → {rows[0]['address']}" if rows else
                  "winner: none — no tracker found here; tell rundiff where the metrics live "
                  "(e.g. `rundiff ls runs/` or `rundiff ls wandb:ENTITY/PROJECT`)")
        return 0 if rows else 2
    claims = collect_claims(args.path, plugins)
    rows = [{"adapter": c.spec.name, "priority": c.priority, "reason": c.claim.reason,
             "scheme": c.spec.schemes[0], "locator": c.claim.locator or args.path} for c in claims]
    winner, address, error = None, None, None
    try:
        best = winning_claim(args.path, claims, plugins)  # the claims above: one sniff
        winner = best.spec.name
        address = f"{best.spec.schemes[0]}:{best.claim.locator or args.path}"
    except RundiffError as exc:
        error = exc.message if not exc.hint else f"{exc.message} (hint: {exc.hint})"
    deeper = None
    if not claims and os.path.isdir(args.path):  # runs deeper than a sniff looks
        from ..tree import as_rows, search_tree

        deeper = search_tree(args.path, plugins)
    if args.format == "json":
        from ..render import dumps

        print(dumps({"path": args.path, "claims": rows, "winner": winner, "address": address,
                     "error": error, "deeper": as_rows(deeper) if deeper else None}))
    else:
        for r in rows:
            print(f"claim: {r['adapter']} (priority {r['priority']}): {r['reason']}")
        if winner:
            print(f"winner: {winner} → {address}")
        elif deeper is not None and deeper.n_runs:
            print(f"winner: none at {args.path} itself; found deeper ({deeper.folders} folders "
                  f"searched):")
            for line in deeper.summary_lines():
                print(f"  {line}")
            for store in [s for s in deeper.stores if s.refs][:5]:
                print(f"  address: {store.address}")
            print(f"  `rundiff ls {args.path}` lists them all")
        else:
            print(f"winner: none — {error}")
            for line in deeper.summary_lines() if deeper else ():
                print(f"  {line}")
    return 0 if winner or (deeper is not None and deeper.n_runs) else 2
