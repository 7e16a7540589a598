"""The fallback of every folder no named layout claims: its sniffed tables (CSV, TSV, whitespace,
JSON lines, JSON arrays; Keras `CSVLogger`), `*results*.json` and `*meta*.json` as one run, and
each text log (`key:value` fields with a step) as a run of its own (layout `text`)."""

from __future__ import annotations

import os

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


def sniff_files(folder: str, files: list[str]) -> list[LayoutRun]:
    """Runs from a folder no named layout claims: its tables as one run, each text log as one."""
    table = LayoutRun(folder, "files", reason="")
    texts: list[LayoutRun] = []
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
        found = sniff_table(path, head)
        if found is not None and (found.kind == "json" or not low.endswith(".json")):
            table.files.append(path)  # a .json file counts only as an array of records
            table.sniffs[path] = found
            continue
        if low.endswith((".json", ".csv", ".tsv")) or not may_be_text_log(head):
            continue  # no text log: textlog (its grammars compile on import) is not imported
        from ..textlog import sniff_text

        grammar = sniff_text(path)
        if grammar is not None:
            texts.append(LayoutRun(path, "text", [path], grammar.describe(), {path: grammar}))
    specs = []
    if table.files:
        shown = ", ".join(os.path.basename(f) for f in table.files[:3])
        table.reason = f"{len(table.files)} result/log file(s): {shown}"
        specs.append(table)
    return specs + texts


def claim(folder: LayoutFolder) -> Claimed | None:
    runs = sniff_files(folder.path, folder.files)
    return Claimed(runs) if runs else None


def claim_file(path: str) -> list[LayoutRun] | None:
    runs = sniff_files(os.path.dirname(path), [os.path.basename(path)])
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


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(os.path.dirname(spec.path) if os.path.isfile(spec.path)
                                              else spec.path)
    unstepped = _unstepped(spec)
    for path in spec.files:
        base = os.path.basename(path)
        if path in unstepped:
            out.notes.append(f"{base}: no step-like column beside {unstepped[path]} → not read as "
                             f"history (a report table? `rundiff ls local:{path}` reads it alone, "
                             "x = row index)")
            continue
        sniff = spec.sniffs.get(path)
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
            out.config.update(data)
            out.notes.append(f"{base} (metadata object) → config")
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
        if isinstance(sniff, Sniff):
            if one_row(path, sniff) is not None:
                continue
            frame, more = read_table(path, sniff)
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
        frames.append(frame)
        notes += more
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else rundiff_core.empty_history()), notes
