"""The fallback of every folder no named layout claims: its sniffed tables (CSV, TSV, whitespace,
JSON lines, JSON arrays; Keras `CSVLogger`), `*results*.json` and `*meta*.json` as one run, and
each text log (`key:value` fields with a step) as a run of its own (layout `text`)."""

from __future__ import annotations

import os
import re
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import (
    CONFIG_FILES,
    Claimed,
    LayoutFolder,
    LayoutRun,
    SignatureNames,
    flatten,
    read_config_files,
    read_json_file,
)

from ..common import Meta, is_events_file, scalars
from ..documents import RESULT_SECTIONS, SETTING_SECTIONS, document_parts
from ..lazy import pd
from ..shape import ColumnLists
from ..sniff import (
    SPLIT_NAMES,
    Sniff,
    may_be_text_log,
    one_row,
    read_head,
    read_table,
    sniff_table,
)
from .bare_tables import bare_table_runs
from .file_groups import is_prefix_run, prefix_groups, prefix_run_path, stage_folders
from .owned_events import beside_events, events_folder

RESULT_PATTERNS = ("*results*.json", "eval*.csv", "metrics.csv", "*.metrics.csv")
METADATA_WORDS = ("meta", "metadata")
#: Extensions that are never a log (code, images, weights, archives, media, other readers'
#: stores, config files read by name): every other file is sniffed by its content, under any
#: name (`log.json.lst`, `train.out.1`, `metrics`).
NOT_LOG_EXTS = {".py", ".pyc", ".ipynb", ".sh", ".bat", ".ps1", ".c", ".cpp", ".h", ".js", ".ts",
                ".html", ".css", ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".tif", ".tiff",
                ".webp", ".ico", ".pdf", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".npy", ".npz",
                ".h5", ".hdf5", ".onnx", ".bin", ".safetensors", ".tflite", ".pb", ".joblib",
                ".zip", ".gz", ".tar", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".whl", ".so", ".dll",
                ".exe", ".mp4", ".avi", ".mov", ".mkv", ".wav", ".mp3", ".flac", ".parquet",
                ".arrow", ".feather", ".db", ".sqlite", ".sqlite3", ".wandb", ".eval", ".yaml",
                ".yml", ".toml", ".ini", ".cfg", ".lock", ".ds_store", ".pdparams", ".caffemodel",
                ".xml", ".tex", ".bib", ".docx", ".xlsx", ".pptx", ".rst"}
NOT_LOGS = {"readme", "license", "licence", "requirements.txt", "dvc.lock", "dvc.yaml", ".gitignore",
            "cout.txt", "model_summary.txt", "summary.txt", "changelog.md", "contributing.md",
            "code_of_conduct.md", "security.md"}


def is_result_file(name: str) -> bool:
    return SignatureNames((name,)).match(RESULT_PATTERNS) or is_metadata_file(name)


def is_metadata_file(name: str) -> bool:
    """A JSON file named as a run's metadata: `meta`/`metadata` begins or ends its name
    (`metadata.json`, `wandb-metadata.json`, `metadata_final.json`, `run_meta.json`). Inside a
    name the word qualifies something else (`beauty_meta_encoder.json`,
    `fusion_concat_with_meta_report.json`: a model's metadata features), and its content says
    what the file is."""
    low = name.lower()
    if not low.endswith(".json"):
        return False
    words = [w for w in re.split(r"[^a-z0-9]+", low[:-5]) if w]
    return bool(words) and (words[0] in METADATA_WORDS or words[-1] in METADATA_WORDS)


_SETTINGS = ("param", "config", "conf", "arg", "hparam", "hyper", "setting", "option", "cfg")


def _results_like(data: Any, low_name: str) -> bool:
    """A JSON object that holds results: its top-level values are numbers (at least two, and at
    least 80% of them), and its name does not call it settings (`best_params.json`)."""
    if not isinstance(data, dict) or any(word in low_name for word in _SETTINGS):
        return False
    top = list(data.values())  # final numbers sit at the top (`{"accuracy": 0.91, "loss": 0.3}`)
    numbers = sum(1 for v in top if isinstance(v, int | float) and not isinstance(v, bool))
    return numbers >= 2 and numbers >= 0.8 * len(top)


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
    docs: list[LayoutRun] = []  # documents, one per run (or a section each)
    marked: list[LayoutRun] = []  # Markdown files: one run each, or one per alike section
    reports: list[LayoutRun] = []  # sections of a text report, a run each
    lone: dict[str, str] = {}  # a settings document with no sibling: not a run by itself
    found_numbers: list[str] = []  # documents of final numbers, known by shape (not by name)
    docs_data: dict[str, Any] = {}  # each document's content, by path
    named_tables: list[tuple[str, Sniff]] = []  # tables named as results (`metrics.csv`)
    for name in files:
        low = name.lower()
        path = os.path.join(folder, name)
        if low in CONFIG_FILES or low in NOT_LOGS or low.startswith(("readme", "license")):
            continue
        if is_result_file(name):  # named as results: read whatever its shape
            table.files.append(path)
            if not low.endswith(".json") and (found := sniff_table(path)) is not None:
                named_tables.append((path, found))  # a history, for the logs beside it
            continue
        if os.path.splitext(low)[1] in NOT_LOG_EXTS or low.startswith("events.out.tfevents"):
            continue
        head = read_head(path)
        text_ok = not low.endswith((".json", ".csv", ".tsv")) and may_be_text_log(head)
        shape = shape_of(path, head, text=text_ok)
        if shape.kind in ("table", "records"):
            table.files.append(path)
            table.sniffs[path] = shape.found
        elif shape.kind == "markdown":
            marked += markdown_runs(path, shape)
            if not shape.found.runs and unread is not None and len(files) == 1:
                unread[path] = shape.detail  # prose: passed over in a folder, said when named
        elif shape.kind == "columns":
            columns.append(LayoutRun(path, "column-lists", [path], shape.detail, {path: shape.found}))
        elif shape.kind == "text" and shape.found.step is None and (
                sections := _text_sections(path)):
            reports.extend(LayoutRun(f"{path}#{s.name}", "files", [path], f"{name}: section "
                                     f"{s.name!r} of {len(sections)} alike under their titles: "
                                     "a run each", {path: s}) for s in sections)
        elif shape.kind == "text":
            texts.append(LayoutRun(path, "text", [path], shape.detail, {path: shape.found}))
        elif shape.kind == "document" and (sections := _sections(shape.found)):
            docs.extend(LayoutRun(f"{path}#{k}", "files", [path], f"{name}: section {k!r} of "
                                  f"{len(sections)} alike: a run each", {path: Document(k)})
                        for k in sections)
        elif shape.kind == "document" and _results_like(shape.found, low):
            docs_data[path] = shape.found
            table.files.append(path)  # final numbers (`metrics_val_best_weights.json`): summary
            found_numbers.append(path)
        elif shape.kind == "document" and _holds_settings(shape.found):
            docs_data[path] = shape.found
            docs.append(LayoutRun(path, "files", [path], f"{name}: a document of settings and "
                                  "results", {path: Document(None)}))
            lone[path] = shape.detail
        elif shape.kind == "unknown" and text_ok and _printed_config_only(path):
            texts.append(LayoutRun(path, "text", [path], f"{name}: a log that printed its config "
                                   "and no records: a run with no points", {path: None}))
        elif unread is not None:
            unread[path] = shape.detail + ("" if shape.kind != "document" else
                                           ": neither numbers nor a config file by its name")
    apart: list[LayoutRun] = []  # tables of another measurement than the folder's log
    stepped_text = len(texts) == 1 and texts[0].sniffs[texts[0].path] is not None and \
        texts[0].sniffs[texts[0].path].step is not None and \
        not any(isinstance(s, Sniff) and s.step for s in table.sniffs.values())
    if stepped_text:
        swept = _swept_tables(table)  # another measurement beside the log: a run of its own
        for path in swept:
            table.files.remove(path)
            sniff = table.sniffs.pop(path)
            apart.append(LayoutRun(path, "files", [path], f"{os.path.basename(path)}: a table "
                                   f"over its own x (`{sniff.header[0]}`) beside "
                                   f"{os.path.basename(texts[0].path)}'s steps: a run of its own",
                                   {path: sniff}))
    apart += bare_table_runs(table)  # two dumps of one script's bare rows: a run each
    if len(columns) == 1 and (stepped_text or any(isinstance(s, Sniff) and s.step
                                                  for s in table.sniffs.values())):
        # one file of per-epoch lists beside the run's history (`history.json` by `log.csv`, the
        # lists of `metrics.json` by the `train.log` that printed them): a file of that run, its
        # lists read with the history's keys (same names kept apart)
        (lists,) = columns
        table.files.append(lists.path)
        table.sniffs[lists.path] = lists.sniffs[lists.path]
        columns = []
    history_here = texts or columns or any(isinstance(s, Sniff) and s.step
                                           for s in table.sniffs.values())
    if history_here and docs:  # a run folder's reports (`test_report.json`) are that run's files
        for d in docs:
            if unread is not None:
                unread[d.files[0]] = (lone.get(d.files[0]) or "JSON object of sections") + \
                    ": a document beside the run's logs, not read"
        docs = []
    if docs and not history_here and found_numbers:
        for path in _results_of_documents(docs, found_numbers, docs_data):
            table.files.remove(path)
            found_numbers.remove(path)
        for path in _index_tables(table, docs_data):
            table.files.remove(path)
            table.sniffs.pop(path, None)
            if unread is not None:
                unread[path] = "a table of the runs beside it (its columns are their documents' " \
                               "keys): their index, not a run"
    docs = _companions(docs, lone)
    single = [d for d in docs if d.path in lone]
    if len(single) == 1 and len(docs) == 1 and not _reports_results(docs_data.get(single[0].path)):
        docs.remove(single[0])  # one document of settings alone: a config dump
        if unread is not None:
            unread[single[0].path] = lone[single[0].path] + \
                ": text and numbers, with no log, config or sibling document beside it"
    launched = _launch_runs(table)
    if launched:  # a report table with no step beside the launches is none of them, nor a run
        flat = [p for p in table.files if isinstance(s := table.sniffs.get(p), Sniff)
                and not s.step and one_row(p, s) is None]
        table.files = [p for p in table.files if p not in flat]
        for run in launched:
            run.sniffs["beside"] = flat
    config = [n for n in files if n.lower() in CONFIG_FILES]
    history = any(isinstance(s, Sniff) and s.step and one_row(p, s) is None
                  for p, s in [*table.sniffs.items(), *named_tables])  # a stepped table
    numbers = [p for p in table.files if p in found_numbers]
    if numbers and len(numbers) == len(table.files) and not (texts or config or columns):
        # final numbers alone in a folder (a downstream eval's summary): nothing else of a run
        table.files = []
        for p in numbers:
            if unread is not None:
                unread[p] = "JSON object of final numbers, with no log or config beside it " \
                            f"(`rundiff ls local:{p}` reads it alone)"
    if texts and (history or table.files and (len(texts) == 1 or config) or
                  not table.files and len(texts) >= 2 and config):
        # the folder's text logs are files of its run: beside a structured history, its console
        # copy (`output.log`), not read again; beside final numbers or the config they ran with
        # (`train.log`, `evaluate.log` by `params.json`, `metrics_val_best_weights.json`), read
        table.files += [t.path for t in texts]
        table.sniffs.update({t.path: TextFile(t.sniffs[t.path], read=not history) for t in texts})
        texts = []
    prefixed = _prefix_runs(folder, files, table, unread) if table.files and not (
        history or launched or texts or columns or docs or reports) else []
    specs = []
    if table.files:
        shown = ", ".join(os.path.basename(f) for f in table.files[:3])
        table.reason = f"{len(table.files)} result/log file(s): {shown}"
        specs.append(table)
    return specs + prefixed + launched + apart + columns + texts + docs + marked + reports


def _swept_tables(table: LayoutRun) -> list[str]:
    """The tables of a folder run with an x of their own that is not a step: every column
    numeric, the first strictly increasing over three rows or more (`size,time_s,peak_mem_mb`
    for image sizes 64…512). Beside a text log's epochs they measure something else — another
    experiment, not the log's run — unlike a report of the run's items, whose rows are labelled
    by text (one per image or class)."""
    from ..sniff import read_columns

    out = []
    for path, sniff in table.sniffs.items():
        if not isinstance(sniff, Sniff) or sniff.step or sniff.headerless or not sniff.header \
                or sniff.kind not in ("\t", ",", ";") or one_row(path, sniff) is not None:
            continue
        cols, _ = read_columns(path, sniff)
        if cols.text or cols.labels or cols.rows < 3 or not cols.names \
                or cols.names[0] != sniff.header[0] or not cols.valid[0].all():
            continue
        if (pd.Series(cols.values[0]).diff().dropna() > 0).all():
            out.append(path)
    return out


def markdown_runs(path: str, shape: Any) -> list[LayoutRun]:
    """The runs of a Markdown file (`adapters/local/markdown.py` decides): the file, or each of
    its alike sections `FILE#HEADING`; none for prose."""
    from ..markdown import MarkdownRun

    doc, name = shape.found, os.path.basename(path)
    if doc.runs == [None]:
        return [LayoutRun(path, "markdown", [path], f"{name}: {shape.detail}",
                          {path: MarkdownRun(doc, None)})]
    return [LayoutRun(f"{path}#{t}", "markdown", [path], f"{name}: section {t!r} of "
                      f"{len(doc.runs)} alike: a run each", {path: MarkdownRun(doc, t)})
            for t in doc.runs]


def _prefix_runs(folder: str, names: list[str], table: LayoutRun,
                 unread: dict[str, str] | None) -> list[LayoutRun]:
    """The folder's tables as runs named by their file prefix (`file_groups.prefix_groups`),
    each `<folder>/<prefix>*`; a table of no prefix beside them belongs to none (`test.csv`, the
    data they ran on) and is said so. [] (the folder's run unchanged) when names do not group."""
    groups = prefix_groups(names)
    if not groups:
        return []
    out = []
    for prefix, members in sorted(groups.items()):
        paths = {os.path.join(folder, n) for n in members}
        mine = [p for p in table.files if p in paths]
        if mine:
            out.append(LayoutRun(prefix_run_path(folder, prefix), "files", mine,
                                 f"files named {prefix}.*: a run by its prefix, one of "
                                 f"{len(groups)}", {p: table.sniffs[p] for p in mine
                                                    if p in table.sniffs}))
    if not out:
        return []
    taken = {p for r in out for p in r.files}
    for p in table.files:
        if p not in taken and unread is not None:
            unread[p] = "a table of no run: the runs beside it are named by their file prefix " \
                        f"({', '.join(sorted(groups))})"
    table.files = []
    return out


def _printed_config_only(path: str) -> bool:
    """A stamped log with no records that printed its config (a launch that stopped before its
    first logged step): a run, its config all it has."""
    from ..log_config import printed_config

    return bool(printed_config(path)[0])


def _text_sections(path: str) -> list[Any] | None:
    from ..text_sections import text_sections

    return text_sections(path)


class Document(rundiff_core.PlainRecord):
    """A JSON document that is one run (`section` None) or holds one run per top-level section
    (`{"baseline": {…}, "resnet50": {…}}`): its settings are config, its measured numbers the
    summary."""

    __match_args__ = ("section",)

    def __init__(self, section: str | None) -> None:
        self.section = section


def _sections(data: Any) -> list[str]:
    """The top-level sections of a document that are alike runs: two or more objects sharing
    most of their keys, each holding measured numbers, and next to nothing else."""
    if not isinstance(data, dict) or len(data) < 2:
        return []
    subs = {k: v for k, v in data.items() if isinstance(v, dict) and sum(
        1 for x in flatten(v, sep="/").values()
        if isinstance(x, int | float) and not isinstance(x, bool)) >= 2}
    if len(subs) < 2 or len(subs) < 0.8 * len(data):
        return []
    keys = [set(v) for v in subs.values()]
    shared = set.intersection(*keys)
    if len(shared) < 2 or any(len(shared) < 0.5 * len(k) for k in keys):
        return []
    return [str(k) for k in subs]


def _holds_settings(data: Any) -> bool:
    """A document with settings in it — a `config`/`args` section, or text or flag values beside
    its numbers — not only final numbers."""
    if not isinstance(data, dict):
        return False
    if any(str(k).lower() in SETTING_SECTIONS and isinstance(v, dict) for k, v in data.items()):
        return True
    leaves = flatten(data, sep="/").values()
    has_text = any(isinstance(v, str | bool) for v in leaves)
    has_number = any(isinstance(v, int | float) and not isinstance(v, bool) for v in leaves)
    return has_text and has_number




def _reports_results(data: Any) -> bool:
    """A document with a results section of numbers (`"metrics": {"accuracy": 0.6, …}`: Allie's
    model JSON): the record of a run that measured them, not a config dump, even alone."""
    return isinstance(data, dict) and any(
        str(k).lower() in RESULT_SECTIONS and isinstance(v, dict) and sum(
            isinstance(x, int | float) and not isinstance(x, bool) for x in v.values()) >= 2
        for k, v in data.items())


def _leaf_names(data: Any) -> set[str]:
    return {k.rsplit(".", 1)[-1].lower() for k in flatten(data, sep=".")} \
        if isinstance(data, dict) else set()


def _results_of_documents(docs: list[LayoutRun], numbers: list[str], data: dict[str, Any]
                          ) -> list[str]:
    """Documents of final numbers beside documents that are runs (each its settings and
    results): one named as a run document's companion (`X_eval.json` by `X_report.json`) joins
    it; one that measures what those runs measure (every key of it among theirs:
    `text_emb_eval.json`'s `hit@10`, `ndcg@10`) is one more run, with no settings. Others (a
    data statistic, an encoder's sizes) stay the folder's. Returns the documents taken."""
    theirs = set().union(*(_leaf_names(data.get(d.path)) for d in docs))
    bases = {_companion_key(d.path) for d in docs}
    taken = []
    for path in numbers:
        mine = _leaf_names(data.get(path))
        if _companion_key(path) in bases or (mine and mine <= theirs):
            docs.append(LayoutRun(path, "files", [path], f"{os.path.basename(path)}: final "
                                  "numbers beside the run documents", {path: Document(None)}))
            taken.append(path)
    return taken


def _index_tables(table: LayoutRun, data: dict[str, Any]) -> list[str]:
    """Tables with no step whose columns are the keys of the run documents beside them (a
    `metrics.csv` appended with each run's `run_name`, settings and scores): an index of those
    runs, restating them — not a run, nor a history of one."""
    docs = [d for p, d in data.items() if p not in table.files]
    keys = set().union(*(_leaf_names(d) for d in docs)) if docs else set()
    out = []
    for path in table.files:
        sniff = table.sniffs.get(path)
        if sniff is None and not path.lower().endswith(".json"):
            sniff = sniff_table(path)
        if not isinstance(sniff, Sniff) or sniff.step or not sniff.header:
            continue
        if sum(h.lower() in keys for h in sniff.header) >= 0.8 * len(sniff.header):
            out.append(path)
    return out


def _launch_runs(table: LayoutRun) -> list[LayoutRun]:
    """A table that holds several launches (its x back at its start: a script run again, its
    log appended) leaves the folder's run: each launch is a run of its own, `FILE#1`, `FILE#2`.
    Tables of one folder that start again the same number of times were appended by the same
    launches (a script writing `train.log` and `eval.log` each epoch): launch i of each is one
    run, named by the table whose name says it is the training log (else the first by name)."""
    from ..detecting import DETECTING
    from ..sniff import launches

    if DETECTING.get():
        return []  # detection reads heads only; the listing finds the launches
    found: dict[int, list[tuple[str, Sniff, list[tuple[int, int]]]]] = {}
    for path, sniff in list(table.sniffs.items()):
        if not isinstance(sniff, Sniff) or one_row(path, sniff) is not None:
            continue
        spans = launches(path, sniff)
        if not spans:
            continue
        table.files.remove(path)
        del table.sniffs[path]
        found.setdefault(len(spans), []).append((path, sniff, spans))
    out = []
    for group in found.values():
        alike = [group] if len(group) > 1 else []
        for members in alike or [[m] for m in group]:
            members.sort(key=lambda m: (not _says_train(m[0]), m[0]))
            lead, sniff, spans = members[0]
            base = os.path.basename(lead)
            others = [os.path.basename(m[0]) for m in members[1:]]
            with_them = f" and {', '.join(others)}'s rows of the same launch" if others else ""
            for i, span in enumerate(spans, start=1):
                sniffs: dict[str, Any] = {p: sn for p, sn, _ in members}
                sniffs["rows"] = {p: sp[i - 1] for p, _, sp in members}
                out.append(LayoutRun(f"{lead}#{i}", "files", [m[0] for m in members],
                                     f"{base}: launch {i} of {len(spans)} (rows {span[0] + 1}–"
                                     f"{span[1]}; its {sniff.step} starts again){with_them}",
                                     sniffs))
    return out


def _says_train(path: str) -> bool:
    """The file's name says it is the training log (`train.log`, `training_log.csv`)."""
    stem = os.path.splitext(os.path.basename(path))[0].lower()
    return re.search(r"(?:^|[^a-z])train(?:ing)?(?:$|[^a-z])", stem) is not None


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
    staged = _staged_run(folder, runs, unread)
    if staged is not None:
        return Claimed([staged], consumed=set(folder.dirs), unread=unread)
    if len(runs) == 1 and runs[0].layout == "text":
        # a text log alone in its folder owns the one folder of event files beside it (the
        # trainer's TensorBoard writer; owned_events), and says so even when there is none
        owned = events_folder(folder.path, folder.dirs)
        runs[0].sniffs["owns_events"] = owned[1] if owned else []
        if owned or runs[0].sniffs.get(runs[0].files[0], False) is None:
            # the run is the folder: the log and the events folder inside it, or a log that
            # printed its config and stopped (no records: its folder's run, not a log's)
            runs[0].path = folder.path
        if owned:
            runs[0].reason += f" + {len(owned[1])} TensorBoard events file(s) in {owned[0]}/"
            return Claimed(runs, consumed={owned[0]}, unread=unread)
    owned = _event_folders(folder) if len(runs) == 1 and runs[0].path == folder.path else []
    if owned:
        runs[0].sniffs["owns_events"] = owned
        runs[0].reason += f" + the TensorBoard files of {', '.join(d + '/' for d in owned)}"
    return Claimed(runs, unread=unread, consumed=set(owned)) if runs or unread else None


def _event_folders(folder: LayoutFolder) -> list[str]:
    """The sub-folders of a run's folder that hold TensorBoard event files and nothing else
    (`tensorboard/` beside `training_logs.txt`, `tf_logs/` beside `log.txt`): the run's own
    scalars, written by the script that wrote its logs — one run, not a TensorBoard run beside
    it. A sub-folder with anything else in it (a run of its own, a `runs/` of versions) is not."""
    out = []
    for d in folder.dirs:
        try:
            entries = list(os.scandir(folder.join(d)))
        except OSError:
            continue
        names = [e.name for e in entries if not e.name.startswith(".")]
        if names and all(e.is_file() and is_events_file(e.name) for e in entries
                         if not e.name.startswith(".")):
            out.append(d)
    return out


def _staged_run(folder: LayoutFolder, runs: list[LayoutRun], unread: dict[str, str]
                ) -> LayoutRun | None:
    """One run of a folder and its stage folders (`Munge/`, `Train/`, `Tune/`, `Test/`): two or
    more sub-folders with no folders of their own, each only tables with no step (reports,
    predictions) that no named layout claims, none of them a history, and no file name held by
    all of them (`file_groups.stage_folders`: alike runs repeat theirs) — beside nothing in the
    folder that is a history either. Their tables are that run's files."""
    reports = [r for r in runs if r.layout == "markdown"]  # a Markdown report beside the stages
    runs = [r for r in runs if r.layout != "markdown"]
    if len(folder.dirs) < 2 or any(_is_history(r) for r in runs) or len(runs) > 1:
        return None
    children: dict[str, list[str]] = {}
    parts: list[LayoutRun] = []
    found: dict[str, str] = {}
    for name in sorted(folder.dirs):
        sub = os.path.join(folder.path, name)
        try:
            entries = list(os.scandir(sub))
        except OSError:
            return None
        if name.startswith(".") or any(e.is_dir() for e in entries):
            return None
        files = sorted(e.name for e in entries if not e.name.startswith("."))
        children[name] = files
        got = _first_claim(sub, files, found)
        if any(r.layout != "files" or _is_history(r) or r.path != sub for r in got):
            return None
        parts += got
    if not parts or not stage_folders(children):
        return None
    run = runs[0] if runs and runs[0].layout == "files" else LayoutRun(folder.path, "files", [], "")
    for other in reports:  # said, and read alone when named
        unread[other.files[0]] = (f"{other.reason}; beside the stage folders of this run — "
                                  f"`rundiff ls local:{other.path}` reads it alone")
    for part in parts:
        run.files += part.files
        run.sniffs.update(part.sniffs)
    unread.update(found)
    run.reason = (f"{len(run.files)} result file(s) in {len(children)} stage folders "
                  f"({', '.join(sorted(children))}): one run, its stages unlike each other")
    return run


def _first_claim(folder: str, files: list[str], unread: dict[str, str]) -> list[LayoutRun]:
    """The runs the first layout in detection order claims in `folder` (as the walk would)."""
    from rundiff_core import layouts_in_order

    view = LayoutFolder(folder, files, [])
    for _spec, module in layouts_in_order().modules([os.path.basename(folder), *files]):
        got = module.claim(view)
        if got is not None:
            unread.update(got.unread)
            if got.runs:
                return got.runs
    return []


def _is_history(run: LayoutRun) -> bool:
    """A run that holds curves: a text log, column lists, a launch, a stepped table."""
    if run.layout != "files" or "rows" in run.sniffs:
        return True
    return any(isinstance(s, TextFile | ColumnLists) or isinstance(s, Sniff) and s.step
               for s in run.sniffs.values())


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
        elif shape.kind == "document" and _holds_settings(shape.found):
            # one document of settings and results (Allie's model JSON): in a folder alone it is
            # a config dump, but named it is the run the user means
            runs = [LayoutRun(path, "files", [path], f"named: {os.path.basename(path)}: a "
                              "document of settings and results", {path: Document(None)})]
    for r in runs:
        if "#" not in r.path:  # a launch or a section keeps its name within the file
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
    path = spec.path.split("#", 1)[0] if "#" in spec.path and spec.files else spec.path
    return os.path.dirname(path) if os.path.isfile(path) or is_prefix_run(path) else path


#: The words a companion document adds to its run's file name (`X.json` and `X_metrics.json`).
COMPANION_WORDS = ("metrics", "results", "result", "scores", "eval", "evaluation", "summary",
                   "report", "stats")


def _companion_key(path: str) -> str:
    """The run a document is a part of, by its name: `X_metrics.json` → `X`, `X.json` → `X`."""
    stem = os.path.splitext(os.path.basename(path))[0]
    base, _, word = stem.rpartition("_")
    return os.path.join(os.path.dirname(path), base if base and word.lower() in COMPANION_WORDS
                        else stem)


def _companions(docs: list[LayoutRun], lone: dict[str, str]) -> list[LayoutRun]:
    """Documents named as one run's parts (`X.json` and `X_metrics.json`, or `X_eval.json` and
    `X_report.json`) are one run: the first holds its settings, the others are its companions,
    their numbers its summary."""
    groups: dict[str, list[LayoutRun]] = {}
    for d in docs:
        groups.setdefault(d.path if "#" in d.path else _companion_key(d.path), []).append(d)
    out = []
    for key, members in groups.items():
        if len(members) == 1:
            out.append(members[0])
            continue
        # X.json first, then the one that holds settings (`X_report.json` before `X_eval.json`)
        members.sort(key=lambda d: (os.path.splitext(d.path)[0] != key, d.path not in lone,
                                    d.path))
        owner, *rest = members
        for d in rest:
            owner.files.append(d.path)
            owner.sniffs[d.path] = Document(None)
            owner.reason += f" (+ {os.path.basename(d.path)})"
            lone.pop(d.path, None)
        lone.pop(owner.path, None)  # a document with companions is a run, not a config dump
        out.append(owner)
    return out


def _document_meta(spec: LayoutRun) -> Meta:
    out = Meta()
    for i, path in enumerate(spec.files):
        doc = spec.sniffs[path]
        data = read_json_file(path, out.notes)
        if isinstance(data, dict) and doc.section is not None:
            data = data.get(doc.section)
        if not isinstance(data, dict):
            continue
        own = doc.section if doc.section is not None else \
            os.path.splitext(os.path.basename(spec.files[0]))[0]
        config, summary, metadata, notes = document_parts(data, own)
        where = os.path.basename(path) + (f" section {doc.section!r}" if doc.section else "")
        if i:  # a companion: its numbers are the run's results, whatever their names
            summary.update({k: v for k, v in config.items() if isinstance(v, int | float)
                            and not isinstance(v, bool)})
            config = {}
        out.config.update(config)
        out.meta.update(metadata)
        out.summary.update(summary)
        out.notes.append(f"{where} ({'a document: one run' if not i else 'its companion'}) → "
                         f"{len(config)} setting(s) to config, {len(summary)} measured number(s) "
                         "to summary")
        out.notes += [f"{where}: {n}" for n in notes]
    return out


def meta(spec: LayoutRun) -> Meta:
    if spec.files and isinstance(spec.sniffs.get(spec.files[0]), Document):
        return _document_meta(spec)
    if spec.files and _is_section(section := spec.sniffs.get(spec.files[0])):
        out = Meta()
        out.config, out.summary = dict(section.config), dict(section.summary)
        out.notes.append(f"{os.path.basename(spec.files[0])} section {section.name!r} (a text "
                         f"report's section under its title) → {len(out.config)} setting(s) to "
                         f"config, {len(out.summary)} measured number(s) to summary; no history")
        return out
    out = Meta()
    out.config, out.notes = read_config_files(_folder(spec))
    if "rows" in spec.sniffs:
        out.notes.append(spec.reason + (": one launch of several appended to one file, a run of "
                                        "its own" if len(spec.files) == 1 else ": one launch of "
                                        "several appended to each of its files, a run of its own"))
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
        if isinstance(sniff, ColumnLists):
            config, summary, metadata, _ = document_parts(sniff.other)
            out.config.update({k: v for k, v in config.items() if k not in out.config})
            out.summary.update(summary)
            out.meta.update(metadata)
            out.notes.append(f"{base} (column lists beside the table) → history"
                             + (f"; {len(summary)} final number(s) → summary" if summary else "")
                             + (f"; {len(config)} setting(s) → config" if config else ""))
            continue
        if isinstance(sniff, TextFile):
            if sniff.read:
                out.notes.append(f"{base} ({sniff.grammar.describe()}) → history")
            else:
                out.notes.append(f"{base}: {sniff.grammar.describe()} beside the structured history"
                                 " → a file of this run (its console copy), not read into it; "
                                 f"`rundiff ls local:{path}` reads it alone")
            continue
        if isinstance(sniff, Sniff):
            if beside_events(path) and one_row(path, sniff) is not None:
                out.notes.append(f"{base} (one row beside TensorBoard event files: the trainer's "
                                 "log after one epoch) → history")
            elif (row := one_row(path, sniff)) is not None:
                stem = os.path.splitext(base)[0]
                if is_prefix_run(spec.path):  # `<prefix>.tunedModel_CV_Summary` → its part
                    stem = stem[len(os.path.basename(spec.path)) - 1:].lstrip("._") or stem
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
        data = read_json_file(path, out.notes)
        if is_metadata_file(base) and isinstance(data, dict):
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


def _is_section(found: Any) -> bool:
    return type(found).__name__ == "TextSection"  # its module loads only for a text log


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    if spec.files and (isinstance(first := spec.sniffs.get(spec.files[0]), Document)
                       or _is_section(first)):
        return rundiff_core.empty_history(), []  # final numbers, no curves
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
        elif isinstance(sniff, ColumnLists):
            from . import column_lists

            frame, more = column_lists.history(LayoutRun(path, "column-lists", [path], "",
                                                         {path: sniff}))
        elif isinstance(sniff, Sniff):
            if one_row(path, sniff) is not None and not beside_events(path):
                continue
            frame, more = read_table(path, sniff, rows=(spec.sniffs.get("rows") or {}).get(path))
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
    for d in spec.sniffs.get("owns_events") or []:
        frames.append(_events_frame(os.path.join(_folder(spec), d), notes))
    frames = [(p, f) for p, f in frames if len(f)]
    if not frames:
        return rundiff_core.empty_history(), notes
    out = pd.concat(_apart(frames, notes), ignore_index=True)
    if len(frames) > 1:
        out.attrs["key_files"] = {k: os.path.basename(p) for p, f in frames
                                  for k in f["key"].unique()}
    return out, notes


def _events_frame(path: str, notes: list[str]) -> tuple[str, pd.DataFrame]:
    """The scalars of an events sub-folder the run owns, read by the tb adapter; a reader
    failure is a note (the run's own logs are its history anyway)."""
    name = os.path.basename(path) + "/"
    try:
        frame = rundiff_core.load_run("tb:" + path).history()
    except Exception as exc:  # noqa: BLE001 - any reader failure is said, never raised
        notes.append(f"{name}: TensorBoard files not read ({type(exc).__name__}: {str(exc)[:100]})")
        return path, rundiff_core.empty_history()
    keys = sorted(frame["key"].astype(str).unique()) if len(frame) else []
    notes.append(f"{name}: TensorBoard files of this run → history" + (
        f" ({len(keys)} tag(s): {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''})" if keys
        else ": no scalars"))
    return path, frame


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
