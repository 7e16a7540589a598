"""What one line of a text log holds: its fields (`key:value`, `key=value`, `key: value`, `key
value`), the cleaning before them (logger prefixes, counters in brackets, remarks, spreads, phrase-
valued records), and the Grammar a sniff finds — the vocabulary every text-log reader shares
(adapters/local/textlog.py reads files with it)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .textblocks import conll_fields
from .textphrases import kind_word, phrase_field
from .texttokens import RATE_UNIT, rewrite_tokens

STEP_KEYS = ("step", "global_step", "iteration", "iter", "it", "s", "epoch", "steps", "update",
             "n_iter", "batch", "timestep", "timesteps", "total_timesteps")

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?=(?:ms|us|ns|s|%)?[,;]?$|\s|/)"
_VALUE = re.compile(rf"^(?P<num>{NUMBER})(?:/(?P<total>\d+)(?:=(?P<ratio>{NUMBER}))?)?"
                    r"(?P<unit>[A-Za-zµ%]+(?:/[A-Za-z]+)?)?[,;]?$", re.I)
KEY = re.compile(r"^[A-Za-z_][\w./\-%]*$")
_SPLIT = re.compile(r"\s*\|\s*|\s*;\s+|\t+|,\s+")
TRIPLE = re.compile(rf"^\s*(?P<step>\d+)\s+(?P<key>[A-Za-z_][\w./\-]*)\s+(?P<val>{NUMBER})\s*$",
                     re.I)
_JOINED = re.compile(r"^(?P<key>[A-Za-z_][\w./\-%]*?)(?P<sep>[:=])(?P<val>\S+)$")
_PUNCT = re.compile(r"^[\W_]+$")


def unit_suffix(unit: str) -> str:
    return unit.lower().replace("%", "pct").replace("/", "_per_")


def parse_value(text: str) -> tuple[float, str, int | None] | None:
    """(value, unit, total) of a value token, or None when it is not a number."""
    m = _VALUE.match(text)
    if m is None:
        return None
    if m.group("ratio") is not None:
        return float(m.group("ratio")), "", None
    total = int(m.group("total")) if m.group("total") else None
    unit = m.group("unit") or ""
    return float(m.group("num")), unit, total


@dataclass
class Record:
    pairs: list[tuple[str, float]]
    totals: dict[str, int] = field(default_factory=dict)
    units: set[str] = field(default_factory=set)
    forms: set[str] = field(default_factory=set)


# What loggers put before a message: ANSI colours, a timestamp (`2018-03-12 18:42:12,654`,
# `[2024-01-02T03:04:05]`, `12/06/2022 14:01:36`: the transformers example scripts' datefmt
# `%m/%d/%Y %H:%M:%S`), a level (`INFO`, `[INFO]`, `INFO:root:`), the logger's name after the
# level (`INFO - training.trainer_base - `: their format `%(asctime)s - %(levelname)s - %(name)s
# - %(message)s`), a leading `- ` bullet. Also: a compact date (`[20221127 22:30:55][INFO] `:
# `%Y%m%d %H:%M:%S`), the logger's name BEFORE the level as the logging docs' own example format
# writes it (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`; a name may be a file's path,
# `log\train.log - INFO - `), and loguru's default format (`{time} | {level: <8} | {name}:
# {function}:{line} - {message}`: `| INFO     | __main__:<module>:9 - `).
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # a terminal colour
_LEVEL = r"(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL|SUCCESS|TRACE)"
_LOG_PREFIX = re.compile(
    r"^\s*(?:\[?(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}/\d{2}/\d{4} |\d{8} )?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s*"
    r"[:|,-]?\s*)?"
    rf"(?:(?:[A-Za-z_][\w.\\/]*(?:\s+-)?\s+(?={_LEVEL}\b))?"  # `SSD.trainer `, `log\\train.log - `
    rf"\[?{_LEVEL}\]?(?::[\w.]+(?=:))?"  # `INFO:root:` (never `INFO:acc 94.4`: a message)
    r"(?:\s+-\s+[A-Za-z_][\w.]*(?=\s+-\s))?\s*[:|-]?\s*"  # `INFO - __main__ - `
    r"(?:[\w.]+:[\w.<>]+:\d+\s+-\s+)?"  # after a level, loguru's `__main__:<module>:9 - `
    r"(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+)?)?"  # the message's own stamp
    r"(?:(?:[A-Za-z_][\w.]*:\s+)?-\s+)?")  # `DeepAR.Eval: - ` (a logger's name, then a bullet)
# The time stamp a logger opens each line with (`2025-04-05 00:03:13,854`, `[12:03:04]`,
# `12/06/2022 14:01:36`, `[20221127 22:30:55]`)
STAMP = re.compile(r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}/\d{2}(?:/\d{4})? |\d{8} )?\d{2}:\d{2}:\d{2}")
# A label before a record's fields: `Train metrics: accuracy: 0.37 ; loss: 1.0`
_LABEL = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9_ ]{0,39}?)\s*:\s+"
                    r"(?=[A-Za-z_][\w./\-%]*\s*[:=]\s*[-+]?(?:\d|\.\d|nan|inf))", re.I)
# A parenthesised remark after a value: `Batch: 78 (1024 samples)`
_REMARK = re.compile(r"(?<=\d)\s+\([^()]{1,40}\)")


# A value with its spread: `Average reward: 0.50 +/- 0.03` → the value, and `<key>_std`
_SPREAD = re.compile(r"(?P<key>[A-Za-z_][\w./\-]*(?: [A-Za-z_][\w./\-]*){0,3}):\s*"
                     r"(?P<v>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:\+/-|±|\+-)\s*"
                     r"(?P<s>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


# A bracketed counter opening a record: `[01/20] Train Loss: 1.59, …`, `[Epoch 3/30] loss: …`;
# a counter of a step's name needs no total (`[Epoch 5] validation: top1=…`: MXNet / GluonCV)
_BRACKET_STEP = re.compile(r"^\s*\[(?:(?P<name>[A-Za-z]+)\s*)?(?P<i>\d+)\s*(?:/\s*(?P<n>\d+))?\]\s*")
# A named counter with its count in brackets: `Epoch [3/30], Train Loss: …` (the PyTorch tutorials'
# `'Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}'`), read as the field `Epoch: 3/30`; a step's name
# with an index alone (`Epoch[5] Batch [349]`: MXNet's Speedometer) as `epoch: 5 batch: 349`
_NAMED_COUNTER = re.compile(r"(?:^|(?<=[\s,|]))(?P<name>[A-Za-z][A-Za-z_]*)\s*\[(?P<i>\d+)\s*"
                            r"(?:/\s*(?P<n>\d+))?\]")
# A duration of days before a clock (`eta: 1 day, 5:23:56`: maskrcnn-benchmark's MetricLogger,
# `str(datetime.timedelta)`), read as the clock it is (`29:23:56`)
_DAYS = re.compile(r"\b(?P<d>\d+) days?, (?P<h>\d{1,2}):(?P<ms>\d{2}:\d{2})")
# A duration written in units, hours to seconds (`training time: 0h 17m 24s`, `1h 02m 03s`), read
# as the clock it is (`0:17:24`): text beside the numbers, never three fields
_HMS = re.compile(r"(?<![\w.])(?P<h>\d+)h\s+(?P<m>\d{1,2})m\s+(?P<s>\d{1,2})(?:\.\d+)?s\b")


def clean_line(line: str) -> str:
    """A log line without its colours, logger prefix and parenthesised remarks after values, its
    value tokens in the `key: value` form (texttokens: `NER loss:31.0`, `epoch1/10:`); a
    value written with its spread (`0.50 +/- 0.03`) gives the value and a `<key>_std` field; a
    bracketed counter before the fields (`[01/20] …`, `[Epoch 3/30] …`) is their step, and a named
    one (`Epoch [3/30], …`) the field `Epoch: 3/30`; a duration in units (`0h 17m 24s`) a clock."""
    if "\x1b" in line:
        line = ANSI.sub("", line)
    line = rewrite_tokens(_LOG_PREFIX.sub("", line, count=1))
    if line.lstrip().startswith("["):
        line = _BRACKET_STEP.sub(_bracket_step, line, count=1)
    if "[" in line:
        line = _NAMED_COUNTER.sub(_named_counter, line)
    if "h " in line:
        line = _HMS.sub(lambda m: f"{m['h']}:{int(m['m']):02d}:{int(m['s']):02d}", line)
    if " day" in line:
        line = _DAYS.sub(lambda m: f"{int(m['d']) * 24 + int(m['h'])}:{m['ms']}", line)
    if "+/-" in line or "±" in line or "+-" in line:
        line = _SPREAD.sub(lambda m: f"{m['key']}: {m['v']}, {m['key']} std: {m['s']}", line)
    return _REMARK.sub("", line) if "(" in line else line


def is_step_name(name: str) -> bool:
    return name.lower() in STEP_KEYS


def _bracket_step(m: re.Match[str]) -> str:
    """`[Epoch 3/30] ` → `epoch: 3/30 | `; `[Epoch 5] ` → `epoch: 5 | ` (a step's name only: a
    bare `[5]` or `[Layer 3]` is no counter)."""
    name = (m["name"] or "step").lower()
    if m["n"] is None:
        return f"{name}: {m['i']} | " if m["name"] and is_step_name(name) else m.group(0)
    return f"{name}: {m['i']}/{m['n']} | "


def _named_counter(m: re.Match[str]) -> str:
    if m["n"] is not None:
        return f"{m['name']}: {m['i']}/{m['n']}"
    # an index alone is a counter only under a step's name (`loss[0]` indexes a loss)
    return f"{m['name'].lower()}: {m['i']}" if is_step_name(m["name"]) else m.group(0)


def parse_line(line: str) -> Record | None:
    """The fields of one line, or None when the line is not wholly key/value fields; a label
    before them (`Train metrics: loss: 0.5 ; acc: 0.9`) prefixes each key (`Train_metrics/loss`).
    Remembered for the last lines seen: a log is sniffed, then read, line by line (a Record is
    never changed once parsed)."""
    return _parse_remembered(line.rstrip("\r\n"))


@lru_cache(maxsize=1 << 15)
def _parse_remembered(line: str) -> Record | None:
    line = conll_fields(phrase_field(clean_line(line)))
    kind = kind_word(line, STEP_KEYS)
    if kind is not None and (rec := _parse_fields(kind[1])) is not None:
        rec.pairs[:] = [(k if is_step_name(k) else f"{kind[0]}/{k}", v) for k, v in rec.pairs]
        rec.totals = {k if is_step_name(k) else f"{kind[0]}/{k}": n for k, n in rec.totals.items()}
        rec.forms.add("KIND key: value")
        return rec
    label = _LABEL.match(line)
    if label is not None and not _COUNTED.search(label.group("label")):
        rec = _parse_fields(line[label.end():])
        if rec is not None:
            prefix = "_".join(label.group("label").split())
            rec.pairs[:] = [(f"{prefix}/{k}", v) for k, v in rec.pairs]
            rec.totals = {f"{prefix}/{k}": n for k, n in rec.totals.items()}
            rec.forms.add("label: key: value")
        return rec
    return _parse_fields(line)


# Several quantities in one field, names and values paired by `/`:
# `Time elapsed/remaining/total: 4.79/1121.73/1126.52 min` → Time_elapsed_min, … (a unit word
# after the values is the unit of each; one glued to the last value, `0.41/95.2%`, its own)
_PAIRED = re.compile(r"^(?P<head>(?:[A-Za-z_][\w.\-]*\s+){0,3})(?P<names>[A-Za-z_]\w*(?:/[A-Za-z_]\w*)+)"
                     r"\s*[:=]\s*(?P<vals>[-+]?[\d.]+(?:[eE][-+]?\d+)?(?:/[-+]?[\d.]+(?:[eE][-+]?\d+)?)+)"
                     r"(?P<glued>%|ms|s)?(?:\s+(?P<unit>ms|s|sec|min|h|hrs?))?$")


def _paired(rec: Record, segment: str) -> bool:
    """Add a field of `/`-paired names and values (as many names as values, at least two) to
    `rec`: several quantities printed as one (`elapsed/remaining/total: 4.8/1121.7/1126.5 min`).
    Tried only on a segment the usual fields do not read (`train/loss: 3/10` stays the key
    `train/loss`, 3 of 10). False when `segment` is not one."""
    m = _PAIRED.match(segment.strip())
    if m is None:
        return False
    names, vals = m.group("names").split("/"), m.group("vals").split("/")
    if len(names) != len(vals):
        return False
    if m.group("glued") and m.group("unit"):
        return False  # `1/2% min`: no unit of either kind is sure
    head = "_".join(m.group("head").split())
    for i, (name, val) in enumerate(zip(names, vals, strict=True)):
        v = parse_value(val)
        if v is None:
            return False
        unit = m.group("unit") or (m.group("glued") if i == len(names) - 1 else "") or ""
        _add(rec, f"{head}_{name}" if head else name, (v[0], unit, None), "a/b: x/y")
    return True


def _parse_fields(line: str) -> Record | None:
    pairs: list[tuple[str, float]] = []
    rec = Record(pairs)
    segments = _SPLIT.split(line.strip())
    if len(segments) > 1 and all(parse_value(tok) is not None and not parse_value(tok)[1]
                                 for tok in segments[0].split()):
        segments = segments[1:]  # `001  00042 |Loss: 2.7 | …`: unnamed counters before the fields
        rec.forms.add("unnamed counters")
    for segment in segments:
        if _STAMP_SEGMENT.match(segment):
            rec.forms.add("time stamp")  # `…, 2019-05-27 22:52:44`: when, beside the numbers
            continue
        mark = (len(pairs), set(rec.forms), set(rec.units), dict(rec.totals))
        if not _segment_fields(rec, segment):
            del pairs[mark[0]:]  # a segment that is no run of fields may still be labelled or
            rec.forms, rec.units, rec.totals = mark[1], mark[2], mark[3]  # paired ones
            if not _labelled(rec, segment) and ("/" not in segment or not _paired(rec, segment)):
                return None
    return rec if pairs else None


#: A label ending in a number counts something (`Epoch 131: average_loss = …`): no label
_COUNTED = re.compile(r"\s\d+$")
#: A segment that is a date, or a date and a clock (`2019-05-27 22:52:44`)
_STAMP_SEGMENT = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)?$")


def _labelled(rec: Record, segment: str) -> bool:
    """A labelled segment after the first (`epoch: 5 | validation: top1=0.48 top5=0.74`): its
    fields, named under the label (`validation/top1`). Tried only where the segment reads as no
    fields (the start of a line is `_parse_remembered`'s, and labels the whole line)."""
    label = _LABEL.match(segment)
    if label is None or _COUNTED.search(label.group("label")):
        return False
    part = Record([])
    if not _segment_fields(part, segment[label.end():]) or not part.pairs:
        return False
    prefix = "_".join(label.group("label").split())
    rec.pairs.extend((f"{prefix}/{k}", v) for k, v in part.pairs)
    rec.totals.update({f"{prefix}/{k}": n for k, n in part.totals.items()})
    rec.units |= part.units
    rec.forms |= part.forms | {"label: key: value"}
    return True


def _segment_fields(rec: Record, segment: str) -> bool:
    """Add one segment's `key: value` / `key=value` / `key value` fields to `rec`; False when a
    word of it belongs to no field. A clock reading (`eta: 1:39:02`) is text beside the numbers;
    a time unit after a value (`time: 1.5 m   valid_acc: 0.84`) is that value's unit."""
    words: list[str] = []
    after_value = False  # a value of this segment came before the words being gathered
    for tok in segment.split():
        if _CLOCK.match(tok) and (words and words[-1].endswith(":") or _JOINED.match(tok)):
            words = []
            continue
        joined = _JOINED.match(tok)
        if joined and (v := parse_value(joined.group("val"))) is not None:
            if words and not all(_PUNCT.match(w) for w in words):
                return False  # `key value key:value`: words left over
            words = []
            _add(rec, joined.group("key"), v, "key:value" if joined.group("sep") == ":" else
                 "key=value")
            after_value = True
            continue
        bare = tok.rstrip(":=")
        v = parse_value(bare) if words else None
        if v is not None:
            key_words = [w for w in words if not _PUNCT.match(w)]
            if len(key_words) > 1 and _is_unit(key_words[0]) and rec.pairs and after_value:
                _unit_after(rec, key_words.pop(0))
            if not key_words:
                return False
            last = key_words[-1]
            form = "key: value" if last.endswith(":") else "key=value" if last.endswith("=") \
                else "key value"
            key = "_".join(w.rstrip(":=") for w in key_words)
            if not all(KEY.match(w.rstrip(":=")) for w in key_words):
                return False
            _add(rec, key, v, form)
            words = []
            after_value = True
            continue
        words.append(tok)
    if len(words) == 1 and after_value and _RATE_UNIT.match(words[0]):
        _unit_after(rec, words[0])  # `Speed: 4050.26 samples/sec` ending the segment
        return True
    return all(_PUNCT.match(w) for w in words)


#: A clock reading or duration as a field's value (`eta: 1:39:02`, `eta:0:05:11.2`): text
_CLOCK = re.compile(r"^(?:[A-Za-z_][\w.\-]*:)?\d+:\d{2}:\d{2}(?:\.\d+)?[,;]?$")
#: A unit word printed after a value (`time: 1.5 m`), not the first word of the next key
_TIME_UNITS = {"m", "min", "mins", "s", "sec", "secs", "ms", "h", "hrs"}
#: A rate printed after a value (`Speed: 4050.26 samples/sec`, `17.6 data/s`, `tok/s`)
_RATE_UNIT = re.compile(rf"^{RATE_UNIT}$")


def _is_unit(word: str) -> bool:
    return word in _TIME_UNITS or bool(_RATE_UNIT.match(word))


def _unit_after(rec: Record, unit: str) -> None:
    key, value = rec.pairs[-1]
    if key in rec.totals or any(key.endswith(f"_{unit_suffix(u)}") for u in rec.units):
        return
    rec.pairs[-1] = (f"{key}_{unit_suffix(unit)}", value)
    rec.units.add(unit)


def _add(rec: Record, key: str, v: tuple[float, str, int | None], form: str) -> None:
    value, unit, total = v
    if unit:
        key = f"{key}_{unit_suffix(unit)}"
        rec.units.add(unit)
    if total is not None:
        rec.totals[key] = total
    rec.pairs.append((key, value))
    rec.forms.add(form)


@dataclass
class Grammar:
    """What the sniff found: the step field and the field forms (or the framework whose lines
    these are), said in the run's notes."""

    step: str | None
    long_form: bool = False
    forms: tuple[str, ...] = ()
    framework: str | None = None  # a key of FRAMEWORKS
    #: (record lines, content lines) in the sniffed sample (all of a file up to WHOLE_BYTES):
    #: how large a part of the file the grammar's records are; set by every sniff
    share: tuple[int, int] = (0, 0)

    def describe(self) -> str:
        if self.framework in FRAMEWORKS:
            return FRAMEWORKS[self.framework]
        if self.long_form:
            return "text log, `<step> <name> <value>` per line"
        text = f"text log, {' / '.join(f'`{f}`' for f in self.forms)} fields; step = {self.step}"
        if self.framework == "torchtune-disk":
            text = "torchtune DiskLogger " + text
        if self.framework == "counted":
            text = (f"text log, {' / '.join(f'`{f}`' for f in self.forms)} fields, no step: "
                    "x = each record's count among records of its keys")
        return text


FRAMEWORKS = {
    "torchtune-tqdm": "torchtune progress log (tqdm `<epoch>|<step>|Loss: <value>`); step = the "
                      "global step",
    "hf-dict": "HF Trainer / axolotl stdout (Python dict records `{'loss': …, 'epoch': …}`); "
               "x = epoch, else the count of train records",
    "fairseq": "fairseq log (`epoch N: i / n k=v, …`, `epoch N | k v | …`, "
               "`valid on '<subset>' subset`); step = num_updates",
    "tqdm-postfix": "tqdm progress bar's postfix (`… | n/total [elapsed<left, rate, k=v, …]`); "
                    "x = the count of postfix updates",
}


PROGRESS = re.compile(r"\d+%\|.*\|\s*\d+/\d+|\d+/\d+ \[\d+:\d+<|[\d.]+\s*(?:it/s|s/it)\]")


def content_lines(lines: list[str]) -> int:
    """How many of `lines` are the log's content: progress-bar refreshes are not counted (a
    record's share of a console log is its share of what was written, not of the redraws)."""
    return sum(1 for ln in lines if not PROGRESS.search(ln)) or len(lines)


