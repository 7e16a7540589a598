"""Nested mappings to dotted keys: what config diffs, arm keys and readers share (no numpy, so a
sniffer may use it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(mapping: Mapping[str, Any], prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """Flatten nested mappings to dotted keys; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        name = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, name, sep))
        else:
            out[name] = v
    return out
