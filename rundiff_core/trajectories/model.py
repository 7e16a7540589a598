"""The normalized trajectory model every importer fills and the diff engine reads.

Importers (`rundiff_adapters.trajectory.formats`) turn native exports, Inspect logs and τ-bench
files into one `TrajectoryRun`. Message bodies are analysed once, at load time, into `Features`
(tool calls, error results, recoveries) and then dropped: a diff of two 5,000-task exports must not
hold 400,000 messages, and the report never needs more than short, redacted snippets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

FINISH_BUCKETS = ("completed", "max_steps", "gave_up", "error", "unknown")

ERROR_KINDS = ("http_4xx", "http_5xx", "empty", "exception", "invalid_args")


@dataclass(slots=True)
class Call:
    """One tool call as the diff sees it: what was called, with what, and what came back."""

    name: str
    args_key: str  # canonical JSON of the arguments (sorted keys), or the raw unparseable text
    valid: bool = True
    invalid_reason: str | None = None
    endpoint: str | None = None  # "GET /v1/orders/{id}" when the arguments carry a URL/path
    result: str | None = None  # None (no result seen), "ok", or one of ERROR_KINDS

    @property
    def signature(self) -> tuple[str, str]:
        """What two trajectories must share for their calls to count as the same step."""
        return (self.name, self.args_key)

    @property
    def targets(self) -> tuple[str, ...]:
        return (f"tool:{self.name}",) if self.endpoint is None else (
            f"tool:{self.name}", f"endpoint:{self.endpoint}")


@dataclass(slots=True)
class Features:
    """Behaviour extracted from one trajectory's messages (see signals.analyze_messages)."""

    calls: list[Call] = field(default_factory=list)
    assistant_turns: int = 0
    errors: int = 0  # tool results classified as errors
    retried: int = 0  # errors followed by another tool call
    quit: int = 0  # errors after which the agent made no further tool call
    recovered: int = 0  # errors after which the same tool/endpoint later succeeded
    thrash: int = 0  # errors immediately followed by a call to the same tool
    invalid_calls: int = 0
    invalid_reasons: list[str] = field(default_factory=list)
    malformed_messages: int = 0
    # Raw, windowed text (not yet redacted): pass through signals.redact_snippet before output.
    first_error_raw: str | None = None  # the first error result
    final_text_raw: str | None = None  # the last assistant text

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(c.name for c in self.calls)

    @property
    def endpoints(self) -> frozenset[str]:
        return frozenset(c.endpoint for c in self.calls if c.endpoint)

    @property
    def targets(self) -> frozenset[str]:
        return frozenset(t for c in self.calls for t in c.targets)

    @property
    def ok_targets(self) -> frozenset[str]:
        """Targets of calls whose result came back without an error."""
        return frozenset(t for c in self.calls if c.result == "ok" for t in c.targets)


@dataclass(slots=True)
class TaskRecord:
    """One attempt at one task: outcome, budget fields from the export, and behaviour."""

    name: str
    id: str | None = None
    passed: bool | None = None
    score: float | None = None
    steps: int | None = None
    steps_source: str = "export"  # "export" (the record's `steps`) or "counted" (assistant turns)
    finish_raw: str | None = None
    finish: str = "unknown"
    holdout: bool = False
    split: str | None = None
    cluster: str | None = None  # cluster/group the task belongs to (clustered standard errors)
    status: str = "ok"  # ok | crash | timeout | unscored (no outcome: left out of the join)
    repeat: int | None = None  # trial/epoch/repeat index when the export has one
    position: int = 0  # record index in the file (for warm-start pointers)
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost: float | None = None
    features: Features = field(default_factory=Features)

    @property
    def has_outcome(self) -> bool:
        return self.passed is not None


@dataclass
class TrajectoryRun:
    """One export/log: run metadata, the primary attempt per task, and any repeats."""

    path: str
    format: str  # "traj" | "inspect" | "taubench"
    label: str = ""
    model: str | None = None
    schema: str | None = None
    task_set: str | None = None
    harness: str | None = None
    tool_access: str | None = None
    tool_names: frozenset[str] | None = None
    status: str = "complete"  # complete | cancelled | error | unknown
    selector: str | None = None
    records: dict[str, TaskRecord] = field(default_factory=dict)
    repeats: dict[str, list[TaskRecord]] = field(default_factory=dict)
    expected: list[str] | None = None  # task names the run was meant to cover, when known
    notes: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def skip(self, reason: str, n: int = 1) -> None:
        """Count a record or message that could not be used (reported, never silent)."""
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def add(self, rec: TaskRecord) -> None:
        """Add an attempt: the lowest repeat index is primary, the others are repeats."""
        current = self.records.get(rec.name)
        if current is None:
            self.records[rec.name] = rec
            return
        if rec.repeat is not None and current.repeat is not None and rec.repeat < current.repeat:
            self.records[rec.name] = rec
            rec, current = current, rec
        self.repeats.setdefault(rec.name, []).append(rec)

    @property
    def display(self) -> str:
        """Model and file, for one-line summaries."""
        name = os.path.basename(self.path) + (f"#{self.selector}" if self.selector else "")
        return f"{self.model} ({name})" if self.model else name

    def summary(self) -> dict[str, Any]:
        """Pass rate and budget totals over primary attempts (export fields only)."""
        recs = list(self.records.values())
        scored = [r for r in recs if r.has_outcome]
        passed = sum(1 for r in scored if r.passed)
        out: dict[str, Any] = {
            "tasks": len(recs),
            "scored": len(scored),
            "passed": passed,
            "pass_rate": passed / len(scored) if scored else None,
            "repeats": sum(len(v) for v in self.repeats.values()),
            "holdout": sum(1 for r in recs if r.holdout),
        }
        for key in ("input_tokens", "output_tokens", "cost"):
            vals = [getattr(r, key) for r in recs if getattr(r, key) is not None]
            out[key] = sum(vals) if vals else None
        from .paired import pass_hat_k  # numpy: only when the summary is asked

        out["pass_k"] = pass_hat_k(self.trial_counts())
        return out

    def trial_counts(self) -> list[tuple[int, int]]:
        """(attempts with an outcome, successes) per task, primary and repeats together."""
        out = []
        for name, rec in self.records.items():
            tries = [r for r in (rec, *self.repeats.get(name, ())) if r.has_outcome]
            if tries:
                out.append((len(tries), sum(1 for r in tries if r.passed)))
        return out
