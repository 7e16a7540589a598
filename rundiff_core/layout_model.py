"""What a `local:` layout's `claim` takes and returns (the contract is in `layouts`): the folder
it is shown (`LayoutFolder`) and the runs it claims there (`LayoutRun`, `Claimed`); what `meta`
returns is `layout_meta.LayoutMeta`. Apart from `layouts` because every start registers layouts,
while only sniffing or reading a path builds these (each dataclass costs start-up to create).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LayoutRun:
    """One run a layout claimed: the path that names it, its layout and the files it is read
    from. `sniffs` holds what the claim already learnt (a file's sniffed shape, a selector)."""

    path: str
    layout: str
    files: list[str] = field(default_factory=list)
    reason: str = ""
    sniffs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Claimed:
    """What a layout's `claim` found in a folder: its runs, the sub-folder names that belong
    to them (checkpoint snapshots, a `vis_data/`) so the walk does not list them again, and the
    files it looked at and could not read."""

    runs: list[LayoutRun]
    consumed: set[str] = field(default_factory=set)
    #: Files of the folder that no reader understood: {path: what they look like}, said by `ls`.
    unread: dict[str, str] = field(default_factory=dict)


@dataclass
class LayoutFolder:
    """A folder as the walk sees it: its path and the names of its files and sub-folders."""

    path: str
    files: list[str]
    dirs: list[str]

    def __post_init__(self) -> None:
        self._names = set(self.files)

    def has(self, *names: str) -> bool:
        """Every one of `names` is a file here."""
        return all(n in self._names for n in names)

    def any(self, *names: str) -> list[str]:
        """Which of `names` are files here, in the order given."""
        return [n for n in names if n in self._names]

    def join(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    def head(self, name: str, n: int = 4096) -> bytes:
        """The first `n` bytes of a file here (b"" when unreadable)."""
        try:
            with open(self.join(name), "rb") as fh:
                return fh.read(n)
        except OSError:
            return b""


__all__ = ["Claimed", "LayoutFolder", "LayoutRun"]
