"""Read an MLflow file store (`mlruns/`) directly: no mlflow package, no writes, no env switch.

Layout: `<root>/<experiment_id>/meta.yaml`, `<root>/<experiment_id>/<run_id>/{meta.yaml,
params/, tags/, metrics/}`; deleted experiments live under `<root>/.trash/`. A metric file holds
one `timestamp value step` line per logged point (older MLflow: `timestamp value`; with a dataset:
`timestamp value step dataset_name dataset_digest`); keys with `/` are nested folders. Artifact
URIs in meta.yaml are carried as text and never followed, so a store copied from Windows or
another machine reads the same.

All metric files of a run are concatenated and parsed by one vectorised CSV parse (pyarrow), the
key column built from per-file line counts; a file the fast path cannot take is parsed line by
line and its bad lines are skipped and counted.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import yaml

from rundiff_core import (
    InputError,
    YamlRefused,
    empty_history,
    load_yaml_plain,
    make_history,
)

from .layout import RESERVED_IN_EXPERIMENT, TRASH
from .records import (
    RUN_NAME_TAG,
    ExperimentRecord,
    RunDetails,
    RunRecord,
    status_name,
)

_READ = pacsv.ReadOptions(column_names=["ts", "value", "step"], block_size=1 << 24)
_PARSE = pacsv.ParseOptions(delimiter=" ", quote_char=False)
# no null spellings: "nan"/"inf"/"-inf" parse as floats, an empty field is an error (slow path)
_CONVERT = pacsv.ConvertOptions(
    column_types={"ts": pa.int64(), "value": pa.float64(), "step": pa.int64()},
    null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False,
)
TAIL_BYTES = 1024


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _read_meta(folder: str) -> tuple[dict | None, str | None]:
    text = _read_text(os.path.join(folder, "meta.yaml"))
    if text is None:
        return None, "meta.yaml missing or unreadable"
    try:
        data = load_yaml_plain(text, "meta.yaml")
    except YamlRefused as exc:
        return None, str(exc)
    except yaml.YAMLError as exc:
        return None, f"meta.yaml is not valid YAML ({str(exc).splitlines()[0]})"
    if not isinstance(data, dict):
        return None, "meta.yaml is not a mapping"
    return data, None


def _walk_files(folder: str) -> list[tuple[str, str]]:
    """(name, path) of every file under `folder`; nested folders give `a/b` names, sorted."""
    out: list[tuple[str, str]] = []
    for d, dirs, files in os.walk(folder):
        dirs.sort()
        rel = os.path.relpath(d, folder)
        for f in sorted(files):
            name = f if rel == "." else f"{rel}/{f}".replace(os.sep, "/")
            out.append((name, os.path.join(d, f)))
    return sorted(out)


def _ms(value: object) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


class FileStoreReader:
    """Experiments, runs and full metric histories of one `mlruns/` folder."""

    kind = "file"

    def __init__(self, root: str) -> None:
        self.root = root
        self._experiments: dict[str, tuple[ExperimentRecord, str]] | None = None

    def close(self) -> None:
        pass

    # -- experiments and runs ---------------------------------------------------------------
    def _experiment_dirs(self) -> dict[str, tuple[ExperimentRecord, str]]:
        if self._experiments is None:
            found: dict[str, tuple[ExperimentRecord, str]] = {}
            for base, deleted in ((self.root, False), (os.path.join(self.root, TRASH), True)):
                if not os.path.isdir(base):
                    continue
                for name in sorted(os.listdir(base), key=lambda n: (not n.isdigit(), len(n), n)):
                    folder = os.path.join(base, name)
                    if name.startswith(".") or not os.path.isdir(folder):
                        continue
                    meta, _problem = _read_meta(folder)
                    if meta is None or "run_uuid" in meta or "run_id" in meta:
                        continue
                    exp_id = str(meta.get("experiment_id", name))
                    if exp_id in found:
                        continue
                    stage = "deleted" if deleted else str(meta.get("lifecycle_stage") or "active")
                    found[exp_id] = (ExperimentRecord(exp_id, str(meta.get("name", exp_id)), stage,
                                                      meta.get("artifact_location")), folder)
            self._experiments = found
        return self._experiments

    def experiments(self) -> list[ExperimentRecord]:
        return [rec for rec, _ in self._experiment_dirs().values()]

    def _run_record(self, folder: str, exp_id: str) -> RunRecord | None:
        meta, problem = _read_meta(folder)
        run_id = os.path.basename(folder)
        if meta is None:
            if not os.path.isdir(os.path.join(folder, "metrics")):
                return None  # not a run folder at all
            return RunRecord(run_id, exp_id, name=run_id, status="UNKNOWN",
                             notes=[f"run folder {run_id}: {problem}; metrics read, info unknown"],
                             handle=folder)
        name = meta.get("run_name") or _read_text(os.path.join(folder, "tags", RUN_NAME_TAG))
        return RunRecord(
            run_id=str(meta.get("run_id") or meta.get("run_uuid") or run_id),
            experiment_id=str(meta.get("experiment_id", exp_id)),
            name=str(name) if name else None,
            status=status_name(meta.get("status")),
            start_time=_ms(meta.get("start_time")),
            end_time=_ms(meta.get("end_time")),
            lifecycle_stage=str(meta.get("lifecycle_stage") or "active"),
            artifact_uri=meta.get("artifact_uri"),
            user_id=meta.get("user_id"),
            handle=folder,
        )

    def runs(self, experiment_ids: Sequence[str] | None = None) -> list[RunRecord]:
        out: list[RunRecord] = []
        for exp_id, (_rec, folder) in self._experiment_dirs().items():
            if experiment_ids is not None and exp_id not in experiment_ids:
                continue
            for name in sorted(os.listdir(folder)):
                sub = os.path.join(folder, name)
                if name in RESERVED_IN_EXPERIMENT or name.startswith(".") or not os.path.isdir(sub):
                    continue
                rec = self._run_record(sub, exp_id)
                if rec is not None:
                    out.append(rec)
        out.sort(key=lambda r: (r.start_time if r.start_time is not None else math.inf, r.run_id))
        return out

    def run(self, run_id: str) -> RunRecord | None:
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            return None
        for exp_id, (_rec, folder) in self._experiment_dirs().items():
            sub = os.path.join(folder, run_id)
            if os.path.isdir(sub):
                rec = self._run_record(sub, exp_id)
                if rec is not None:
                    return rec
        return None

    def details(self, rec: RunRecord) -> RunDetails:
        folder = rec.handle
        params = {k: _read_text(p) or "" for k, p in _walk_files(os.path.join(folder, "params"))}
        tags = {k: _read_text(p) or "" for k, p in _walk_files(os.path.join(folder, "tags"))}
        latest: dict[str, float] = {}
        for key, path in _walk_files(os.path.join(folder, "metrics")):
            value = _latest_from_tail(path)
            if value is not None:
                latest[key] = value
        return RunDetails(params, tags, latest)

    # -- history --------------------------------------------------------------------------------
    def history(self, rec: RunRecord, keys: Sequence[str] | None) -> tuple[pd.DataFrame, list[str]]:
        files = _walk_files(os.path.join(rec.handle, "metrics"))
        if keys is not None:
            wanted = set(keys)
            files = [(k, p) for k, p in files if k in wanted]
        if not files:
            return empty_history(), []
        notes: list[str] = []
        blobs, names, counts = [], [], []
        slow: list[tuple[str, bytes]] = []
        for key, path in files:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise InputError(f"cannot read metric file {path}: {exc.strerror}") from exc
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                notes.append(f"{key}: incomplete last line skipped (the file does not end with a "
                             "newline; a write was cut short)")
                data = data[:cut]
            if not data:
                continue
            blobs.append(data)
            names.append(key)
            counts.append(data.count(b"\n"))
        parts: list[pd.DataFrame] = []
        if blobs:
            try:
                parts.append(_parse_concatenated(blobs, names, counts))
            except (pa.ArrowInvalid, ValueError):  # find the file(s) the fast path cannot take
                for key, data, count in zip(names, blobs, counts, strict=True):
                    try:
                        parts.append(_parse_concatenated([data], [key], [count]))
                    except (pa.ArrowInvalid, ValueError):
                        slow.append((key, data))
        for key, data in slow:
            frame, bad = _parse_slow(key, data)
            if bad:
                notes.append(f"{key}: {bad} malformed line(s) skipped")
            parts.append(frame)
        parts = [p for p in parts if len(p)]
        if not parts:
            return empty_history(), notes
        frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        if len(parts) > 1:  # keys in name order, each key's points in file order
            order = np.argsort(frame["key"].astype(str).to_numpy(), kind="stable")
            frame = frame.iloc[order].reset_index(drop=True)
        return frame, notes


def _parse_concatenated(blobs: list[bytes], names: list[str], counts: list[int]) -> pd.DataFrame:
    """One vectorised parse of every metric file of a run; raises when a line is not 3 fields."""
    table = pacsv.read_csv(io.BytesIO(b"".join(blobs)), read_options=_READ, parse_options=_PARSE,
                           convert_options=_CONVERT)
    if table.num_rows != sum(counts):  # blank lines or a lone CR: let the line parser decide
        raise ValueError("line count mismatch")
    codes = np.repeat(np.arange(len(names), dtype=np.int32), counts)
    return make_history(
        step=table.column("step").to_numpy().astype("float64"),
        key=pd.Categorical.from_codes(codes, categories=list(names)),
        value=table.column("value").to_numpy(),
        wall_time=table.column("ts").to_numpy().astype("float64") / 1000.0,
    )


def _parse_line(line: str) -> tuple[float, float, float] | None:
    parts = line.split(" ")
    if len(parts) not in (2, 3, 5):  # MLflow's own reader accepts exactly these
        return None
    try:
        ts = int(parts[0])
        value = float(parts[1])
        step = int(parts[2]) if len(parts) >= 3 else 0  # MLflow: no step field means step 0
    except ValueError:
        return None
    return float(step), value, ts / 1000.0


def _parse_slow(key: str, data: bytes) -> tuple[pd.DataFrame, int]:
    """Line by line: 2, 3 and 5-field lines; anything else skipped and counted."""
    rows, bad = [], 0
    for raw in data.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line:
            continue
        parsed = _parse_line(line)
        if parsed is None:
            bad += 1
        else:
            rows.append(parsed)
    if not rows:
        return empty_history(), bad
    step, value, wall = zip(*rows, strict=True)
    return make_history(step, [key] * len(step), value, wall), bad


def _latest_from_tail(path: str) -> float | None:
    """MLflow's latest value — the point with the largest (step, timestamp, value) — from the
    file's tail (its last few KiB), so listing a run never reads whole histories."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return None
    lines = tail.decode("utf-8", errors="replace").split("\n")
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line of a tail may be partial
    best: tuple[float, float, float] | None = None
    for line in lines:
        parsed = _parse_line(line.strip()) if line.strip() else None
        if parsed is None:
            continue
        step, value, wall = parsed
        cand = (step, wall, value)
        if best is None or _greater(cand, best):
            best = cand
    return None if best is None else best[2]


def _greater(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    # tuple order like MLflow's max(); NaN values never win a tie
    if a[:2] != b[:2]:
        return a[:2] > b[:2]
    return not math.isnan(a[2]) and (math.isnan(b[2]) or a[2] > b[2])
