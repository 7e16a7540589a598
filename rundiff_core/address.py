"""Parse `scheme:locator` addresses; a bare path has no scheme and is sniffed later."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+._-]*):(.*)$", re.S)


@dataclass(frozen=True)
class Address:
    """A parsed address: `scheme` is None for a bare path that must be sniffed."""

    raw: str
    scheme: str | None
    locator: str

    def __str__(self) -> str:
        return self.raw


def parse_address(raw: str) -> Address:
    """Split a raw address into scheme and locator.

    A one-letter prefix is a Windows drive (`C:\\runs`), never a scheme (fsspec's rule). Whether
    the scheme is registered is the resolver's question, not the parser's: it lets an explicit
    registered scheme win over an existing path, and `./journal:x` escape a literal folder name.
    """
    m = _SCHEME.match(raw)
    if not m or len(m.group(1)) == 1:
        return Address(raw, None, raw)
    return Address(raw, m.group(1).lower(), m.group(2))
