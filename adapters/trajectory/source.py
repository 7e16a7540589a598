"""TrajectorySource: one run per export file (or per export in a folder).

Trajectories are not metric histories: `load_run` carries pass rate, task counts and budget totals
in `Run.summary`, and `load_history` returns an empty frame (task order is not a time axis, so a
per-task "history" would invite step-aligned comparisons that mean nothing). The diff itself reads
`load_trajectories(ref)`, which `rundiff trajectories` calls on any source that has it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

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
from .formats import read_trajectory_run, split_selector


class TrajectorySource(BaseSource):
    """A trajectory export file, or a folder whose trajectory exports are listed as runs."""

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        self.path, self.selector = split_selector(address.locator)
        if not os.path.exists(self.path):
            raise RunNotFoundError(f"no such trajectory export: {self.path}")
        self._cache: dict[str, TrajectoryRun] = {}

    def _files(self) -> list[str]:
        if os.path.isfile(self.path):
            return [self.path]
        found = []
        for entry in sorted(os.scandir(self.path), key=lambda e: e.name):
            if entry.is_file() and sniff_kind(entry.path):
                found.append(entry.path)
        return found

    def _suffix(self) -> str:
        return "" if self.selector is None else f"#{self.selector[0]}={self.selector[1]}"

    def list_runs(self) -> list[RunRef]:
        refs = []
        for path in self._files():
            stem = os.path.splitext(os.path.basename(path))[0]
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
            path, _ = split_selector(ref.address.split(":", 1)[1] if ref.address.startswith("traj:") else ref.address)
        if path not in self._cache:
            self._cache[path] = read_trajectory_run(path, self.selector)
        return self._cache[path]

    def load_run(self, ref: RunRef) -> Run:
        traj = self.load_trajectories(ref)
        run = Run(
            address=ref.address,
            name=traj.model or ref.name or ref.run_id,
            run_id=ref.run_id,
            adapter="trajectory",
            config={k: v for k, v in {"format": traj.format, "model": traj.model, "harness": traj.harness,
                                      "task_set": traj.task_set, "tool_access": traj.tool_access,
                                      "schema": traj.schema, "selector": traj.selector}.items() if v is not None},
            summary=traj.summary(),
            status={"complete": "finished", "cancelled": "crashed", "error": "crashed"}.get(traj.status, "unknown"),
            meta={k: v for k, v in traj.meta.items() if isinstance(v, str | int | float | bool)},
        )
        for note in traj.notes:
            run.note(note)
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        return empty_history()
