"""An adapter's answer to a sniff: `Claim` (a bare path is mine, and why) and `ProjectClaim`
(this project logs to my tracker). Apart from `registry` because every start registers adapters,
while only a sniff builds claims (each dataclass costs start-up to create: `rundiff --help` and
`rundiff adapters` never need them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """An adapter's claim on a bare path, with the reason shown by `rundiff detect`.

    `priority`, when set, ranks this claim instead of the adapter's `priority`: evidence that is
    stronger (or weaker) than the adapter's usual claim says so itself.
    """

    adapter: str
    reason: str
    locator: str | None = None  # the path the adapter wants opened, when not the given one
    priority: int | None = None


@dataclass(frozen=True)
class ProjectClaim:
    """An adapter's claim that the current project logs to its tracker (`priority` as for Claim)."""

    adapter: str
    reason: str
    address: str | None = None
    priority: int | None = None


__all__ = ["Claim", "ProjectClaim"]
