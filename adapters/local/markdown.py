"""Markdown written by hand: results people paste into a `.md` file, read as what they are.

A Markdown file is split into *sections* at its ATX headings (`## Run 3`, up to three spaces of
indent, as CommonMark has it); a section holds

- **pipe tables** (a header row, then a separator row `|---|:--:|`): a table with a step-like
  column (`epoch`, `step`) is a history with that column as x, as any table is; a table of
  `name | value` rows (two columns, or a `value` column) gives one number or setting per row; a
  table of one numeric row gives final numbers; a table of labelled rows (one per model, per
  class) compares several things and is no run's history — said, not read;
- **code blocks** (fenced by three backticks or tildes): a log pasted whole, read with the text
  grammars of `textlog` (the same rules as a log file);
- **records**: other lines that are wholly `key: value` / `key = value` fields with numbers
  (`- **accuracy**: 0.91`, HF Trainer's `  eval_f1 = 0.9588`) — the run's final numbers; under a
  heading that names settings (`## Parameters`) they, and a name/value table, are its config.

Who is a run: the sections that hold numbers are one run each (`FILE#HEADING`, the heading as it
was written) when they are alike — two or more at one heading level, with distinct names that do
not name a part of one run (`Train`, `Test`, `Parameters`), sharing most of their keys —, the rule
JSON documents' sections follow (`shapes/files.py`). Otherwise the file is one run. A file with
no numbers in records, tables or logs (a README, notes in prose) is no run, and passed over.
"""

from __future__ import annotations

import os
import re
from typing import Any

import rundiff_core
from rundiff_core import read_bounded

MARKDOWN_EXTS = (".md", ".markdown")
MAX_MARKDOWN_BYTES = 8 << 20  # a larger "Markdown" file is not parsed to be sniffed (said so)
MIN_RECORD_KEYS = 2  # one `Python: 3.10` line is no run's results

_HEADING = re.compile(r"^ {0,3}(?P<marks>#{1,6})(?:[ \t]+(?P<title>.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_MARKUP = re.compile(r"\*\*|__|`|<[A-Za-z/][^<>]{0,40}>")
# a record names its value with `:` or `=` (a loose `key value` in prose is no record)
_NAMED = re.compile(r"[\w)\]%]\s*[:=]\s*[-+]?(?:\d|\.\d|nan\b|inf\b)", re.I)
# a value's unit written as a word after it (`Run time : 36493 sec.`, `Max Memory : 1947 MB`):
# glued to it, as `textlog` reads a unit (`36493sec` → key `Run_time_sec`)
_UNIT_WORD = re.compile(r"(?P<num>\d)\s+(?P<unit>s|secs?|seconds|ms|min|mins|minutes|h|hours|[KMGT]i?B|"
                        r"%)\.?(?=\s*(?:$|[,;|]))")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:nan|inf)$", re.I)

#: Heading words that name settings, and words that name a part of one run (not a run).
SETTING_WORDS = {"config", "configuration", "cfg", "params", "parameters", "parameter", "args",
                 "arguments", "hparams", "hyperparameters", "hyperparameter", "settings", "setting",
                 "options", "setup"}
PART_WORDS = SETTING_WORDS | {"train", "training", "val", "valid", "validation", "dev", "test",
                              "testing", "eval", "evaluation", "results", "result", "metrics",
                              "scores", "summary", "output", "outputs", "log", "logs"}
_VALUE_NAMES = {"value", "values", "val"}


class PipeTable(rundiff_core.PlainRecord):
    """A pipe table: its `header` cells and `rows` (cells without markup), and the line it starts."""

    __match_args__ = ("header", "rows", "line")

    def __init__(self, header: list[str], rows: list[list[str]], line: int) -> None:
        self.header = header
        self.rows = rows
        self.line = line


_UNSNIFFED: Any = object()


class Fence(rundiff_core.PlainRecord):
    """A block of lines — a code block, or a section's text outside its tables and code blocks
    (`code` False) —, its text grammar once sniffed (`fence_grammar`), and its `records`: the
    lines that are wholly `key: value` / `key = value` fields."""

    __match_args__ = ("lines", "line", "code")

    def __init__(self, lines: list[str], line: int, code: bool = True) -> None:
        self.lines = lines
        self.line = line
        self.code = code
        self.grammar: Any = _UNSNIFFED
        self.records: list[tuple[str, float]] = []
        self.keys: set[str] = set()  # of every line a text grammar reads (`iter 3: loss 2.5`)
        self._log: bool | None = None

    def is_log(self) -> bool:
        """A log, not a block of final numbers: a text grammar reads it (`fence_grammar`) and its
        step takes two or more values (`epoch = 30.0` in every metrics block is no step)."""
        if self._log is None:
            self._log = self._steps_twice()
        return self._log

    def _steps_twice(self) -> bool:
        grammar = fence_grammar(self)
        if grammar is None:
            return False
        if grammar.framework or grammar.long_form or grammar.step is None:
            return True
        from .textgrammar import parse_line

        steps = set()
        for ln in self.lines:
            rec = parse_line(ln) if grammar.step in ln else None
            steps.update(v for k, v in (rec.pairs if rec else ()) if k == grammar.step)
            if len(steps) >= 2:
                return True
        return False


class Section(rundiff_core.PlainRecord):
    """The part of a Markdown file under one heading (`title` None: before the first heading)."""

    __match_args__ = ("title", "level", "line")

    def __init__(self, title: str | None, level: int, line: int) -> None:
        self.title = title
        self.level = level
        self.line = line
        self.text = Fence([], line, code=False)
        self.tables: list[PipeTable] = []
        self.fences: list[Fence] = []

    def logs(self) -> list[Fence]:
        """The section's blocks that are logs: its code blocks, and its text, read as a log."""
        return [b for b in [self.text, *self.fences] if b.is_log()]

    @property
    def records(self) -> list[tuple[str, float]]:
        """The `key: value` records of its blocks that are no log: final numbers (or settings)."""
        return [r for b in [self.text, *self.fences] if b.records and not b.is_log()
                for r in b.records]

    def keys(self) -> set[str]:
        """What the section names: its records' keys (in logs too), its tables' columns and
        name cells."""
        out = {k for k, _ in self.records} | {k for b in self.logs() for k in b.keys}
        for table in self.tables:
            out |= set(table.header)
            if _name_value(table) is not None:
                out |= {r[0] for r in table.rows}
        return out

    def holds_numbers(self) -> bool:
        """Numbers a run measured: records, a table read as history, final numbers or name/value
        rows, or a block that is a log. Settings alone (under `## Parameters`, or a `Setting |
        Value` table) are no run's results."""
        if self.settings():
            return bool(self.logs())
        if len({k for k, _ in self.records}) >= MIN_RECORD_KEYS:
            return True
        if any(_table_kind(t) not in ("labelled", "settings") for t in self.tables):
            return True
        return bool(self.logs())

    def settings(self) -> bool:
        return names_settings(self.title or "")


class Markdown(rundiff_core.PlainRecord):
    """A parsed Markdown file: its `sections` in order, and `runs` — the titles of the sections
    that are a run each, `[None]` when the file is one run, `[]` when it is none."""

    __match_args__ = ("sections", "runs")

    def __init__(self, sections: list[Section], runs: list[str | None]) -> None:
        self.sections = sections
        self.runs = runs

    def describe(self) -> str:
        tables = sum(len(s.tables) for s in self.sections)
        fences = sum(len(s.fences) for s in self.sections)
        headed = sum(1 for s in self.sections if s.title is not None)
        return (f"Markdown, {headed} heading(s), {tables} pipe table(s), {fences} code block(s)")


def is_markdown_name(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_EXTS)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


_SETTING_QUALIFIERS = {"training", "train", "model", "experiment", "run", "hyper", "and", "the",
                       "used", "main", "default", "key"}


def names_settings(title: str) -> bool:
    """A heading (or a column) that names settings and nothing else: `Parameters`, `Training
    settings`, `Model config` — not `end of BSUB options` (a shell comment read as a heading)."""
    words = _words(title)
    return bool(words & SETTING_WORDS) and words <= SETTING_WORDS | _SETTING_QUALIFIERS


def _cells(line: str) -> list[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [_MARKUP.sub("", c).strip().strip('"').strip("'") for c in re.split(r"(?<!\\)\|", text)]


def _add_record(block: Fence, line: str) -> None:
    """The line's `key: value` fields, when the line is wholly such fields (a bullet, bold and
    code markup aside; a unit word after a value glued to it)."""
    from .textgrammar import parse_line  # the grammars compile on import: only for a Markdown file

    plain = _UNIT_WORD.sub(r"\g<num>\g<unit>", _MARKUP.sub("", _BULLET.sub("", line, count=1)))
    rec = parse_line(plain)
    if rec is not None:
        block.keys.update(k for k, _ in rec.pairs)
        if _NAMED.search(plain):
            block.records.extend(rec.pairs)


def parse_markdown(text: str) -> list[Section]:
    """The sections of a Markdown text (split at ATX headings), with their pipe tables, code
    blocks and text, as CommonMark reads them (a heading inside a code block is none)."""
    lines = text.splitlines()
    sections = [Section(None, 0, 0)]
    fence: str | None = None
    code = Fence([], 0)
    i = 0
    while i < len(lines):
        line = lines[i]
        here = sections[-1]
        if fence is not None:  # inside a code block until its closing fence
            m = _FENCE.match(line)
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not line.strip()[len(m.group("fence")):].strip():
                here.fences.append(code)
                fence = None
            else:
                code.lines.append(line)
                _add_record(code, line)
            i += 1
            continue
        m = _FENCE.match(line)
        if m:
            fence, code = m.group("fence"), Fence([], i + 2)
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            sections.append(Section((heading.group("title") or "").strip(),
                                    len(heading.group("marks")), i + 1))
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and "|" in lines[i + 1] \
                and _SEPARATOR.match(lines[i + 1]) and "-" in lines[i + 1]:
            header = _cells(line)
            rows = []
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                rows.append(_cells(lines[j]))
                j += 1
            here.tables.append(PipeTable(header, rows, i + 1))
            i = j
            continue
        here.text.lines.append(line)
        _add_record(here.text, line)
        i += 1
    if fence is not None and code.lines:  # a block left open at the end of the file
        sections[-1].fences.append(code)
    return [s for s in sections if s.title is not None or s.text.records or s.tables or s.fences
            or any(ln.strip() for ln in s.text.lines)]


def runs_of(sections: list[Section]) -> list[str | None]:
    """The sections that are a run each (their titles), `[None]` for one run of the whole file,
    `[]` when nothing in it holds numbers."""
    numbered = [s for s in sections if s.holds_numbers()]
    if not numbered:  # a job's settings beside its output, no numbers yet (running, crashed)
        settings = any(s.settings() or any(_table_kind(t) == "settings" for t in s.tables)
                       for s in sections)
        output = any(ln.strip() for s in sections for f in s.fences for ln in f.lines)
        return [None] if settings and output else []
    if len(numbered) < 2 or any(s.title is None for s in numbered):
        return [None]
    titles = [s.title for s in numbered]
    if len(set(titles)) < len(titles) or not all(titles) or len({s.level for s in numbered}) > 1:
        return [None]  # a repeated or empty heading names a part, not a run
    if any(_words(t) & PART_WORDS for t in titles if t):
        return [None]  # `## Train` / `## Test`: the parts of one run
    keys = [s.keys() for s in numbered]
    shared = set.intersection(*keys)
    if len(shared) < 2 or any(len(shared) < 0.5 * len(k) for k in keys):
        return [None]
    return [t for t in titles if t]


def read_markdown(path: str) -> tuple[Markdown | None, str]:
    """(the parsed file, what it is in words), or (None, why not)."""
    raw, why = read_bounded(path, MAX_MARKDOWN_BYTES)
    if raw is None:
        return None, f"Markdown {why}, not parsed" if why.startswith("larger") else why
    text = raw.decode("utf-8-sig", errors="replace")
    sections = parse_markdown(text)
    doc = Markdown(sections, runs_of(sections))
    return doc, doc.describe()


def fence_grammar(block: Fence) -> Any:
    """The text grammar of a code block that is a log — `textlog.sniff_text` on its lines, its
    records at least MIN_RECORD_SHARE of them, as for a log file — else None; remembered on the
    block (sniffed once, then read)."""
    if block.grammar is _UNSNIFFED:
        from .textlog import sniff_text
        from .textshare import MIN_RECORD_SHARE

        grammar = sniff_text("", lines=block.lines)
        if grammar is not None:
            records, content = grammar.share
            if content and records < MIN_RECORD_SHARE * content:
                grammar = None
        block.grammar = grammar
    return block.grammar


# -- reading a run --------------------------------------------------------------------------------
def _name_value(table: PipeTable) -> tuple[int, int] | None:
    """(name column, value column) of a table of `name | value` rows: two columns (or one named
    `value`) whose first column names each row in words, every name different."""
    if not table.rows or any(len(r) < len(table.header) for r in table.rows):
        return None
    low = [h.lower() for h in table.header]
    value = next((i for i, h in enumerate(low) if h in _VALUE_NAMES), None)
    if value is None and len(table.header) != 2:
        return None
    value = 1 if value is None else value
    names = [r[0] for r in table.rows]
    if value == 0 or any(not n or _NUMBER.match(n) for n in names) or len(set(names)) < len(names):
        return None
    return 0, value


def _table_kind(table: PipeTable) -> str:
    """How a pipe table is read: `history` (a step column), `names` (name/value rows), `row` (one
    numeric row: final numbers) or `labelled` (rows of things compared: not read)."""
    if _step_table(table) is not None:
        return "history"
    if (nv := _name_value(table)) is not None:
        return "settings" if names_settings(table.header[nv[0]]) else "names"
    if len(table.rows) == 1 and table.rows[0] and all(_NUMBER.match(c) for c in table.rows[0]):
        return "row"
    return "labelled"


def _step_table(table: PipeTable) -> str | None:
    from .sniff import step_column

    return step_column(table.header) if len(table.rows) >= 1 else None


def section_parts(doc: Markdown, title: str | None) -> list[Section]:
    """The sections of one run: the one titled `title`, or all of them (`None`)."""
    if title is None:
        return list(doc.sections)
    return [s for s in doc.sections if s.title == title][:1]


def _value(text: str) -> Any:
    if _NUMBER.match(text):
        v = float(text)
        return int(v) if re.fullmatch(r"[-+]?\d+", text) else v
    low = text.lower()
    return True if low == "true" else False if low == "false" else None if low in ("", "none",
                                                                                     "null") else text


def markdown_meta(path: str, doc: Markdown, title: str | None
                  ) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """(config, summary, notes) of one run of a Markdown file: records and name/value tables
    under a settings heading are config, elsewhere their numbers are final results."""
    name = os.path.basename(path) + (f" section {title!r}" if title is not None else "")
    config: dict[str, Any] = {}
    summary: dict[str, float] = {}
    notes: list[str] = []
    parts = section_parts(doc, title)
    seen: dict[str, int] = {}
    for s in parts:
        for k in {k for k, _ in s.records}:
            seen[k] = seen.get(k, 0) + 1
    for s in parts:
        where = s.title or "the top"
        prefix = f"{s.title}/" if title is None and s.title else ""
        settings = s.settings()
        for k, v in s.records:
            key = f"{prefix}{k}" if seen.get(k, 0) > 1 else k
            (config if settings else summary)[key] = v
        if s.records:
            notes.append(f"{name}: {len({k for k, _ in s.records})} `key: value` record(s) under "
                         f"{where!r} → {'config (a settings heading)' if settings else 'summary'}")
        for t in s.tables:
            nv = _name_value(t)
            if _step_table(t) is not None:
                continue  # a history, read by markdown_history
            if nv is not None:
                ni, vi = nv
                settings_table = settings or names_settings(t.header[ni])
                values = {r[ni]: _value(r[vi]) for r in t.rows}
                if settings_table:
                    config.update(values)
                else:
                    summary.update({k: v for k, v in values.items()
                                    if isinstance(v, int | float) and not isinstance(v, bool)})
                notes.append(f"{name}: table at line {t.line} ({' | '.join(t.header)}): "
                             f"{len(values)} name/value row(s) → "
                             + ("config" if settings_table else "summary (its numbers)"))
            elif len(t.rows) == 1 and all(_NUMBER.match(c) for c in t.rows[0]):
                summary.update({h: float(c) for h, c in zip(t.header, t.rows[0], strict=False)})
                notes.append(f"{name}: table at line {t.line}: one numeric row → summary")
            else:
                notes.append(f"{name}: table at line {t.line} ({' | '.join(t.header[:4])}): "
                             f"{len(t.rows)} labelled row(s), no step column → not read (a "
                             "comparison or report, not one run's history)")
    return config, summary, notes


def markdown_history(path: str, doc: Markdown, title: str | None) -> tuple[Any, list[str]]:
    """(history frame, notes) of one run of a Markdown file: its stepped tables and the code
    blocks that are logs; two blocks' same-named keys are kept apart (`log2/<key>`)."""
    from .lazy import pd
    from .sniff import points_frame
    from .textlog import read_text_log

    base = os.path.basename(path)
    frames: list[Any] = []
    notes: list[str] = []
    logs = 0
    for s in section_parts(doc, title):
        for t in s.tables:
            step = _step_table(t)
            if step is None:
                continue
            xi = t.header.index(step)
            steps, keys, values = [], [], []
            for row in t.rows:
                if xi >= len(row) or not _NUMBER.match(row[xi]):
                    continue
                for h, c in zip(t.header, row, strict=False):
                    if h != step and h and _NUMBER.match(c):
                        steps.append(float(row[xi]))
                        keys.append(h)
                        values.append(float(c))
            more = [f"{base}: table at line {t.line} (a pipe table) → history, x = {step}"]
            frame, more = points_frame(steps, keys, values, None, more, base)
            frames.append(frame)
            notes += more
        for block in s.logs():
            grammar = fence_grammar(block)
            frame, more = read_text_log(path, grammar, lines=block.lines)
            logs += 1
            frames.append(frame.assign(log=logs) if len(frame) else frame)
            what = "code block" if block.code else "text"
            said = f"{base} ({what} {logs}, line {block.line}, under {s.title or 'no heading'!r})"
            notes += [said + n[len(base):] if n.startswith(base) else n for n in more]
    frames = [f for f in frames if len(f)]
    if not frames:
        return rundiff_core.empty_history(), notes
    if logs > 1:
        frames = _apart_logs(frames, notes)
    out = pd.concat(frames, ignore_index=True)
    return out.drop(columns=["log"], errors="ignore"), notes


def _apart_logs(frames: list[Any], notes: list[str]) -> list[Any]:
    """Logs of several code blocks (a job's attempts appended to one file) that hold the same
    keys: each block's keys named by it (`log2/loss`), never joined into one series."""
    holders: dict[str, set[int]] = {}
    for f in frames:
        for k in f["key"].unique():
            holders.setdefault(k, set()).update(f["log"].unique() if "log" in f else [0])
    shared = {k for k, logs in holders.items() if len(logs) > 1}
    if not shared:
        return frames
    out = []
    for f in frames:
        if "log" in f:
            f = f.copy()
            f["key"] = [f"log{n}/{k}" if k in shared else k for k, n in zip(f["key"], f["log"],
                                                                             strict=False)]
        out.append(f)
    notes.append(f"{len(shared)} key(s) in several code blocks: kept apart, each named by its "
                 "block (`log<N>/<key>`)")
    return out


class MarkdownRun(rundiff_core.PlainRecord):
    """One run of a Markdown file: the parsed `doc` and its `section` (None: the whole file)."""

    __match_args__ = ("doc", "section")

    def __init__(self, doc: Markdown, section: str | None) -> None:
        self.doc = doc
        self.section = section
