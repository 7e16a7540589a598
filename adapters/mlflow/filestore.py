"""Read an MLflow file store (`mlruns/`) directly: no mlflow package, no writes, no env switch.

Layout: `<root>/<experiment_id>/meta.yaml`, `<root>/<experiment_id>/<run_id>/{meta.yaml,
params/, tags/, metrics/}`; deleted experiments live under `<root>/.trash/`. A metric file holds
one `timestamp value step` line per logged point (older MLflow: `timestamp value`; with a dataset:
`timestamp value step dataset_name dataset_digest`); keys with `/` are nested folders. Artifact
URIs in meta.yaml are carried as text and never followed, so a store copied from Windows or
another machine reads the same.

All metric files of a run are read into one buffer and parsed by numpy (`metricfile`: no pandas,
no pyarrow, the points exactly as MLflow's own reader gives them) into history columns; a line
the vector path cannot take is parsed as text, and a bad one is skipped and counted. A meta.yaml
as MLflow writes it (`key: value` lines of ids, numbers, names and URIs) is read by a strict
line reader (`_meta_fast`) that gives what the YAML loader gives; any other shape goes to the
YAML loader.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rundiff_core import HistoryColumns, InputError

from .layout import RESERVED_IN_EXPERIMENT, TRASH
from .metricfile import parse_line, read_metric_files
from .records import (
    RUN_NAME_TAG,
    ExperimentRecord,
    RunDetails,
    RunRecord,
    status_name,
)

if TYPE_CHECKING:
    import pandas as pd

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
    data = _meta_fast(text)
    if data is not None:
        return data, None
    import yaml

    from rundiff_core import YamlRefused, load_yaml_plain

    try:
        data = load_yaml_plain(text, "meta.yaml")
    except YamlRefused as exc:
        return None, str(exc)
    except yaml.YAMLError as exc:
        return None, f"meta.yaml is not valid YAML ({str(exc).splitlines()[0]})"
    if not isinstance(data, dict):
        return None, "meta.yaml is not a mapping"
    return data, None


_META_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?: (.+))?")
_INT = re.compile(r"0|-?[1-9][0-9]*")
_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9_./:@%+=~-]*")  # names, paths, URIs
_HEX = re.compile(r"[0-9][0-9a-f]*[a-f][0-9a-f]*")  # run ids
_BINARY = re.compile(r"0b[01]+")  # a YAML 1.1 int
_QUOTED = re.compile(r"'([^'\n]*)'")
_CONSTANTS: dict[str, Any] = {"null": None, "Null": None, "NULL": None, "~": None,
                              "true": True, "True": True, "TRUE": True,
                              "false": False, "False": False, "FALSE": False,
                              "[]": [], "{}": {}}
# plain words YAML 1.1 reads as something else than text: left to the YAML loader
_YAML_WORDS = frozenset({"yes", "no", "on", "off", "y", "n", "true", "false", "null"})


def _meta_fast(text: str) -> dict[str, Any] | None:
    """meta.yaml as MLflow writes it (yaml.safe_dump of a flat mapping): one `key: value` line
    each, values of the few shapes below. The same dict as the YAML loader gives, or None when
    any line is of another shape (then the loader reads it)."""
    if "\r" in text or "\t" in text or len(text) > 65536:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: dict[str, Any] = {}
    for line in lines:
        m = _META_LINE.fullmatch(line) if line.isascii() and line.isprintable() else None
        if m is None:
            return None
        key, raw = m.group(1), m.group(2)
        if key in out or key.lower() in _YAML_WORDS:
            return None
        if raw is None:
            value: Any = None
        elif raw in _CONSTANTS:
            value = _CONSTANTS[raw]
            value = list(value) if isinstance(value, list) else \
                dict(value) if isinstance(value, dict) else value
        elif _INT.fullmatch(raw):
            value = int(raw)
        elif (q := _QUOTED.fullmatch(raw)) is not None:
            value = q.group(1)
        elif _PLAIN.fullmatch(raw) and raw.lower() not in _YAML_WORDS and not raw.endswith(":"):
            value = raw
        elif _HEX.fullmatch(raw) and not _BINARY.fullmatch(raw):
            value = raw
        else:
            return None
        out[key] = value
    return out or None


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
        return RunDetails(params, tags, {}, latest_loader=lambda: _latest(folder))

    # -- history --------------------------------------------------------------------------------
    def history(self, rec: RunRecord, keys: Sequence[str] | None) -> tuple[HistoryColumns, list[str]]:
        files = _walk_files(os.path.join(rec.handle, "metrics"))
        if keys is not None:
            wanted = set(keys)
            files = [(k, p) for k, p in files if k in wanted]
        if not files:
            return HistoryColumns.empty(), []
        try:
            got = read_metric_files([p for _k, p in files])
        except OSError as exc:
            where = exc.filename or os.path.join(rec.handle, "metrics")
            raise InputError(f"cannot read metric file {where}: {exc.strerror}") from exc
        names = [k for k, _p in files]
        notes = [f"{key}: incomplete last line skipped (the file does not end with a newline; a "
                 "write was cut short)" for key, cut in zip(names, got.truncated, strict=True) if cut]
        notes += [f"{key}: {bad} malformed line(s) skipped"
                  for key, bad in zip(names, got.bad, strict=True) if bad]
        return _columns(got.code, names, got.step, got.value, got.wall), notes


def _columns(code: np.ndarray, names: list[str], step: np.ndarray, value: np.ndarray,
             wall: np.ndarray) -> HistoryColumns:
    """History columns keyed by the names of the files that gave points (in name order)."""
    if not len(code):
        return HistoryColumns.empty()
    used = np.flatnonzero(np.bincount(code, minlength=len(names)))
    if len(used) < len(names):
        remap = np.full(len(names), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        code = remap[code]
        names = [names[i] for i in used.tolist()]
    return HistoryColumns(step, code.astype(np.int32, copy=False), names, value, wall)


# The parsers as frames, for tests/core/test_parsers_hostile.py (the reader uses columns).
def _parse_concatenated(blobs: list[bytes], names: list[str], counts: list[int]) -> pd.DataFrame:
    """The vector parse of metric files' bytes; ValueError when a line is malformed."""
    from .metricfile import parse_metric_bytes

    got = parse_metric_bytes(blobs)
    if any(got.bad) or any(got.truncated):
        raise ValueError("malformed metric lines")
    return _columns(got.code, list(names), got.step, got.value, got.wall).to_frame()


def _parse_slow(key: str, data: bytes) -> tuple[pd.DataFrame, int]:
    """Line by line with parse_line (MLflow's reader), as the reader's own fallback path reads a
    file: bad lines skipped and counted."""
    from .metricfile import _line_by_line

    step, value, wall, bad = _line_by_line(bytearray(data), 0, len(data))
    return _columns(np.zeros(len(step), dtype=np.int32), [key], step, value, wall).to_frame(), bad


def _latest(folder: str) -> dict[str, float]:
    """MLflow's latest value of every metric of the run folder, each from its file's tail."""
    latest: dict[str, float] = {}
    for key, path in _walk_files(os.path.join(folder, "metrics")):
        value = _latest_from_tail(path)
        if value is not None:
            latest[key] = value
    return latest


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
        parsed = parse_line(line.strip()) if line.strip() else None
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
