"""`Found`: what `layout.find_store` found a path to be. Apart from `layout`, whose checks every
sniff runs, because only a path that is an MLflow store builds one (a frozen dataclass costs
start-up to create).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Found:
    """What a path on disk turned out to be: a store, plus a selector it implies."""

    kind: str  # "file" | "sqlite"
    store: str  # absolute path of the mlruns folder or of the sqlite file
    selector: str  # "" for the whole store, an experiment id, or a run id
    reason: str
