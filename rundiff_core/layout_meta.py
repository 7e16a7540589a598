"""`LayoutMeta`: what a `local:` layout's `meta(run)` returns (the contract is in `layouts`).
Apart from `layout_model` because a sniff builds folders and claims, and only reading a run's
metadata builds this (a dataclass costs start-up to create: `detect` never needs it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LayoutMeta:
    """What a layout read besides the history. `notes` say which file was read as what;
    `goals` are directions the files declare ({key: "min" | "max"}, with `goal_sources`
    saying who declared each); `arm` is the experiment name seeds share (default: the folder
    name without its seed)."""

    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = "unknown"
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    arm: str | None = None
    events: list[Any] = field(default_factory=list)
    goals: dict[str, str] = field(default_factory=dict)
    goal_sources: dict[str, str] = field(default_factory=dict)


__all__ = ["LayoutMeta"]
