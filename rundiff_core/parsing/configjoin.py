"""A run's config held in another file, joined to the run by its name.

Scripts that print `Namespace(run_name='UNet_lr1e_3', lr=0.001, …)` to stdout, with their logs
written to `runs/<run_name>/`, leave the configs in a copy of stdout beside the run folders
(mqtth3w's `runs/best_res_1run.txt`, one Namespace per run). The file's own name says nothing
reliable (`best_res_1run` holds runs 1–6 of a sweep, not run 1); what joins a Namespace to a run
is a field of it whose value is the run folder's name. `joined_config` gives a run folder the
Namespace printed in a text file of its parent folder that names it — only when that is
unambiguous: two different Namespaces naming one folder give none, and a note says so.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Any

from .configlines import namespace_in

MAX_FILE_BYTES = 1 << 20  # a larger file is a log, not a list of configs
MAX_FILES = 64  # text files of a folder looked at, in name order
TEXT_EXTENSIONS = ("", ".txt", ".log", ".out")

_Found = tuple[str, int, str, dict[str, Any]]  # (file, line, field, config)


def _candidates(folder: str) -> tuple[str, ...]:
    """The names of `folder`'s files with a text extension, in name order. Cached by the
    folder's own mtime, which moves whenever an entry is added, removed or renamed: a folder of
    1,000 run folders is listed once, not once per run (a recently changed folder is listed
    again, as a coarse clock could hide a second change)."""
    try:
        st = os.stat(folder)
    except OSError:
        return ()
    key = (folder, st.st_mtime_ns, st.st_ino)
    hit = _CANDIDATES.get(folder)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        with os.scandir(folder) as it:
            names = []
            for entry in it:
                if os.path.splitext(entry.name)[1].lower() not in TEXT_EXTENSIONS:
                    continue
                try:
                    if entry.is_file():
                        names.append(entry.name)
                except OSError:
                    continue
    except OSError:
        return ()
    got = tuple(sorted(names))
    if time.time() - st.st_mtime > SETTLED_SECONDS:
        if len(_CANDIDATES) >= 256:
            _CANDIDATES.clear()
        _CANDIDATES[folder] = (key, got)
    return got


_CANDIDATES: dict[str, tuple[tuple[str, int, int], tuple[str, ...]]] = {}
SETTLED_SECONDS = 2.0


def _listing(folder: str) -> tuple[tuple[str, int, int], ...]:
    """The candidate files of `folder` with their size and mtime (the cache's key)."""
    out = []
    for name in _candidates(folder):
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        if 0 < st.st_size <= MAX_FILE_BYTES:
            out.append((name, st.st_size, st.st_mtime_ns))
        if len(out) >= MAX_FILES:
            break
    return tuple(out)


@lru_cache(maxsize=32)
def _names_index(folder: str, listing: tuple[tuple[str, int, int], ...]
                 ) -> dict[str, list[_Found]]:
    """{a text value of a Namespace field: where it was printed} over `folder`'s text files."""
    index: dict[str, list[_Found]] = {}
    for name, _, _ in listing:
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                raw = fh.read(MAX_FILE_BYTES)
        except OSError:
            continue
        if b"Namespace(" not in raw or b"\0" in raw[:4096]:
            continue
        for i, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            if "Namespace(" not in line or (config := namespace_in(line)) is None:
                continue
            for key, value in config.items():
                if isinstance(value, str) and value and "/" not in value:
                    index.setdefault(value, []).append((name, i, key, config))
    return index


def joined_config(run_dir: str) -> tuple[dict[str, Any], list[str]]:
    """(config, notes): the argparse Namespace printed in a text file of `run_dir`'s parent
    whose field names `run_dir` (`run_name='UNet_lr1e_3'` for `runs/UNet_lr1e_3/`); nothing
    when no file names it, or — with a note — when different Namespaces do."""
    parent, name = os.path.split(os.path.normpath(run_dir))
    listing = _listing(parent)
    if not listing:
        return {}, []
    found = _names_index(parent, listing).get(name, [])
    if not found:
        return {}, []
    distinct = []
    for hit in found:
        if all(hit[3] != d[3] for d in distinct):
            distinct.append(hit)
    if len(distinct) > 1:
        where = ", ".join(f"{f} line {n}" for f, n, _, _ in distinct[:3])
        return {}, [f"{len(distinct)} different argparse Namespaces name this run ({where}); "
                    "none read as its config"]
    file, line, key, config = distinct[0]
    return dict(config), [f"../{file} line {line}: the argparse Namespace whose {key} = "
                          f"{name!r} names this run → config ({len(config)} key(s))"]


__all__ = ["joined_config"]
