"""Phase 3 of a comparison: the name each metric is compared under, and each run's key for it."""

from __future__ import annotations

from collections.abc import Mapping

from ..metricnames import NameResolution, resolve_names
from .keys import KeyChoice
from .request import Request


def resolve(req: Request, keys: KeyChoice, maps: Mapping[str, str] | None,
            student: int | None) -> NameResolution:
    """Names follow the student's spelling when it is known up front (named, or the one running)."""
    primaries = [a.primary.address for a in req.arms]
    running = [a for a, on in zip(req.arms, req.running, strict=True) if on]
    student_hint = (req.arms[student].primary.address if student is not None
                    else running[0].primary.address if running else None)
    return resolve_names(
        {r.address: keys.logged[r.address] for r in req.runs},
        keys.asked,
        maps,
        prefer=student_hint or primaries[0],
        required=primaries,
        labels={r.address: r.name for r in req.runs},
    )
