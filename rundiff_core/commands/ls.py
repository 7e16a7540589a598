"""`rundiff ls SRC…` — runs, keys, point counts, step ranges and fidelity notes."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..render import dumps, fmt_step
from ..render.formats import emit, format_choices

if TYPE_CHECKING:
    from ..cli import CommandHost


def summarize(run: Any, with_points: bool = True) -> dict[str, Any]:
    row: dict[str, Any] = {
        "address": run.address,
        "name": run.name,
        "run_id": run.run_id,
        "adapter": run.adapter,
        "status": run.status,
        "seed": run.seed,
    }
    if with_points:
        import numpy as np

        keys = []
        for key in run.metric_keys():  # sorted; from the run's columns, no DataFrame
            steps = run.series(key)[0]
            keys.append({"key": key, "points": int(len(steps)),
                         "first_step": float(np.nanmin(steps)) if len(steps) else math.nan,
                         "last_step": float(np.nanmax(steps)) if len(steps) else math.nan})
        files = run.meta.get("key_files") or {}  # which file each key came from (several files)
        for k in keys:
            if k["key"] in files:
                k["file"] = files[k["key"]]
        row["keys"] = keys
        row["points"] = run.n_points()
    metadata = tracker_metadata(run)
    if metadata:
        row["metadata"] = metadata
    row["fidelity"] = list(run.fidelity)
    # agent runs (the trajectory adapter, which sets its summary as it loads): outcomes, trials,
    # exit statuses. A deferred summary is a tracker's fold, which ls does not show: not folded.
    if not run.summary_deferred and "pass_k" in run.summary:
        for key in ("tasks", "scored", "passed", "pass_rate", "pass_k", "exit_statuses", "trajectories"):
            if key in run.summary:
                row[key] = run.summary[key]
    return row


#: What rundiff itself keeps in a run's meta (where it read the run from), never shown as the
#: tracker's metadata.
_OWN_META = {"path", "layout", "files", "key_files", "goals", "config_files", "config_from",
             "non_scalar", "store", "address", "root"}


def tracker_metadata(run: Any) -> dict[str, Any]:
    """The tracker metadata a run carries (start time, host, git, program, …): shown by `ls`,
    never part of its config, arm key or label."""
    from ..metadata import is_metadata_key

    meta = run.meta or {}
    out = {k: v for k, v in meta.items() if k not in _OWN_META and is_metadata_key(k)
           and isinstance(v, str | int | float) and not isinstance(v, bool)}
    for more in (meta.get("metadata"), getattr(run, "env", None)):  # a tracker's own record
        if isinstance(more, dict):
            out.update({k: v for k, v in more.items() if isinstance(v, str | int | float)
                        and not isinstance(v, bool)})
    if getattr(run, "git_sha", None):
        out["git_sha"] = run.git_sha
    return out


def _agent_lines(row: dict[str, Any]) -> list[str]:
    out = []
    rate = ("no outcomes" if row.get("pass_rate") is None
            else f"pass rate {row['pass_rate']:.1%} ({row['passed']}/{row['scored']})")
    statuses = row.get("exit_statuses") or {}
    exits = ("; exit statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.items())) if statuses else ""
    out.append(f"  {row.get('tasks', 0)} tasks, {rate}{exits}")
    if row.get("pass_k"):
        from ..trajectories.render import pass_k_text

        out.append(f"  {pass_k_text(row['pass_k'], listing=True)}")
    for t in row.get("trajectories") or ():
        outcome = {True: "resolved", False: "unresolved", None: "no outcome"}[t["passed"]]
        cost = "" if t.get("cost") is None else f", cost {t['cost']:.4g}"
        steps = "" if t.get("steps") is None else f", {t['steps']} steps"
        exit_text = f"{t['exit_status']} → {t['finish']}, " if t["exit_status"] else ""
        calls = f", {t['calls']} calls" if t["calls"] else ""
        out.append(f"    {t['task']}: {exit_text}{outcome}{steps}{calls}{cost}")
    return out


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("ls", help="list runs with their keys, point counts and step ranges")
    p.add_argument("sources", nargs="*", metavar="SRC", help="addresses (default: detect the project)")
    p.add_argument("--format", choices=format_choices("ls", ("md", "json")), default="md")
    p.add_argument("--no-points", action="store_true", help="skip loading histories")
    p.set_defaults(func=run)


def _bare_folder(raw: str) -> bool:
    from ..address import parse_address

    return parse_address(raw).scheme is None and os.path.isdir(raw)


def runs_of(src: str, headers: list[str], unread: dict[str, str]) -> list[tuple[Any, str | None]]:
    """(run, the store it was found in) for every run an address names; a bare folder is searched
    as deep as its runs are (rundiff_core.tree), every store below it listed, with a line per
    store kind in `headers`. Files a source looked at and could not read are added to `unread`."""
    return list(iter_runs_of(src, headers, unread))


def iter_runs_of(src: str, headers: list[str], unread: dict[str, str]
                 ) -> Iterator[tuple[Any, str | None]]:
    """`runs_of`, one run at a time as each is read: `rundiff serve` lists its runs with it, and
    shows the first ones while the rest are read."""
    from ..resolve import load_runs, open_source

    if not _bare_folder(src):
        yield from ((r, None) for r in load_runs(src))
        return
    from ..tree import search_tree

    found = search_tree(src)
    if not found.n_runs:  # nothing readable below: the usual error (and its hint) says why
        runs = [(r, None) for r in _load_or_say_unread(src)]
        headers += found.summary_lines()
        yield from runs
        return
    if len(found.stores) > 1 or found.exhausted or found.stores[0].path != os.path.abspath(src):
        headers += found.summary_lines()
    for store in found.stores:
        source = open_source(store.address)
        unread.update(getattr(source, "unread_files", dict)())
        for ref in store.refs:
            yield source.load_run(ref), store.address


def _load_or_say_unread(folder: str) -> list[Any]:
    """The runs of a folder no search found runs in; when no adapter claims it, the error names
    the files `local:` looked at and did not understand (what `ls FOLDER` ends with), not only
    that nothing recognised the folder."""
    from ..errors import InputError, UnrecognizedSourceError
    from ..resolve import load_runs

    try:
        return load_runs(folder)
    except UnrecognizedSourceError:
        try:
            return load_runs(f"local:{folder}")
        except InputError as local:
            if local.message.startswith("not understood"):
                raise InputError(f"no run found in {folder}: {local.message}",
                                 hint="`rundiff ls local:FILE` says what one file looks like; "
                                 "docs/first-sight.md says what rundiff reads by shape") from None
            raise InputError(f"no run found in {folder}: no file below it is a run log",
                             hint="if you know what wrote it, name the scheme (`rundiff ls "
                             "wandb:PATH`, `tb:PATH`, …); docs/local.md lists what local: reads"
                             ) from None


def listing(sources: list[str], with_points: bool = True, unread: dict[str, str] | None = None
            ) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per run, the lines saying where a folder's stores were found): what `ls` prints
    as JSON and as text (the MCP `ls` tool answers the same). Runs are named as every command
    names them (docs/names.md: below their common folder); the address says where each is. The
    files of a searched folder that no reader understood go to `unread` ({path: what they look
    like})."""
    from ..engines.naming import name_runs

    headers: list[str] = []
    unread = {} if unread is None else unread
    found = [pair for src in sources for pair in runs_of(src, headers, unread)]
    name_runs([r for r, _ in found])
    rows = []
    for run, store in found:
        row = summarize(run, with_points)
        if store is not None:
            row["store"] = store
        rows.append(row)
    return rows, headers


MAX_UNREAD_SHOWN = 20


def unread_lines(unread: dict[str, str]) -> list[str]:
    """The last lines of `ls FOLDER`: the files it looked at and did not understand."""
    if not unread:
        return []
    base = os.path.commonpath(list(unread)) if len(unread) > 1 else os.path.dirname(next(iter(unread)))
    out = [f"# not understood: {len(unread)} file(s) left unread"]
    for path, why in sorted(unread.items())[:MAX_UNREAD_SHOWN]:
        out.append(f"#   {os.path.relpath(path, base) if base else path}: {why}")
    if len(unread) > MAX_UNREAD_SHOWN:
        out.append(f"#   … {len(unread) - MAX_UNREAD_SHOWN} more (--format json lists them all)")
    return out


def text_lines(rows: list[dict[str, Any]], headers: Sequence[str] = ()) -> list[str]:
    """The text of `ls`: where stores were found, then each run with its keys and notes."""
    out = [f"# {line}" for line in headers]
    for row in rows:
        out.append(f"{row['name']}  [{row['adapter']}, {row['status']}]  {row['address']}")
        several = len({k.get("file") for k in row.get("keys", [])} - {None}) > 1
        for k in row.get("keys", []):
            where = f" ({k['file']})" if several and k.get("file") else ""
            out.append(f"  {k['key']}: {k['points']} points, steps "
                       f"{fmt_step(k['first_step'])}–{fmt_step(k['last_step'])}{where}")
        if "tasks" in row and "pass_k" in row:
            out += _agent_lines(row)
        if row.get("metadata"):
            shown = ", ".join(f"{k}={v}" for k, v in list(row["metadata"].items())[:6])
            more = len(row["metadata"]) - 6
            out.append(f"  metadata: {shown}" + (f", +{more} more" if more > 0 else ""))
        out += [f"  note: {note}" for note in row["fidelity"]]
    return out


def run(args: argparse.Namespace) -> int:
    from ..resolve import default_addresses

    unread: dict[str, str] = {}
    rows, headers = listing(args.sources or default_addresses(), not args.no_points, unread)
    if emit("ls", args.format, lambda: rows):
        return 0
    if args.format == "json":
        print(dumps(rows))
        return 0
    for line in text_lines(rows, headers) + unread_lines(unread):
        print(line)
    return 0
