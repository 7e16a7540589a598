"""The fallback of every folder no named layout claims: its sniffed tables (CSV, TSV, whitespace,
JSON lines, JSON arrays; Keras `CSVLogger`), `*results*.json` and `*meta*.json` as one run, and
each text log (`key:value` fields with a step) as a run of its own (layout `text`)."""

from __future__ import annotations

import os
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from ..sniff import (
    SPLIT_NAMES,
    Sniff,
    may_be_text_log,
    one_row,
    read_head,
    read_table,
    sniff_table,
)
from .common import CONFIG_FILES, Meta, name_matches, read_config_files, read_json, scalars

RESULT_PATTERNS = ("*results*.json", "*meta*.json", "eval*.csv", "metrics.csv", "*.metrics.csv")
SNIFF_EXTS = {"", ".csv", ".tsv", ".txt", ".log", ".out", ".jsonl", ".ndjson", ".json", ".dat",
              ".tab"}
NOT_LOGS = {"readme", "license", "licence", "requirements.txt", "dvc.lock", "dvc.yaml", ".gitignore",
            "cout.txt", "model_summary.txt", "summary.txt"}


def is_result_file(name: str) -> bool:
    return name_matches(name.lower(), RESULT_PATTERNS)


def sniff_files(folder: str, files: list[str], unread: dict[str, str] | None = None
                ) -> list[LayoutRun]:
    """Runs from a folder no named layout claims, each file taken by its shape
    (`adapters/local/shape.py`): its tables and records as one run, each file of column lists
    and each text log a run of its own — unless the folder holds a structured history, whose
    stdout copy or console log is then a file of that run, not a run beside it. Files of no
    shape a reader knows go to `unread` ({path: what they look like})."""
    from ..shape import shape_of

    table = LayoutRun(folder, "files", reason="")
    texts: list[LayoutRun] = []
    columns: list[LayoutRun] = []
    for name in files:
        low = name.lower()
        path = os.path.join(folder, name)
        if low in CONFIG_FILES or low in NOT_LOGS or low.startswith(("readme", "license")):
            continue
        if is_result_file(name):
            table.files.append(path)
            continue
        if os.path.splitext(low)[1] not in SNIFF_EXTS:
            continue
        head = read_head(path)
        text_ok = not low.endswith((".json", ".csv", ".tsv")) and may_be_text_log(head)
        shape = shape_of(path, head, text=text_ok)
        if shape.kind in ("table", "records"):
            table.files.append(path)
            table.sniffs[path] = shape.found
        elif shape.kind == "columns":
            columns.append(LayoutRun(path, "column-lists", [path], shape.detail, {path: shape.found}))
        elif shape.kind == "text":
            texts.append(LayoutRun(path, "text", [path], shape.detail, {path: shape.found}))
        elif unread is not None and shape.kind != "document":
            unread[path] = shape.detail
    launched = _launch_runs(table)
    if launched:  # a report table with no step beside the launches is none of them, nor a run
        flat = [p for p in table.files if isinstance(s := table.sniffs.get(p), Sniff)
                and not s.step and one_row(p, s) is None]
        table.files = [p for p in table.files if p not in flat]
        for run in launched:
            run.sniffs["beside"] = flat
    specs = []
    if table.files:
        shown = ", ".join(os.path.basename(f) for f in table.files[:3])
        table.reason = f"{len(table.files)} result/log file(s): {shown}"
        if texts and any(isinstance(s, Sniff) for s in table.sniffs.values()):
            # a structured history's stdout copy (`output.log`, `train.log`) is that run's
            table.files += [t.path for t in texts]
            table.sniffs.update({t.path: TextFile(t.sniffs[t.path], read=False) for t in texts})
            texts = []
        specs.append(table)
    if launched:
        return specs + launched + columns + texts
    if not specs and len(texts) >= 2 and (config := [n for n in files
                                                    if n.lower() in CONFIG_FILES]):
        # `train.log` and `evaluate.log` beside the `params.json` they ran with: one run's logs
        table.files = [t.path for t in texts]
        table.sniffs = {t.path: TextFile(t.sniffs[t.path], read=True) for t in texts}
        table.reason = f"{len(texts)} text logs beside {config[0]}: one run"
        return [table] + columns
    return specs + columns + texts


def _launch_runs(table: LayoutRun) -> list[LayoutRun]:
    """A table that holds several launches (its x back at its start: a script run again, its
    log appended) leaves the folder's run: each launch is a run of its own, `FILE#1`, `FILE#2`."""
    from ..sniff import launches

    out = []
    for path, sniff in list(table.sniffs.items()):
        if not isinstance(sniff, Sniff) or one_row(path, sniff) is not None:
            continue
        spans = launches(path, sniff)
        if not spans:
            continue
        table.files.remove(path)
        del table.sniffs[path]
        base = os.path.basename(path)
        for i, span in enumerate(spans, start=1):
            out.append(LayoutRun(f"{path}#{i}", "files", [path],
                                 f"{base}: launch {i} of {len(spans)} (rows {span[0] + 1}–"
                                 f"{span[1]}; its {sniff.step} starts again)",
                                 {path: sniff, "rows": span}))
    return out


class TextFile(rundiff_core.PlainRecord):
    """A text log that is one file of a folder's run: its `grammar`, and whether its records are
    `read` into the run's history (logs beside the config they ran with) or not (a console copy
    beside a structured history, whose records repeat the table's)."""

    __match_args__ = ("grammar", "read")

    def __init__(self, grammar: Any, read: bool) -> None:
        self.grammar = grammar
        self.read = read


def claim(folder: LayoutFolder) -> Claimed | None:
    unread: dict[str, str] = {}
    runs = sniff_files(folder.path, folder.files, unread)
    return Claimed(runs, unread=unread) if runs or unread else None


def claim_file(path: str) -> list[LayoutRun] | None:
    """A file named alone: what its shape holds — and a text log whose records are too small a
    part of it to claim it in a folder is read when it is named, its share said."""
    unread: dict[str, str] = {}
    runs = sniff_files(os.path.dirname(path), [os.path.basename(path)], unread)
    if not runs and path in unread:
        from ..shape import shape_of

        shape = shape_of(path)
        if shape.found is not None and shape.kind == "unknown":  # a grammar, below its share
            runs = [LayoutRun(path, "text", [path], f"named: {shape.detail}", {path: shape.found})]
    for r in runs:
        r.path = path
    return runs or None


def _table_sniff(spec: LayoutRun, path: str) -> Sniff | None:
    sniff = spec.sniffs.get(path)
    if isinstance(sniff, Sniff):
        return sniff
    if path.lower().endswith(".json"):
        found = sniff_table(path)
        return found if found is not None and found.kind == "json" else None
    return sniff_table(path)


def _unstepped(spec: LayoutRun) -> dict[str, str]:
    """{table: the stepped table beside it} for tables with no step-like column in a run whose
    other tables have one: a report or summary table (`test_report.csv`: one row per class) is
    not that run's history, and its row index is no step. Read alone (`local:FILE`), it is."""
    if len(spec.files) < 2:
        return {}
    sniffs = {p: _table_sniff(spec, p) for p in spec.files}
    tables = {p: sn for p, sn in sniffs.items() if sn is not None and one_row(p, sn) is None}
    stepped = [p for p, sn in tables.items() if sn.step]
    if not stepped:
        return {}
    beside = f"{os.path.basename(stepped[0])}'s `{tables[stepped[0]].step}`"
    return {p: beside for p, sn in tables.items() if not sn.step}


def _folder(spec: LayoutRun) -> str:
    """The folder a run's config files sit in (a launch `FILE#2` and a file run: the file's)."""
    path = spec.path.split("#", 1)[0] if "rows" in spec.sniffs else spec.path
    return os.path.dirname(path) if os.path.isfile(path) else path


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(_folder(spec))
    if "rows" in spec.sniffs:
        out.notes.append(spec.reason + ": one launch of several appended to one file, a run of "
                         "its own")
        log = spec.files[0]
        for path in spec.sniffs.get("beside", []):
            out.notes.append(f"{os.path.basename(path)}: no step-like column beside "
                             f"{os.path.basename(log)}'s `{spec.sniffs[log].step}` → not read as "
                             f"history (a report table? `rundiff ls local:{path}` reads it alone, "
                             "x = row index)")
    unstepped = _unstepped(spec)
    for path in spec.files:
        base = os.path.basename(path)
        if path in unstepped:
            out.notes.append(f"{base}: no step-like column beside {unstepped[path]} → not read as "
                             f"history (a report table? `rundiff ls local:{path}` reads it alone, "
                             "x = row index)")
            continue
        sniff = spec.sniffs.get(path)
        if isinstance(sniff, TextFile):
            if sniff.read:
                out.notes.append(f"{base} ({sniff.grammar.describe()}) → history")
            else:
                out.notes.append(f"{base}: {sniff.grammar.describe()} beside the structured history"
                                 " → a file of this run (its console copy), not read into it; "
                                 f"`rundiff ls local:{path}` reads it alone")
            continue
        if isinstance(sniff, Sniff):
            if (row := one_row(path, sniff)) is not None:
                stem = os.path.splitext(base)[0]
                out.summary.update({f"{stem}/{k}": v for k, v in row.items()})
                out.notes.append(f"{base} (one row, no step column) → summary as {stem}/*")
            elif sniff.kind == "," and sniff.header and sniff.header[0] == "epoch" and not (
                    set(SPLIT_NAMES) & {h.lower() for h in sniff.header}):
                out.notes.append(f"{base}: Keras CSVLogger layout (epoch first) → history")
            else:
                out.notes.append(f"{base} ({sniff.described}) → history")
            continue
        if not base.lower().endswith(".json"):
            out.notes.append(f"{base} (CSV) → history")
            continue
        data = read_json(path, out.notes)
        if "meta" in base.lower() and isinstance(data, dict):
            config, metadata = rundiff_core.split_metadata(data)
            out.config.update(config)
            out.meta.update(metadata)
            out.notes.append(f"{base} (metadata object) → "
                             + ", ".join(f"{len(part)} key(s) {where}" for part, where in
                                         ((metadata, "to metadata"), (config, "to config"))
                                         if part))
        elif isinstance(data, dict):
            flat = scalars(data, ".")
            out.summary.update(flat)
            nested = any(isinstance(v, dict) for v in data.values())
            out.notes.append(f"{base} ({'nested object' if nested else 'object of scalars'}) → summary"
                             + (", dotted keys" if nested else ""))
        elif isinstance(data, list):
            out.notes.append(f"{base} (list of records) → history")
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    frames, notes = [], []
    unstepped = _unstepped(spec)
    for path in spec.files:
        if path in unstepped:
            continue  # said in the meta notes
        sniff = spec.sniffs.get(path)
        if isinstance(sniff, TextFile):
            if not sniff.read:
                continue  # a console copy: said in the meta notes
            from ..textlog import read_text_log

            frame, more = read_text_log(path, sniff.grammar)
        elif isinstance(sniff, Sniff):
            if one_row(path, sniff) is not None:
                continue
            frame, more = read_table(path, sniff, rows=spec.sniffs.get("rows"))
        elif path.lower().endswith(".json"):
            sniff = sniff_table(path)
            if sniff is None or sniff.kind != "json":
                continue
            frame, more = read_table(path, sniff)
        else:
            sniff = sniff_table(path)
            if sniff is None:
                notes.append(f"{os.path.basename(path)}: no header with numeric columns; skipped")
                continue
            frame, more = read_table(path, sniff)
        frames.append((path, frame))
        notes += more
    frames = [(p, f) for p, f in frames if len(f)]
    if not frames:
        return rundiff_core.empty_history(), notes
    out = pd.concat(_apart(frames, notes), ignore_index=True)
    if len(frames) > 1:
        out.attrs["key_files"] = {k: os.path.basename(p) for p, f in frames
                                  for k in f["key"].unique()}
    return out, notes


def _apart(frames: list[tuple[str, pd.DataFrame]], notes: list[str]) -> list[pd.DataFrame]:
    """The frames of a run's files, a key that two files both hold (`Step,Value` exports, a
    `loss` in train.csv and in val.csv) named by its file in each (`train/loss`, `val/loss`):
    two files' columns are never concatenated into one series."""
    holders: dict[str, list[str]] = {}
    for path, frame in frames:
        for key in frame["key"].unique():
            holders.setdefault(key, []).append(path)
    shared = {k: ps for k, ps in holders.items() if len(ps) > 1}
    if not shared:
        return [f for _, f in frames]
    stems = _stems([p for p, _ in frames])
    out = []
    for path, frame in frames:
        mine = [k for k in frame["key"].unique() if k in shared]
        if mine:
            frame = frame.copy()
            frame["key"] = frame["key"].map(lambda k, s=stems[path]: f"{s}/{k}" if k in shared
                                            else k)
        out.append(frame)
    shown = ", ".join(f"`{k}`" for k in list(shared)[:4]) + (" …" if len(shared) > 4 else "")
    notes.append(f"{shown} in {len({p for ps in shared.values() for p in ps})} files: kept apart, "
                 "each named by its file (`<file>/<key>`), never joined into one series")
    return out


def _stems(paths: list[str]) -> dict[str, str]:
    """Each file's name without its extension (its path under the run's folder where two share a
    name)."""
    stems = {p: os.path.splitext(os.path.basename(p))[0] for p in paths}
    if len(set(stems.values())) < len(stems):
        base = os.path.commonpath(paths)
        stems = {p: os.path.splitext(os.path.relpath(p, base))[0] for p in paths}
    return stems
