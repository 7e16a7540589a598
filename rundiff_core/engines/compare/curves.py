"""The curves and seed bands a comparison's plots draw (display only, never statistics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..align import values_at
from ..arms import Arm
from .result import Band, Curve
from .series import _PushedSeries, _Series


def _display_curves(arms: Sequence[Arm], labels: Sequence[str], si: int, metric_names: Sequence[str],
                    series: Mapping[tuple[str, str], _Series | _PushedSeries]
                    ) -> tuple[dict[str, list[Curve]], dict[str, list[Band]]]:
    curves: dict[str, list[Curve]] = {}
    bands: dict[str, list[Band]] = {}
    for m in metric_names:
        curves[m], bands[m] = [], []
        for i, arm in enumerate(arms):
            role = "student" if i == si else "baseline"
            for run in arm.seeds:
                ser = series.get((run.address, m))
                if ser is not None and len(ser.x):
                    curves[m].append(Curve(labels[i], role, run.name, ser.x, ser.y))
            primary = series.get((arm.primary.address, m))
            if len(arm.seeds) > 1 and primary is not None and len(primary.x):
                grid = primary.x
                stack = np.vstack([
                    values_at(s.x, s.y, grid, "interpolate", strict_start=True)
                    for r in arm.seeds if (s := series.get((r.address, m))) is not None and len(s.x)
                ])
                n = np.sum(np.isfinite(stack), axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean = np.where(n > 0, np.nansum(stack, axis=0) / np.maximum(n, 1), np.nan)
                    dev = np.where(n > 1, np.sqrt(np.nansum((stack - mean) ** 2, axis=0)
                                                  / np.maximum(n - 1, 1)), 0.0)
                bands[m].append(Band(labels[i], role, grid, mean, dev, n))
    return curves, bands
