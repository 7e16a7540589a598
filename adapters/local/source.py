"""LocalSource: infer a run's layout from ordinary result files, and say what was inferred.

Files in one folder form one run: an object of scalars → summary; a list of records or a CSV with a
step/epoch column → history; `*meta*.json`, `hparams.yaml`, `config.yaml` → config.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
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
    flatten,
    load_yaml_plain,
    seed_of,
    step_notes,
)

from . import find_files

STEP_COLUMNS = ("step", "global_step", "_step", "iteration", "iter", "epoch")
TIME_COLUMNS = ("time", "wall_time", "timestamp", "_timestamp")
CONFIG_FILES = ("hparams.yaml", "config.yaml", "config.yml", "params.yaml")


class LocalSource(BaseSource):
    thread_safe = True  # reads files only; no shared state

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        self.root = os.path.abspath(os.path.expanduser(address.locator or "."))
        if not os.path.exists(self.root):
            raise InputError(f"no such file or directory: {address.locator}")
        files = find_files(self.root)
        if not files:
            raise InputError(
                f"no result files found in {address.locator}",
                hint="the local adapter reads *results*.json, *meta*.json, eval*.csv and metrics.csv",
            )
        self.groups: dict[str, list[str]] = {}
        for f in files:
            self.groups.setdefault(os.path.dirname(f), []).append(f)

    def list_runs(self) -> list[RunRef]:
        refs = []
        for folder in sorted(self.groups):
            rel = os.path.relpath(folder, os.path.dirname(self.root) if os.path.isfile(self.root) else self.root)
            run_id = rel if rel != "." else os.path.basename(folder)
            name = os.path.relpath(folder)
            refs.append(RunRef(run_id=run_id, address=f"local:{folder}", name=name if not name.startswith("..") else folder))
        return refs

    def collection(self, ref: RunRef) -> str | None:
        """The run folder's parent, where rundiff looks for its seeds (runs with an equal config)."""
        return f"local:{os.path.dirname(ref.address.split(':', 1)[1])}"

    def _files(self, ref: RunRef) -> list[str]:
        folder = ref.address.split(":", 1)[1]
        if folder not in self.groups:
            raise RunNotFoundError(f"no local run {ref.run_id!r} under {self.address.locator}")
        return self.groups[folder]

    def load_run(self, ref: RunRef) -> Run:
        files = self._files(ref)
        folder = os.path.dirname(files[0])
        config: dict[str, Any] = {}
        summary: dict[str, Any] = {}
        notes: list[str] = []
        for name in CONFIG_FILES:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                try:
                    data = load_yaml_plain(open(path, encoding="utf-8").read())
                except Exception as exc:
                    notes.append(f"{name}: unreadable YAML ({type(exc).__name__}); ignored")
                    continue
                if isinstance(data, dict):
                    config.update(data)
                    notes.append(f"inferred: {name} → config")
                elif data is not None:
                    notes.append(f"{name}: not a mapping; ignored")
        for path in files:
            base = os.path.basename(path).lower()
            if base.endswith(".json"):
                data, problem = _read_json(path)
                if problem:
                    notes.append(problem)
                    continue
                if "meta" in base and isinstance(data, dict):
                    config.update(data)
                    notes.append(f"inferred: {os.path.basename(path)} (metadata object) → config")
                elif isinstance(data, dict) and _scalar_object(data):
                    summary.update(data)
                    notes.append(f"inferred: {os.path.basename(path)} (object of scalars) → summary")
                elif isinstance(data, dict):
                    flat = flatten(data)
                    scalars = {k: v for k, v in flat.items() if _is_scalar(v)}
                    summary.update(scalars)
                    notes.append(f"inferred: {os.path.basename(path)} (nested object) → summary, dotted keys")
                elif isinstance(data, list):
                    notes.append(f"inferred: {os.path.basename(path)} (list of records) → history")
            else:
                notes.append(f"inferred: {os.path.basename(path)} (CSV) → history")
        run = Run(
            address=ref.address,
            name=ref.name or folder,
            run_id=ref.run_id,
            adapter="local",
            config=config,
            summary=summary,
            status="unknown",
            seed=seed_of(config, folder),
            fidelity=notes,
            meta={"path": folder, "files": [os.path.basename(f) for f in files]},
        )
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        frames, notes = [], []
        for path in self._files(ref):
            base = os.path.basename(path).lower()
            if base.endswith(".csv"):
                frame, more = _csv_history(path)
            else:
                data, problem = _read_json(path)
                if problem or not isinstance(data, list):
                    continue
                frame, more = _records_history(pd.DataFrame([r for r in data if isinstance(r, dict)]), path)
            frames.append(frame)
            notes.extend(more)
        frames = [f for f in frames if len(f)]
        out = pd.concat(frames, ignore_index=True) if frames else empty_history()
        out = filter_keys(out, keys)
        out.attrs["fidelity"] = notes
        return out


def _read_json(path: str) -> tuple[Any, str | None]:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"{os.path.basename(path)}: not valid JSON ({exc}); skipped"


def _is_scalar(v: Any) -> bool:
    return isinstance(v, int | float | str | bool) or v is None


def _scalar_object(d: dict[str, Any]) -> bool:
    return all(_is_scalar(v) for v in d.values())


def _csv_history(path: str) -> tuple[pd.DataFrame, list[str]]:
    try:
        df = pd.read_csv(path, engine="c", low_memory=False)
    except pd.errors.EmptyDataError:
        return empty_history(), [f"{os.path.basename(path)}: empty file"]
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        return empty_history(), [f"{os.path.basename(path)}: unreadable CSV ({exc}); skipped"]
    return _records_history(df, path)


def _records_history(df: pd.DataFrame, path: str) -> tuple[pd.DataFrame, list[str]]:
    """Wide records → long points; sparse cells (Lightning logs one metric per row) are not points."""
    notes: list[str] = []
    name = os.path.basename(path)
    if df.empty:
        return empty_history(), notes
    cols = list(df.columns)
    step_col = next((c for c in STEP_COLUMNS if c in cols), None)
    time_col = next((c for c in TIME_COLUMNS if c in cols), None)
    if step_col is None:
        steps = np.arange(len(df), dtype="float64")
        notes.append(f"{name}: no step/epoch column; row order used as step")
    else:
        steps = pd.to_numeric(df[step_col], errors="coerce").to_numpy("float64")
        if step_col == "epoch":
            notes.append(f"{name}: no step column; epoch used as step")
    wall = pd.to_numeric(df[time_col], errors="coerce").to_numpy("float64") if time_col else np.full(len(df), np.nan)
    metric_cols = [c for c in cols if c not in {step_col, time_col}]
    numeric, text = [], []
    for c in metric_cols:
        series = df[c]
        if series.dtype.kind in "fiub":
            numeric.append(c)
        else:
            coerced = pd.to_numeric(series, errors="coerce")
            if coerced.notna().sum() == series.notna().sum() and series.notna().any():
                df[c] = coerced
                numeric.append(c)
            else:
                text.append(c)
    if text:
        notes.append(f"{name}: non-numeric columns not loaded: {', '.join(map(str, text[:8]))}")
    if not numeric:
        return empty_history(), notes
    block = df[numeric].to_numpy(dtype="float64", na_value=np.nan)
    present = df[numeric].notna().to_numpy()
    notes += step_notes(((str(c), steps[present[:, j]]) for j, c in enumerate(numeric)), name)
    n, k = block.shape
    mask = present.ravel()
    codes = np.tile(np.arange(k, dtype=np.int32), n)[mask]
    frame = pd.DataFrame(
        {
            "step": np.repeat(steps, k)[mask],
            "key": pd.Categorical.from_codes(codes, categories=[str(c) for c in numeric]),
            "value": block.ravel()[mask],
            "wall_time": np.repeat(wall, k)[mask],
        }
    )
    return frame, notes
