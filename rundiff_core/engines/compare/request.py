"""Phase 1 of a comparison: the request checked, its rules read, and the arms labelled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import UsageError
from ...model import Run
from ..align import ALIGN_MODES
from ..arms import Arm, label_arms
from ..directions import GoalRules, goal_rules
from ..roles import GroupRules


@dataclass
class Request:
    """The arms as every later phase reads them (by position), and the rules they are read by."""

    arms: Sequence[Arm]
    labels: list[str]
    running: list[bool]  # an arm trains while any of its seeds does
    runs: list[Run]  # every seed of every arm, in order
    rules: GroupRules  # which metrics are proxy, downstream or diagnostic
    goals: GoalRules  # which way is better


def check_request(arms: Sequence[Arm], align: str, last_k: int, rules: GroupRules | None,
                  goals: GoalRules | Mapping[str, str] | Sequence[str] | None) -> Request:
    """Two arms or more, each run given once, a known align mode and a trend of 2 points or more."""
    if len(arms) < 2:
        raise UsageError("compare needs at least two runs or seed groups",
                         hint="give two or more addresses (or a folder holding several runs)")
    if align not in ALIGN_MODES:
        raise UsageError(f"unknown align mode {align!r}", hint=f"choose {' or '.join(ALIGN_MODES)}")
    if last_k < 2:
        raise UsageError("--last must be at least 2 points to measure a trend")
    rules = rules or GroupRules()
    goals = goal_rules(goals)
    seen: dict[str, int] = {}
    for i, arm in enumerate(arms):
        for run in arm.seeds:
            if run.address in seen and seen[run.address] != i:
                raise UsageError(f"{run.name} ({run.address}) is given twice",
                                 hint="name each run or seed group once; runs that are seeds of "
                                 "one arm (docs/diff.md#arms) are one group — --no-seeds compares "
                                 "them run by run")
            seen[run.address] = i
    labels = _unique_labels(arms)
    running = [any(r.status == "running" for r in a.seeds) for a in arms]
    return Request(arms, labels, running, [r for a in arms for r in a.seeds], rules, goals)


def _unique_labels(arms: Sequence[Arm]) -> list[str]:
    """The arms' labels (engines.arms' labeller); relabelled together when the caller's clash."""
    labels = [a.label for a in arms]
    if len(set(labels)) < len(labels):
        label_arms(arms)
        labels = [a.label for a in arms]
    return labels
