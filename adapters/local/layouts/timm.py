"""timm (pytorch-image-models) train folders, `output/train/<experiment>/`: `summary.csv` beside
`args.yaml`.

- history: `summary.csv`, written by `timm.utils.update_summary` once per epoch: `epoch`, then
  `train_*` (train_one_epoch's metrics), `eval_*` (validate's), and from timm 0.6 `lr`. x = the
  `epoch` column as logged (0-based; a resumed run starts at its checkpoint's epoch). `eval_top1`
  / `eval_top5` are percentages. A literal `nan` cell is a NaN point (a diverged run keeps its
  NaN epochs); a non-numeric column (a fork's `train_lr` holding a quoted list per param group,
  `"[2e-07, 2e-07]"`) is skipped with a note.
- a `summary.csv` without `args.yaml` is still timm's when its header is update_summary's
  (`epoch`, then only `train_*`/`eval_*`/`lr`): it lists with no config.
- config: `args.yaml` (`yaml.safe_dump(vars(args))`).
- directions: `args.yaml`'s `eval_metric` (default `top1`) is what timm's CheckpointSaver keeps
  `model_best` by — decreasing only for `loss` — so `eval_<eval_metric>` is declared (and is the
  headline); the rest is the vocabulary's.
- status: unknown (nothing in the folder says whether training finished).
"""

from __future__ import annotations

import csv
import os

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..common import Meta, count_rows, files_beside, run_dir, yaml_config
from ..lazy import pd
from ..sniff import read_head
from .ultralytics import read_epochs

SUMMARY = "summary.csv"


def _header(head: bytes) -> list[str] | None:
    line = head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf").rstrip(b"\r")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "," not in text:
        return None
    try:
        return [h.strip() for h in next(csv.reader([text]))]
    except (csv.Error, StopIteration):
        return None


def is_timm_header(header: list[str] | None) -> bool:
    """update_summary's header: `epoch`, then `train_*` / `eval_*` columns and maybe `lr`."""
    if not header or header[0] != "epoch" or len(header) < 2:
        return False
    rest = header[1:]
    return all(h.startswith(("train_", "eval_")) or h == "lr" for h in rest) and \
        any(h.startswith(("train_", "eval_")) for h in rest)


def _run_for(path: str, files: list[str], folder: str) -> LayoutRun | None:
    names = set(files)
    if SUMMARY not in names:
        return None
    head = read_head(os.path.join(folder, SUMMARY), 4096)
    header = _header(head)
    timm_header = is_timm_header(header)
    if "args.yaml" in names:
        if header is not None and not timm_header and header[0] != "epoch":
            return None  # someone else's summary.csv beside an args.yaml
        reason = "timm: summary.csv + args.yaml"
    elif timm_header:
        reason = "timm: summary.csv (update_summary's header), no args.yaml"
    else:
        return None
    mine = [SUMMARY] + (["args.yaml"] if "args.yaml" in names else [])
    return LayoutRun(path, "timm", [os.path.join(folder, f) for f in mine], reason)


def claim(folder: LayoutFolder) -> Claimed | None:
    run = _run_for(folder.path, folder.files, folder.path)
    return Claimed([run]) if run is not None else None


def claim_file(path: str) -> list[LayoutRun] | None:
    """`summary.csv` given alone: its folder's run when the folder is timm's."""
    if os.path.basename(path) != SUMMARY:
        return None
    folder, files = files_beside(path)
    run = _run_for(path, files, folder)
    return [run] if run is not None else None


def meta(run: LayoutRun) -> Meta:
    out = Meta()
    d = run_dir(run)
    if not yaml_config(out, os.path.join(d, "args.yaml"), "timm train.py arguments"):
        out.notes.append("no args.yaml beside summary.csv: no config")
    metric = out.config.get("eval_metric")
    if isinstance(metric, str) and metric:
        key = f"eval_{metric}"
        goal = "min" if metric == "loss" else "max"
        source = (f"timm's args.yaml eval_metric={metric!r} (CheckpointSaver keeps model_best by "
                  f"it, {'decreasing' if goal == 'min' else 'increasing'})")
        out.goals[key] = goal
        out.goal_sources[key] = source
        out.meta["goals"] = {key: {"goal": goal, "source": source, "headline": True}}
    rows = count_rows(os.path.join(d, SUMMARY))
    epochs = out.config.get("epochs")
    if rows is not None and isinstance(epochs, int) and not isinstance(epochs, bool) and rows < epochs:
        out.notes.append(f"summary.csv has {rows} epoch row(s) of epochs: {epochs} (stopped early, "
                         "interrupted or still running: the files do not say which; status unknown)")
    return out


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    path = os.path.join(run_dir(run), SUMMARY)
    if not os.path.isfile(path):
        return rundiff_core.empty_history(), ["summary.csv: missing; no history"]
    frame, cols, _, notes, more = read_epochs(path)
    if cols is None:
        return frame, notes
    step = "epoch" if "epoch" in cols.names else None
    bits = [f"summary.csv (timm update_summary, one row per epoch) → "
            f"{len([c for c in cols.names if c != step])} keys",
            "x = epoch as logged" if step else "no epoch column: x = row index"]
    if any(c in cols.names for c in ("eval_top1", "eval_top5")):
        bits.append("eval_top1/eval_top5 in percent")
    notes.append("; ".join(bits))
    notes += more
    header = _header(read_head(path, 4096)) or []
    for name in cols.text:
        sample = _first_cell(path, header.index(name)) if name in header else ""
        notes.append(f"summary.csv: {name} is not numeric ({sample!r}: a quoted list, one value per "
                     f"param group); skipped ({cols.rows} cells)"
                     if sample.startswith("[") else
                     f"summary.csv: {name} is not numeric ({sample!r}); skipped ({cols.rows} cells)")
    nan = int(frame["value"].isna().sum()) if len(frame) else 0
    if nan:
        keys = frame.loc[frame["value"].isna(), "key"].astype(str).value_counts()
        notes.append(f"summary.csv: {nan} nan cell(s) kept as NaN points ("
                     + ", ".join(f"{k} {n}" for k, n in keys.items()) + ")")
    return frame, notes


def _first_cell(path: str, j: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh)
            next(reader, None)
            row = next(reader, None)
    except (OSError, csv.Error):
        return ""
    return row[j].strip() if row and j < len(row) else ""
