"""Values engines accept as options, importable without numpy: argparse offers them as `choices`
while the command line is built, before (and without) importing an engine."""

from __future__ import annotations

STATISTICS = ("last10_mean", "final", "best")  # per-seed statistics (engines.stats)
ALIGN_MODES = ("nearest", "interpolate")  # same-step alignment when a point is missing (engines.align)
