"""Where Neptune runs live on disk: the three local formats, found by name and a few bytes.

Stdlib only and cheap, because sniffing calls it for every bare path: no tracker SDK, no pyarrow,
no reading of run data. The readers (`exporter`, `legacy`, `scale`) do the real work.

- exporter Parquet: `<data>/<project>/<run>_part_<n>.parquet` (neptune-exporter's layout)
- neptune 1.x: `.neptune/{offline,async}/run__<uuid>__<pid>__<rand>/data-<version>.log`
- neptune-scale: `.neptune/<project>_<run>_<ns>/run_operations.sqlite3`
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from rundiff_core import FrozenRecord, PlainRecord, footer_has_columns, walk_dirs

PART_RE = re.compile(r"^(?P<prefix>.+)_part_(?P<n>\d+)\.parquet$")
DATA_LOG_RE = re.compile(r"^data-(?P<v>\d+)\.log$")
SCALE_DB = "run_operations.sqlite3"
SQLITE_MAGIC = b"SQLite format 3\x00"
EXPORT_COLUMNS = {"run_id", "attribute_path", "attribute_type"}
SCAN_BUDGET = 4000  # directory entries a sniff may look at before giving up


class ExportGroup(FrozenRecord):
    """One run's part files in an exporter project folder (or a hand-made single file):
    `directory`, `prefix`, `parts` (the existing `*_part_<n>.parquet`, in part order) and
    `tmp_parts` (`*.parquet.tmp` left by an interrupted export). A `FrozenRecord`, as the frozen
    dataclass it was (init, repr, equality, hash, no assignment): this module is imported by
    every sniff, and creating the dataclass cost more start-up than all of its uses."""

    __match_args__ = ("directory", "prefix", "parts", "tmp_parts")

    def __init__(self, directory: str, prefix: str, parts: tuple[str, ...],
                 tmp_parts: int = 0) -> None:
        self._set_fields(directory, prefix, parts, tmp_parts)

    @property
    def anchor(self) -> str:
        """What an address names to reopen this group: the folder, or a lone non-part file."""
        if len(self.parts) == 1 and not PART_RE.match(os.path.basename(self.parts[0])):
            return self.parts[0]
        return self.directory

    @property
    def complete(self) -> bool:
        """Part 0 exists (the exporter renames it last); a lone non-part file is complete."""
        if not self.parts:
            return False
        first = os.path.basename(self.parts[0])
        return first == f"{self.prefix}_part_0.parquet" or not PART_RE.match(first)


_NEW = object()  # "a new empty list", Found's default


class Found(PlainRecord):
    """Every Neptune run container under a path, by format: `exports` (ExportGroup), `legacy`
    (1.x container folders), `scale` (run_operations.sqlite3 paths), `skipped` (non-run
    containers: models, projects). A `PlainRecord`, as the dataclass it was (init with a new list per
    field, repr, equality, unhashable): every sniff builds one, and creating the dataclass cost
    more start-up than all of its uses."""

    __match_args__ = ("exports", "legacy", "scale", "skipped")

    def __init__(self, exports: Any = _NEW, legacy: Any = _NEW, scale: Any = _NEW,
                 skipped: Any = _NEW) -> None:
        self.exports: list[ExportGroup] = [] if exports is _NEW else exports
        self.legacy: list[str] = [] if legacy is _NEW else legacy
        self.scale: list[str] = [] if scale is _NEW else scale
        self.skipped: list[str] = [] if skipped is _NEW else skipped

    def __bool__(self) -> bool:
        return bool(self.exports or self.legacy or self.scale)

    def count(self) -> int:
        return len(self.exports) + len(self.legacy) + len(self.scale)


def _entries(path: str) -> list[os.DirEntry]:
    try:
        return sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return []


LEGACY_MARKERS = ("metadata.json", "last_put_version", "last_ack_version")


def _looks_legacy(path: str, names: set[str]) -> bool:
    """`data-<n>.log` plus the queue's own files, or a first line that is a queued operation."""
    logs = sorted((int(m["v"]), n) for n in names if (m := DATA_LOG_RE.match(n)))
    if not logs:
        return False
    if any(m in names for m in LEGACY_MARKERS):
        return True
    try:
        with open(os.path.join(path, logs[0][1]), "rb") as fh:
            return fh.read(8).startswith(b'{"obj"')
    except OSError:
        return False


def legacy_container_type(path: str) -> str:
    """`run`, `model`, `model_version` or `project`: from metadata.json, else the folder name."""
    try:
        with open(os.path.join(path, "metadata.json"), encoding="utf-8") as fh:
            kind = json.load(fh).get("containerType")
        if isinstance(kind, str) and kind:
            return kind
    except (OSError, ValueError, AttributeError):
        pass
    name = os.path.basename(os.path.normpath(path))
    return name.split("__", 1)[0] if "__" in name else "run"


def is_scale_db(path: str) -> bool:
    """A neptune-scale operations database: the file name, confirmed by the SQLite header."""
    if os.path.basename(path) != SCALE_DB or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    return head == SQLITE_MAGIC or head == b""  # an empty db is still the client's file


PARQUET_MAGIC = b"PAR1"
def export_schema(path: str) -> bool | None:
    """True/False: the Parquet footer has/lacks the exporter's columns; None: no readable footer
    (read with the standard library: sniffing must not import pyarrow)."""
    return footer_has_columns(path, EXPORT_COLUMNS)


def has_export_schema(path: str) -> bool:
    """True when a Parquet file's footer has the exporter's columns (reads only the footer)."""
    return export_schema(path) is True


def export_groups(directory: str) -> list[ExportGroup]:
    """Group `<prefix>_part_<n>.parquet` files of one folder by run prefix."""
    parts: dict[str, list[tuple[int, str]]] = {}
    tmps: dict[str, int] = {}
    for entry in _entries(directory):
        if not entry.is_file():
            continue
        m = PART_RE.match(entry.name)
        if m:
            parts.setdefault(m["prefix"], []).append((int(m["n"]), entry.path))
        elif entry.name.endswith(".parquet.tmp"):
            m = PART_RE.match(entry.name[: -len(".tmp")])
            if m:
                tmps[m["prefix"]] = tmps.get(m["prefix"], 0) + 1
    return [
        ExportGroup(directory, prefix, tuple(p for _n, p in sorted(files)), tmps.get(prefix, 0))
        for prefix, files in sorted(parts.items())
    ]


def group_of_file(path: str) -> ExportGroup:
    """The run a single Parquet file belongs to: its sibling parts, or the file alone."""
    directory = os.path.dirname(os.path.abspath(path))
    m = PART_RE.match(os.path.basename(path))
    if m:
        for group in export_groups(directory):
            if group.prefix == m["prefix"]:
                return group
    return ExportGroup(directory, os.path.splitext(os.path.basename(path))[0], (os.path.abspath(path),))


def _is_export_dir(path: str, strict: bool) -> bool:
    """A folder of exporter parts. Sniffing (`strict`) needs one confirmed footer; an explicit
    `neptune:` address also takes a folder whose parts are all torn, so the reader can say so."""
    torn = False
    for entry in _entries(path):
        if entry.is_file() and PART_RE.match(entry.name):
            verdict = export_schema(entry.path)
            if verdict is not None:
                return verdict
            torn = True
    return torn and not strict


def find(path: str, depth: int = 4, budget: int | None = None, *, enter_dot_neptune: bool = True,
         strict: bool = True) -> Found:
    """Every Neptune run container at or below `path` (to `depth` folder levels, listing at most
    `budget` directory entries).

    `strict` (sniffing) claims exporter Parquet only on a readable footer with its columns.

    `enter_dot_neptune=False` keeps a sniff of a project folder from claiming it for the `.neptune`
    folder inside (project detection reports that one); other hidden folders are never entered.
    """
    found = Found()
    path = os.path.abspath(path)
    if os.path.isfile(path):
        name = os.path.basename(path)
        if is_scale_db(path):
            found.scale.append(path)
        elif DATA_LOG_RE.match(name) or name in LEGACY_MARKERS:
            return find(os.path.dirname(path), 0, budget, strict=strict)
        elif name.endswith(".parquet") and (has_export_schema(path) or (
                not strict and PART_RE.match(name) and export_schema(path) is None)):
            found.exports.append(group_of_file(path))
        return found
    for folder in walk_dirs(path, max_depth=depth, max_entries=budget, hidden=True):
        folder.dirs[:] = [e for e in folder.dirs if not e.name.startswith(".")
                          or (enter_dot_neptune and e.name == ".neptune")]
        if _container(folder.path, folder.names, found, strict):
            folder.dirs.clear()  # a run container's insides are the reader's business
    return found


def _container(path: str, names: set[str], found: Found, strict: bool) -> bool:
    """Record the run container `path` is, if any; True when it is one."""
    if SCALE_DB in names and is_scale_db(os.path.join(path, SCALE_DB)):
        found.scale.append(os.path.join(path, SCALE_DB))
        return True
    if _looks_legacy(path, names):
        if legacy_container_type(path) == "run":
            found.legacy.append(path)
        else:
            found.skipped.append(path)
        return True
    if any(PART_RE.match(n) for n in names) and _is_export_dir(path, strict):
        found.exports.extend(export_groups(path))
        return True
    return False


def looks_like_neptune_folder(path: str) -> bool:
    """A `.neptune` folder (or one shaped like it): runs sit one or two levels down."""
    base = os.path.basename(os.path.normpath(path))
    if base == ".neptune":
        return True
    if base in ("offline", "async") and os.path.basename(os.path.dirname(os.path.normpath(path))) == ".neptune":
        return True
    return False
