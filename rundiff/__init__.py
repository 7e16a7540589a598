"""rundiff for notebooks and scripts: the CLI's comparisons as function calls.

    import rundiff
    r = rundiff.compare("journal:runs/base", "journal:runs/student", metric="loss")
    r.to_frame()          # one row per run per metric, at the student's step
    rundiff.diff("runs/exp-a/seed-0", "runs/exp-b/seed-0").verdict

See docs/api.md. Names load lazily (PEP 562): `import rundiff` imports neither pandas nor numpy;
the first call does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rundiff_core.lazy import lazy_getattr

_EXPORTS: dict[str, str] = {
    "runs": "rundiff.api",
    "history": "rundiff.api",
    "diff": "rundiff.api",
    "compare": "rundiff.api",
    "rank": "rundiff.api",
    "ablate": "rundiff.api",
    "trajectories": "rundiff.api",
    "DiffResult": "rundiff.results",
    "CompareResult": "rundiff.results",
    "RankResult": "rundiff.results",
    "AblateResult": "rundiff.results",
    "TrajectoriesResult": "rundiff.results",
    "Run": "rundiff_core.model",
    "VERDICTS": "rundiff_core.engines.diff",
    "RundiffError": "rundiff_core.errors",
    "UsageError": "rundiff_core.errors",
    "AddressError": "rundiff_core.errors",
    "InputError": "rundiff_core.errors",
    "MetricNotFoundError": "rundiff_core.errors",
    "MissingDependencyError": "rundiff_core.errors",
    "RunNotFoundError": "rundiff_core.errors",
}

__all__ = [
    "AblateResult",
    "AddressError",
    "CompareResult",
    "DiffResult",
    "InputError",
    "MetricNotFoundError",
    "MissingDependencyError",
    "RankResult",
    "Run",
    "RunNotFoundError",
    "RundiffError",
    "TrajectoriesResult",
    "UsageError",
    "VERDICTS",
    "ablate",
    "compare",
    "diff",
    "history",
    "rank",
    "runs",
    "trajectories",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals(), relative=False)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from rundiff_core.engines.diff import VERDICTS
    from rundiff_core.errors import (
        AddressError,
        InputError,
        MetricNotFoundError,
        MissingDependencyError,
        RundiffError,
        RunNotFoundError,
        UsageError,
    )
    from rundiff_core.model import Run

    from .api import ablate, compare, diff, history, rank, runs, trajectories
    from .results import AblateResult, CompareResult, DiffResult, RankResult, TrajectoriesResult
