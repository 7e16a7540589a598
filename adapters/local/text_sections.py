"""A text report of alike sections: one run per section, each introduced by a title line.

A script that trains one model per subject, fold or seed often prints a title before each and
its results after it (`Training on subject 3` / `Subject: 3   seed 1   valid_acc: 0.8966`;
`FOLD 2` and one `Accuracy: 0.727` per line). Read as one log, those lines are a stepless series
of 9 points; a person sees 9 runs. The rule, from the content only: two or more titles that are
the same words around a different whole number (not a step's: `Epoch 3` opens a point), each
followed by records of the same keys, none twice. Each section is a run, `FILE#<key> <n>` when one
of its fields holds the title's number (`Subject 3`), else `FILE#<title>`; that field and the
other set values are its config, measured values (a metric's name, many digits, a unit) its
summary.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import rundiff_core

from .documents import measured
from .textgrammar import STEP_KEYS, Record, clean_line, parse_line, unit_suffix

_NUMBER_IN_TITLE = re.compile(r"\d+")
#: A title: words and a whole number (`Training on subject 3`, `Fold 2 of 5:`)
_TITLE = re.compile(r"^[A-Za-z][A-Za-z-]*(?: [A-Za-z][A-Za-z-]*)*(?: \d+(?: of \d+)?)"
                    r"(?: [A-Za-z][A-Za-z-]*)*\s*[.:!]*$")
#: Words of a title that count steps, not runs (`Epoch 3`, `Round 2`): a section of each is a point
_STEP_WORDS = set(STEP_KEYS) | {"round", "episode", "generation", "batch", "stage", "phase",
                                "cycle", "iteration", "epochs"}
MAX_LINES = 20_000  # a report, not a training log: a file of more lines is not looked at


class TextSection(rundiff_core.PlainRecord):
    """One section of a text report: its `name`, its `config` and its `summary`."""

    __match_args__ = ("name", "config", "summary")

    def __init__(self, name: str, config: dict[str, Any], summary: dict[str, float]) -> None:
        self.name = name
        self.config = config
        self.summary = summary


def text_sections(path: str) -> list[TextSection] | None:
    """The alike sections of a text report at `path` (module docstring), or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(4 << 20).splitlines()
    except OSError:
        return None
    if len(lines) > MAX_LINES:
        return None
    sections: list[tuple[str, list[Record]]] = []
    records = 0
    current: list[Record] | None = None  # the records of the section open now
    for line in lines:
        if not line.strip():
            continue
        text = clean_line(line).strip()  # its logger's time stamp aside
        if _TITLE.match(text) and not _STEP_WORDS & set(text.lower().replace(":", " ").split()):
            current = []
            sections.append((text, current))
            continue
        rec = parse_line(line)
        if rec is None:
            current = None  # other text ends a section (a table's heading, a message)
        else:
            records += 1
            if current is not None:
                current.append(rec)
    shapes = Counter(_NUMBER_IN_TITLE.sub("#", t) for t, recs in sections if recs)
    if not shapes:
        return None
    shape, count = shapes.most_common(1)[0]
    chosen = [(t, _merged(recs)) for t, recs in sections
              if recs and _NUMBER_IN_TITLE.sub("#", t) == shape]
    numbers = {tuple(_NUMBER_IN_TITLE.findall(t)) for t, _ in chosen}
    if (count < 2 or "#" not in shape or len(numbers) < count
            or any(rec is None for _, rec in chosen)
            or len({tuple(k for k, _ in rec.pairs) for _, rec in chosen}) != 1
            or sum(len(recs) for t, recs in sections
                   if _NUMBER_IN_TITLE.sub("#", t) == shape) < 0.5 * records):
        return None
    return [_section(title, rec) for title, rec in chosen]


def _merged(records: list[Record]) -> Record | None:
    """A section's records as one (`FOLD 2` then one `Accuracy: 0.72` per line), or None when a
    key repeats in it: then the section is a history, not one run's results."""
    if len(records) == 1:
        return records[0]
    out = Record([], {}, set(), set())
    for rec in records:
        out.pairs.extend(rec.pairs)
        out.totals.update(rec.totals)
        out.units |= rec.units
        out.forms |= rec.forms
    keys = [k for k, _ in out.pairs]
    return out if len(set(keys)) == len(keys) else None


def _section(title: str, rec: Record) -> TextSection:
    numbers = {float(n) for n in _NUMBER_IN_TITLE.findall(title)}
    ident = next((k for k, v in rec.pairs if v in numbers), None)
    config: dict[str, Any] = {}
    summary: dict[str, float] = {}
    with_unit = tuple(f"_{unit_suffix(u)}" for u in rec.units)  # `time: 1.5 m` → `time_m`
    for key, value in rec.pairs:
        if key == ident or not (measured(key, value) or with_unit and key.endswith(with_unit)):
            config[key.lower() if key == ident else key] = int(value) if value.is_integer() \
                else value
        else:
            summary[key] = value
    name = f"{ident} {int(config[ident.lower()]) if ident else ''}" if ident else title
    return TextSection(name, config, summary)

