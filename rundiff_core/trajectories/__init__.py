"""Task-by-task behavioural diff of agent runs (`rundiff trajectories`).

The engine reads normalized `TrajectoryRun`s (filled by the trajectory adapter's importers) and
never imports inspect_ai or any tracker SDK. Names load lazily: a sniffer that needs only the model
(`TaskRecord`, `TrajectoryRun`) or the signal helpers costs no numpy.
"""

from __future__ import annotations

from ..lazy import lazy_getattr

_EXPORTS = {
    "PairDiff": "engine", "TaskRow": "engine", "Thresholds": "engine",
    "TrajectoryMismatchError": "engine", "diff_pair": "engine", "diff_runs": "engine",
    "validate_pair": "engine",
    "Call": "model", "Features": "model", "TaskRecord": "model", "TrajectoryRun": "model",
    "mcnemar_exact": "paired", "paired_significance": "paired", "pass_hat_k": "paired",
    "write_outputs": "render",
    "analyze_messages": "signals", "bucket_finish": "signals", "classify_result": "signals",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


__all__ = [
    "Call",
    "Features",
    "PairDiff",
    "TaskRecord",
    "TaskRow",
    "Thresholds",
    "TrajectoryMismatchError",
    "TrajectoryRun",
    "analyze_messages",
    "bucket_finish",
    "classify_result",
    "diff_pair",
    "diff_runs",
    "mcnemar_exact",
    "paired_significance",
    "pass_hat_k",
    "validate_pair",
    "write_outputs",
]
