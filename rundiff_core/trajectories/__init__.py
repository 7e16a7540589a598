"""Task-by-task behavioural diff of agent runs (`rundiff trajectories`).

The engine reads normalized `TrajectoryRun`s (filled by the trajectory adapter's importers) and
never imports inspect_ai or any tracker SDK.
"""

from __future__ import annotations

from .engine import (
    PairDiff,
    TaskRow,
    Thresholds,
    TrajectoryMismatchError,
    diff_pair,
    diff_runs,
    validate_pair,
)
from .model import Call, Features, TaskRecord, TrajectoryRun
from .paired import mcnemar_exact, paired_significance, pass_hat_k
from .render import write_outputs
from .signals import analyze_messages, bucket_finish, classify_result

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
