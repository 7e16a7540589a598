"""A bounded directory walk for sniffers and listers: depth, entry count and symlinks are capped.

A sniffer may be handed `/` or a home folder with a million files; every adapter that looks
below a path walks through here, so each walk has the same limits: at most `max_depth` levels
below the root, at most `max_entries` directory entries read in total (a folder larger than what
is left of the budget is read only that far, in the file system's order), hidden folders skipped
unless asked, and never a directory symlink followed — a link inside the root points at a folder
the walk reaches anyway, a link out of it (or back up, making a cycle) is not the root's content.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

SNIFF_DEPTH = 3  # levels below the path a sniffer looks (runs/<exp>/<run>)
SNIFF_ENTRIES = 5000  # directory entries a sniffer lists at most


@dataclass
class Folder:
    """One listed directory. Remove entries from `dirs` to keep the walk out of them (os.walk's
    idiom): a run directory's insides are the reader's business, not the sniffer's."""

    path: str
    depth: int  # 0 for the root
    entries: list[os.DirEntry[str]]  # every entry, sorted
    dirs: list[os.DirEntry[str]] = field(default_factory=list)  # subfolders the walk enters next

    @property
    def names(self) -> set[str]:
        return {e.name for e in self.entries}

    def files(self) -> list[os.DirEntry[str]]:
        """Regular files (a symlink to a file counts; it stays a read of one file)."""
        return [e for e in self.entries if _is_file(e)]


class Walk:
    """Iterate the `Folder`s at or below a root, depth first, in sorted order.

    `max_depth=None` / `max_entries=None` lift a bound (a source listing every run of a tree it
    was explicitly given); sniffers keep the defaults. `truncated` tells afterwards whether the
    entry budget cut the walk short.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_depth: int | None = SNIFF_DEPTH,
        max_entries: int | None = SNIFF_ENTRIES,
        hidden: bool = False,
        sort_key: Callable[[str], Any] | None = None,
    ) -> None:
        self.root = os.fspath(root)
        self.max_depth = max_depth
        self.max_entries = max_entries
        self.hidden = hidden
        self.sort_key = sort_key
        self.listed = 0
        self.truncated = False

    def __iter__(self) -> Iterator[Folder]:
        stack: list[tuple[str, int]] = [(self.root, 0)]
        while stack:
            path, depth = stack.pop()
            if self.max_entries is not None and self.listed >= self.max_entries:
                self.truncated = True
                return
            entries = self._list(path)
            if entries is None:
                continue
            self.listed += len(entries)
            folder = Folder(path, depth, entries)
            if self.max_depth is None or depth < self.max_depth:
                folder.dirs = [e for e in entries if _is_real_dir(e)
                               and (self.hidden or not e.name.startswith("."))]
            yield folder
            stack.extend((e.path, depth + 1) for e in reversed(folder.dirs))

    def _list(self, path: str) -> list[os.DirEntry[str]] | None:
        room = None if self.max_entries is None else self.max_entries - self.listed
        try:
            with os.scandir(path) as it:
                if room is None:
                    entries = list(it)
                else:  # a folder of a million files costs its first `room` entries, not all
                    entries = list(itertools.islice(it, room + 1))
                    if len(entries) > room:
                        entries.pop()
                        self.truncated = True
        except OSError:  # vanished, unreadable, or not a directory: nothing to see
            return None
        key = self.sort_key
        entries.sort(key=(lambda e: key(e.name)) if key else (lambda e: e.name))
        return entries


def walk_dirs(
    root: str | os.PathLike[str],
    *,
    max_depth: int | None = SNIFF_DEPTH,
    max_entries: int | None = SNIFF_ENTRIES,
    hidden: bool = False,
    sort_key: Callable[[str], Any] | None = None,
) -> Walk:
    """The bounded walk below `root` (see `Walk`); iterate it for `Folder`s."""
    return Walk(root, max_depth=max_depth, max_entries=max_entries, hidden=hidden,
                sort_key=sort_key)


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False
