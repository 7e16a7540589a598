"""LightningCSVSource: one CSVLogger version folder, or every version under a logs folder."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

from rundiff_core import (
    Address,
    BaseSource,
    InputError,
    Run,
    RunNotFoundError,
    RunRef,
    empty_history,
    filter_keys,
    seed_of,
)

from . import NAME, SCHEMES
from .layout import HPARAMS, METRICS, find_version_dirs, is_version_dir
from .reader import read_hparams, read_metrics


class LightningCSVSource(BaseSource):
    """Address `lightning:PATH`, PATH a version folder, a `lightning_logs` folder or its parent.

    CSVLogger records neither wall time nor an end state, so every point's `wall_time` is NaN and
    every run's status is "unknown"; a version with hparams.yaml but no metrics.csv (a run that
    stopped before the first flush) is listed with a note rather than hidden.
    """

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        locator = address.locator or "."
        root = os.path.abspath(os.path.expanduser(locator))
        if os.path.isfile(root) and os.path.basename(root) == METRICS:
            root = os.path.dirname(root)
        if not os.path.exists(root):
            raise InputError(
                f"no such Lightning log folder: {locator}",
                hint="give a version_N folder, a lightning_logs folder, or the folder holding it",
            )
        self.root = root

    def list_runs(self) -> list[RunRef]:
        dirs = find_version_dirs(self.root)
        if not dirs:
            raise InputError(
                f"no CSVLogger runs under {self.root}",
                hint="expected version_*/metrics.csv or version_*/hparams.yaml (depth 2 at most)",
            )
        return [self._ref(d) for d in dirs]

    def _ref(self, path: str) -> RunRef:
        rel = os.path.relpath(path, self.root)
        run_id = os.path.basename(path) if rel == "." else rel
        parent = os.path.basename(os.path.dirname(path))
        return RunRef(run_id=run_id, address=f"{SCHEMES[0]}:{path}",
                      name=f"{parent}/{os.path.basename(path)}" if parent else path)

    def collection(self, ref: RunRef) -> str | None:
        """The version folder's parent (`lightning_logs/`), where rundiff looks for its seeds."""
        return f"{SCHEMES[0]}:{os.path.dirname(self._dir(ref))}"

    def _dir(self, ref: RunRef) -> str:
        path = ref.address.split(":", 1)[1] if ":" in ref.address else ref.address
        if not is_version_dir(path):
            raise RunNotFoundError(
                f"no CSVLogger run {ref.run_id!r} at {path}",
                hint=f"`rundiff ls {SCHEMES[0]}:{self.root}` lists the runs that are there",
            )
        return path

    def load_run(self, ref: RunRef) -> Run:
        path = self._dir(ref)
        config, notes = read_hparams(os.path.join(path, HPARAMS))
        has_metrics = os.path.isfile(os.path.join(path, METRICS))
        if not has_metrics:
            notes.append(
                "no metrics.csv: the run stopped before CSVLogger first flushed its metrics "
                "(every 100 steps and at the end), or it logged none"
            )
        run = Run(
            address=ref.address,
            name=ref.name or os.path.basename(path),
            run_id=ref.run_id,
            adapter=NAME,
            config=config,
            summary={},
            status="unknown",
            seed=seed_of(config, path),
            fidelity=notes,
            meta={"path": path, "has_metrics": has_metrics},
        )
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        csv_path = os.path.join(self._dir(ref), METRICS)
        if not os.path.isfile(csv_path):
            return empty_history()
        frame, notes = read_metrics(csv_path, keys)
        frame = filter_keys(frame, keys)
        frame.attrs["fidelity"] = notes
        return frame
