"""TrajectorySource: one run per export file (or per export in a folder).

Trajectories are not metric histories: `load_run` carries pass rate, task counts and budget totals
in `Run.summary`, and `load_history` returns an empty frame (task order is not a time axis, so a
per-task "history" would invite step-aligned comparisons that mean nothing). The diff itself reads
`load_trajectories(ref)`, which `rundiff trajectories` calls on any source that has it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from rundiff_core import (
    Address,
    BaseSource,
    Run,
    RunNotFoundError,
    RunRef,
    TrajectoryRun,
    empty_history,
)

from . import sniff_kind
from .formats import folder_kind, read_trajectory_run, split_report, split_selector

PER_TASK_FORMATS = ("minisweagent", "sweagent", "openhands", "swebench")


class TrajectorySource(BaseSource):
    """A trajectory export file, or a folder whose trajectory exports are listed as runs."""

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        locator, self.report = split_report(address.locator)
        self.path, self.selector = split_selector(locator)
        if not os.path.exists(self.path):
            raise RunNotFoundError(f"no such trajectory export: {self.path}")
        if self.report is not None and not os.path.exists(self.report):
            raise RunNotFoundError(f"#report={self.report}: no such file or folder",
                                   hint="the report path is read as given (relative to the current folder)")
        self._cache: dict[str, TrajectoryRun] = {}

    def _files(self) -> list[str]:
        """The runs behind the address: a file, a run folder, or the exports and run folders in a folder."""
        if os.path.isfile(self.path) or folder_kind(self.path):
            return [self.path]
        found = []
        samples_dates = set()
        for entry in sorted(os.scandir(self.path), key=lambda e: e.name):
            kind = sniff_kind(entry.path)
            if not kind:
                continue
            if kind == "lmeval" and entry.name.startswith("samples_"):
                samples_dates.add(entry.path)  # listed through its results file when there is one
                continue
            found.append(entry.path)
        results = {os.path.basename(p) for p in found}
        for path in sorted(samples_dates):
            m = re.match(r"^samples_.+_(\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$", os.path.basename(path))
            if not m or f"results_{m.group(1)}.json" not in results:
                found.append(path)
        return found

    def _suffix(self) -> str:
        out = "" if self.selector is None else f"#{self.selector[0]}={self.selector[1]}"
        return out + ("" if self.report is None else f"#report={self.report}")

    def list_runs(self) -> list[RunRef]:
        refs = []
        for path in self._files():
            base = os.path.basename(os.path.normpath(path))
            stem = base[: -len(".traj.json")] if base.endswith(".traj.json") else os.path.splitext(base)[0]
            refs.append(RunRef(run_id=stem + self._suffix(), address=f"traj:{path}{self._suffix()}", name=stem))
        return refs

    def load_trajectories(self, ref: RunRef | None = None) -> TrajectoryRun:
        """The normalized trajectory run behind `ref` (the only run when the address is a file)."""
        if ref is None:
            files = self._files()
            if len(files) != 1:
                raise RunNotFoundError(
                    f"{self.path} holds {len(files)} trajectory exports", hint="name one export file")
            path = files[0]
        else:
            locator = ref.address.split(":", 1)[1] if ref.address.startswith("traj:") else ref.address
            path, _ = split_selector(split_report(locator)[0])
        if path not in self._cache:
            self._cache[path] = read_trajectory_run(path, self.selector, self.report)
        return self._cache[path]

    def load_run(self, ref: RunRef) -> Run:
        traj = self.load_trajectories(ref)
        run = Run(
            address=ref.address,
            name=_run_name(traj) or ref.name or ref.run_id,
            run_id=ref.run_id,
            adapter="trajectory",
            config={k: v for k, v in {"format": traj.format, "model": traj.model, "harness": traj.harness,
                                      "task_set": traj.task_set, "tool_access": traj.tool_access,
                                      "schema": traj.schema, "selector": traj.selector}.items() if v is not None},
            summary={**traj.summary(), **_per_task(traj)},
            status={"complete": "finished", "cancelled": "crashed", "error": "crashed"}.get(traj.status, "unknown"),
            meta={k: v for k, v in traj.meta.items() if isinstance(v, str | int | float | bool)},
        )
        for note in traj.notes:
            run.note(note)
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        return empty_history()


def _per_task(traj: TrajectoryRun) -> dict[str, Any]:
    """Exit-status counts, and for one-file-per-instance harnesses every trajectory with its status."""
    out: dict[str, Any] = {}
    raw = Counter(r.finish_raw for r in traj.records.values() if r.finish_raw)
    if raw:
        out["exit_statuses"] = dict(sorted(raw.items()))
    if traj.format in PER_TASK_FORMATS:
        out["trajectories"] = [
            {"task": r.name, "exit_status": r.finish_raw, "finish": r.finish, "passed": r.passed,
             "steps": r.steps, "calls": len(r.features.calls), "cost": r.cost}
            for r in traj.records.values()]
    return out


def _run_name(traj: object) -> str | None:
    """The name the log gives its run: an Inspect eval is its task run by its model
    (`popularity · openai/gpt-4o-mini`, docs/names.md); other formats name the model."""
    model, task = getattr(traj, "model", None), getattr(traj, "task_set", None)
    if getattr(traj, "format", None) == "inspect" and model and task:
        return f"{task} · {model}"
    return model
