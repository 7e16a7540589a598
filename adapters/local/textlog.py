"""Plain-text training logs: lines of `key:value`, `key=value` or `key value` fields with a step.

The grammar, sniffed from the whole file up to 256 KiB, else from its head, tail and six windows
between (a log may open with a banner, the whole training script or a launcher's output):

- a line is split into fields at `|`, `;`, tabs and `, ` (a comma then a space; `253,886,464`
  stays one token);
- a field is `key:value`, `key=value`, `key: value` or `key value`; a key is one or more words
  (`validation loss` → `validation_loss`), a value is a number (`nan`/`inf` included) with an
  optional unit glued to it (`45.2ms` → key `time_ms`, value 45.2), an optional `/total`
  (`step:100/1750` → 100) or `count/total=ratio` (`3369/10042=0.3355` → 0.3355);
- a line is a record when every word on it belongs to a field; anything else (prose, generated
  text, tracebacks) is counted as skipped, never fatal;
- the step is the step-like key most records carry (`step`, `s`, `iter`, `epoch`, …); a record
  without one takes the step of the next record that has one (evaluations are logged just before
  the step they belong to) — kept only when its key set repeats, so a one-off banner line such as
  `total desired batch size: 524288` is not a metric;
- or, the long form `<step> <name> <value>` per line (build-nanogpt's `log.txt`).

Some frameworks' lines are recognised by name first (`FRAMEWORKS`; a line is also split at `\\r`,
so tqdm's rewritten progress lines are records too):

- torchtune: the recipes' tqdm description `<epoch>|<global step>|Loss: <value>` (step = the
  global step; a step printed several times keeps its last value) and DiskLogger's
  `log_<unix>.txt` lines `Step N | loss:… lr:… tokens_per_second_per_gpu:…` (the grammar above);
- HF Trainer / axolotl stdout: Python dict reprs `{'loss': 1.23, 'grad_norm': 0.5,
  'learning_rate': 2e-05, 'epoch': 0.01}` (and `{'eval_loss': …}`), read with `ast.literal_eval`
  only, and only those with `epoch` where any has it (`Trainer.log` adds it to every
  record; other dicts are a launcher's config prints); x = `epoch` when it rises from train record
  to train record, else the count of train records (an eval record takes the count of the train
  record before it);
- fairseq: `epoch 001:    100 / 1000 loss=9.1, nll_loss=…, num_updates=100` (train_inner: plain
  keys), `epoch 001 | loss 9.1 | … | num_updates 1000` (the epoch's averages: `train/<key>`) and
  `epoch 001 | valid on 'valid' subset | loss … | num_updates 1000` (`valid/<key>`, by subset);
  x = `num_updates` (a row without it takes the last one seen).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import rundiff_core  # names resolved at use: the data model (numpy) loads only when a log is read

from .lazy import pd  # imported on first use: sniffing needs neither
from .sniff import looks_binary, points_frame
from .textblocks import conll_fields, eval_heading
from .textkinds import finer_kind_keys
from .textphrases import kind_word, phrase_field
from .textsessions import Sessions
from .texttokens import rewrite_tokens

STEP_KEYS = ("step", "global_step", "iteration", "iter", "it", "s", "epoch", "steps", "update",
             "n_iter", "batch", "timestep", "timesteps", "total_timesteps")
HEAD_BYTES = 16 << 10
TAIL_BYTES = 16 << 10

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?=(?:ms|us|ns|s|%)?[,;]?$|\s|/)"
_VALUE = re.compile(rf"^(?P<num>{_NUMBER})(?:/(?P<total>\d+)(?:=(?P<ratio>{_NUMBER}))?)?"
                    r"(?P<unit>[A-Za-zµ%]+(?:/[A-Za-z]+)?)?[,;]?$", re.I)
_KEY = re.compile(r"^[A-Za-z_][\w./\-%]*$")
_SPLIT = re.compile(r"\s*\|\s*|\s*;\s+|\t+|,\s+")
_TRIPLE = re.compile(rf"^\s*(?P<step>\d+)\s+(?P<key>[A-Za-z_][\w./\-]*)\s+(?P<val>{_NUMBER})\s*$",
                     re.I)
_JOINED = re.compile(r"^(?P<key>[A-Za-z_][\w./\-%]*?)(?P<sep>[:=])(?P<val>\S+)$")
_PUNCT = re.compile(r"^[\W_]+$")


def _unit_suffix(unit: str) -> str:
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
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LEVEL = r"(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL|SUCCESS|TRACE)"
_LOG_PREFIX = re.compile(
    r"^\s*(?:\[?(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}/\d{2}/\d{4} |\d{8} )?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s*"
    r"[:|,-]?\s*)?"
    rf"(?:(?:[A-Za-z_][\w.\\/]*(?:\s+-)?\s+(?={_LEVEL}\b))?"  # `SSD.trainer `, `log\\train.log - `
    rf"\[?{_LEVEL}\]?(?::[\w.]+)?"
    r"(?:\s+-\s+[A-Za-z_][\w.]*(?=\s+-\s))?\s*[:|-]?\s*"  # `INFO - __main__ - `
    r"(?:[\w.]+:[\w.<>]+:\d+\s+-\s+)?)?"  # after a level, loguru's `__main__:<module>:9 - `
    r"(?:(?:[A-Za-z_][\w.]*:\s+)?-\s+)?")  # `DeepAR.Eval: - ` (a logger's name, then a bullet)
# The time stamp a logger opens each line with (`2025-04-05 00:03:13,854`, `[12:03:04]`,
# `12/06/2022 14:01:36`, `[20221127 22:30:55]`)
_STAMP = re.compile(r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}/\d{2}(?:/\d{4})? |\d{8} )?\d{2}:\d{2}:\d{2}")
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


def clean_line(line: str) -> str:
    """A log line without its colours, logger prefix and parenthesised remarks after values, its
    value tokens in the `key: value` form (texttokens: `NER loss:31.0`, `epoch1/10:`); a
    value written with its spread (`0.50 +/- 0.03`) gives the value and a `<key>_std` field; a
    bracketed counter before the fields (`[01/20] …`, `[Epoch 3/30] …`) is their step, and a named
    one (`Epoch [3/30], …`) the field `Epoch: 3/30`."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    line = rewrite_tokens(_LOG_PREFIX.sub("", line, count=1))
    if line.lstrip().startswith("["):
        line = _BRACKET_STEP.sub(_bracket_step, line, count=1)
    if "[" in line:
        line = _NAMED_COUNTER.sub(_named_counter, line)
    if " day" in line:
        line = _DAYS.sub(lambda m: f"{int(m['d']) * 24 + int(m['h'])}:{m['ms']}", line)
    if "+/-" in line or "±" in line or "+-" in line:
        line = _SPREAD.sub(lambda m: f"{m['key']}: {m['v']}, {m['key']} std: {m['s']}", line)
    return _REMARK.sub("", line) if "(" in line else line


def _is_step_name(name: str) -> bool:
    return name.lower() in STEP_KEYS


def _bracket_step(m: re.Match[str]) -> str:
    """`[Epoch 3/30] ` → `epoch: 3/30 | `; `[Epoch 5] ` → `epoch: 5 | ` (a step's name only: a
    bare `[5]` or `[Layer 3]` is no counter)."""
    name = (m["name"] or "step").lower()
    if m["n"] is None:
        return f"{name}: {m['i']} | " if m["name"] and _is_step_name(name) else m.group(0)
    return f"{name}: {m['i']}/{m['n']} | "


def _named_counter(m: re.Match[str]) -> str:
    if m["n"] is not None:
        return f"{m['name']}: {m['i']}/{m['n']}"
    # an index alone is a counter only under a step's name (`loss[0]` indexes a loss)
    return f"{m['name'].lower()}: {m['i']}" if _is_step_name(m["name"]) else m.group(0)


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
        rec.pairs[:] = [(k if _is_step_name(k) else f"{kind[0]}/{k}", v) for k, v in rec.pairs]
        rec.totals = {k if _is_step_name(k) else f"{kind[0]}/{k}": n for k, n in rec.totals.items()}
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
            if not all(_KEY.match(w.rstrip(":=")) for w in key_words):
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
_RATE_UNIT = re.compile(r"^[A-Za-z]+/(?:s|sec|second|it|iter|step|batch|epoch)$")


def _is_unit(word: str) -> bool:
    return word in _TIME_UNITS or bool(_RATE_UNIT.match(word))


def _unit_after(rec: Record, unit: str) -> None:
    key, value = rec.pairs[-1]
    if key in rec.totals or any(key.endswith(f"_{_unit_suffix(u)}") for u in rec.units):
        return
    rec.pairs[-1] = (f"{key}_{_unit_suffix(unit)}", value)
    rec.units.add(unit)


def _add(rec: Record, key: str, v: tuple[float, str, int | None], form: str) -> None:
    value, unit, total = v
    if unit:
        key = f"{key}_{_unit_suffix(unit)}"
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

# torchtune recipes: pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")
_TT_TQDM = re.compile(r"^\s*(?P<epoch>\d+)\|(?P<step>\d+)\|(?P<desc>[A-Za-z].*?)"
                      r"(?::\s+\d{1,3}%\||:?\s*$)")
# torchtune DiskLogger.log_dict: f"Step {step} | " + f"{name}:{data} " per metric
_TT_DISK = re.compile(r"^Step \d+ \| [A-Za-z_][\w/.]*:\S+")
# transformers ProgressCallback.on_log: self.training_bar.write(str(shallow_logs)) (floats as
# `round(epoch, 2)`, newer as f"{v:.4g}" text); PrinterCallback: print(logs)
_DICT = re.compile(r"\{'[A-Za-z_][\w./ -]*': ")
_WRAPPED = re.compile(r"\b(?:np\.[a-z0-9_]+|numpy\.[a-z0-9_]+|tensor|torch\.tensor)\("
                      r"([^(),]+)(?:,[^()]*)?\)")
# fairseq progress_bar: "{prefix}:  {i:5d} / {size:d} {k=v, …}" and "{prefix} | {k v | …}",
# prefix "epoch {:03d}" (+ " | valid on '<subset>' subset")
_FAIRSEQ = re.compile(r"(?:^|\|\s)epoch (?P<epoch>\d{3,})(?P<rest>:\s+\d+ / \d+ .*|\s\|\s.*)$")
_FS_INNER = re.compile(r"^:\s+(?P<i>\d+) / (?P<n>\d+) (?P<stats>.*)$")
# fairseq --log-format json: "<time> | INFO | train_inner | {…}" (values as strings), or under
# fairseq-hydra-train "[<time>][train_inner][INFO] - {…}"; an epoch's `train`/`valid` records
# prefix their keys with the tag (`valid_loss`, `valid_num_updates`)
_FS_JSON = re.compile(r"(?:\|\s*(?P<tag>[\w.-]+)\s*\|\s*|\]\[(?P<tag2>[\w.-]+)\]\[[A-Z]+\] - )"
                      r"(?P<json>\{\".*\})\s*$")
_FS_SUBSET = re.compile(r"^(?:valid|test) on '(?P<subset>[^']+)' subset$|^(?P<s2>[\w.-]+) on "
                        r"'(?P<s3>[^']+)' subset$")


WHOLE_BYTES = 256 << 10  # a file up to this size is sniffed whole
MIDDLE_WINDOWS = 6  # larger ones: head, tail and this many windows evenly spaced between


def _sample(path: str) -> list[str] | None:
    """Lines to sniff: the whole file up to WHOLE_BYTES, else its head, its tail and evenly
    spaced windows between them (a console log may print its records only after kilobytes of
    launcher output, and stop with a traceback). Bounded: at most 8 windows of 16 KiB."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size <= WHOLE_BYTES:
                parts = [fh.read(WHOLE_BYTES)]
            else:
                parts = [fh.read(HEAD_BYTES)]
                span = size - HEAD_BYTES - TAIL_BYTES
                for i in range(1, MIDDLE_WINDOWS + 1):
                    fh.seek(HEAD_BYTES + span * i // (MIDDLE_WINDOWS + 1))
                    parts.append(fh.read(HEAD_BYTES))
                fh.seek(size - TAIL_BYTES)
                parts.append(fh.read(TAIL_BYTES))
    except OSError:
        return None
    if looks_binary(parts[0]):
        return None
    lines: list[str] = []
    for i, part in enumerate(parts):
        cut = part.decode("utf-8", errors="replace").splitlines()
        if i > 0:  # a window after the head starts mid-line
            cut = cut[1:]
        if i < len(parts) - 1:
            cut = cut[:-1]  # and a window before the tail may end mid-line
        lines.extend(cut)
    return lines


def _step_key(records: list[Record]) -> str | None:
    counts: Counter[str] = Counter()
    for rec in records:
        keys = {k for k, _ in rec.pairs}
        for cand in STEP_KEYS:
            if cand in keys or cand.capitalize() in keys or cand.upper() in keys:
                counts[cand if cand in keys else next(k for k in keys if k.lower() == cand)] += 1
                break
    if not counts:
        return None
    best = max(counts.values())
    return next(k for k, n in counts.items() if n == best)


def sniff_text(path: str, lines: list[str] | None = None) -> Grammar | None:
    """The grammar of a text log from its head and tail (or of `lines`, a log held in another
    file: a Markdown code block), or None when it is not one. A file none of the record grammars
    reads may hold its numbers in a tqdm bar's postfix (textbars), tried last."""
    lines = _sample(path) if lines is None else lines
    grammar = _sniff_records(path, lines)
    if grammar is None and lines:
        from .textbars import X_NAME, sniff_bars

        bars = sniff_bars([ln for ln in lines if ln.strip()])
        if bars is not None:
            return Grammar(step=X_NAME, framework="tqdm-postfix", share=bars)
    return grammar


def _sniff_records(path: str, lines: list[str] | None) -> Grammar | None:
    lines = _sample(path) if lines is None else lines
    if not lines:
        return None
    nonblank = [ln for ln in lines if ln.strip()]
    framework = _framework(nonblank)
    if framework is not None:
        return framework
    triples = sum(1 for ln in nonblank if _TRIPLE.match(ln))
    if triples >= 2 and triples >= 0.8 * len(nonblank):
        return Grammar(step=None, long_form=True, share=(triples, _content(nonblank)))
    records = [r for ln in nonblank if (r := parse_line(ln)) is not None]
    step = _step_key(records)
    if step is None:
        counted = _counted(records)
        if counted is not None:
            counted.share = (sum(1 for r in records if r.forms - {"key value"}),
                             _content(nonblank))
        return counted
    stepped = [r for r in records if any(k == step for k, _ in r.pairs)]
    if len(stepped) < 2 or all(len(r.pairs) < 2 for r in stepped) and len(
            {tuple(k for k, _ in r.pairs) for r in records}) < 2:
        return None
    forms = sorted(set().union(*(r.forms for r in records)))
    disk = sum(1 for ln in nonblank if _TT_DISK.match(ln))
    return Grammar(step=step, forms=tuple(forms),
                   framework="torchtune-disk" if step == "Step" and disk >= 2 else None,
                   share=(len(records), _content(nonblank)))


def _counted(records: list[Record]) -> Grammar | None:
    """Records with no step at all (`Train metrics: loss: 0.5 ; acc: 0.9`, once per epoch): a
    log when a record of 2+ fields repeats, or a labelled one (`Test metrics: …`) appears — each
    repeat of a key set is the next point (x = the record's count, 1-based)."""
    # evidence without a step: fields written `key: value` / `key=value` (not loose words), and
    # values that change between repeats (a warning printed twice is no metric)
    records = [r for r in records if r.forms - {"key value"}]
    sigs = Counter(tuple(k for k, _ in r.pairs) for r in records)
    values: dict[tuple[str, ...], set[tuple[float, ...]]] = {}
    for r in records:
        values.setdefault(tuple(k for k, _ in r.pairs), set()).add(tuple(v for _, v in r.pairs))
    repeated = any(len(sig) >= 2 and n >= 2 and len(values[sig]) > 1 for sig, n in sigs.items())
    labelled = any(len(r.pairs) >= 2 and "label: key: value" in r.forms for r in records)
    if not repeated and not labelled:  # one `Test metrics: loss: 0.1 ; f1: 0.9` line is a result
        return None
    forms = sorted(set().union(*(r.forms for r in records)))
    return Grammar(step=None, forms=tuple(forms), framework="counted")


# A progress bar's refresh (tqdm: `45%|████▌     | 18/40 [00:03<00:04, 5.1it/s]`): a terminal
# redraw, not a line of the log's content
_PROGRESS = re.compile(r"\d+%\|.*\|\s*\d+/\d+|\d+/\d+ \[\d+:\d+<|[\d.]+\s*(?:it/s|s/it)\]")


def _content(lines: list[str]) -> int:
    """How many of `lines` are the log's content: progress-bar refreshes are not counted (a
    record's share of a console log is its share of what was written, not of the redraws)."""
    return sum(1 for ln in lines if not _PROGRESS.search(ln)) or len(lines)


def _framework(lines: list[str]) -> Grammar | None:
    """A framework's own lines, recognised before the generic grammar (at least 2 records)."""
    content = _content(lines)
    tqdm = [m for ln in lines if (m := _TT_TQDM.match(ln))]
    if sum(1 for m in tqdm if parse_line(m.group("desc")) is not None) >= 2:
        return Grammar(step="step", framework="torchtune-tqdm", share=(len(tqdm), content))
    rows = [row for ln in lines if (row := _fairseq_json_row(ln) or (
        (m := _FAIRSEQ.search(ln)) and _fairseq_row(m)))]
    if len(rows) >= 2 and any("num_updates" in stats for _, stats in rows):
        share = sum(1 for ln in lines if _fairseq_json_row(ln) or _FAIRSEQ.search(ln))
        return Grammar(step="num_updates", framework="fairseq", share=(share, content))
    dicts = [rec for ln in lines if (rec := _dict_record(ln)) is not None]
    if len(_trainer_records(dicts)[0]) >= 2:
        return Grammar(step="epoch", framework="hf-dict", share=(len(dicts), content))
    return None


def _trainer_records(records: list[dict[str, float]]) -> tuple[list[dict[str, float]], int]:
    """(the Trainer's records, how many others): `Trainer.log` adds `epoch` to every record it
    prints, so where any carries it, a dict without it is someone else's — a launcher's config
    print such as DeepSpeed's `{'block_size': 1048576, …}` — and no metric."""
    with_epoch = [r for r in records if "epoch" in r]
    if with_epoch:
        return with_epoch, len(records) - len(with_epoch)
    return records, 0


def _number(v: object) -> float | None:
    """A record's number; transformers >= 4.5x prints floats as text (`f"{v:.4g}"`)."""
    if isinstance(v, str):
        return _float(v.strip()) if _NUMERIC_TEXT.match(v.strip()) else None
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


_NUMERIC_TEXT = re.compile(rf"^(?:{_NUMBER})$", re.I)


def _dict_record(line: str) -> dict[str, float] | None:
    """The numbers of a Python dict repr on the line (`ast.literal_eval` only), or None."""
    m = _DICT.search(line)
    if m is None:
        return None
    end = line.rfind("}")
    if end < m.start():
        return None
    text = _WRAPPED.sub(r"\1", line[m.start():end + 1])
    try:
        data = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out = {str(k): f for k, v in data.items() if isinstance(k, str) and (f := _number(v)) is not None}
    return out or None


def _fairseq_json_row(line: str) -> tuple[str, dict[str, float]] | None:
    """(prefix, numbers) of a fairseq `--log-format json` record: "" for train_inner, `<tag>/`
    (the tag's own key prefix removed) for an epoch's train or validation record."""
    m = _FS_JSON.search(line)
    if m is None:
        return None
    tag = m.group("tag") or m.group("tag2")
    if tag in ("fairseq_cli.train", "fairseq.trainer") or "." in tag:
        return None
    try:
        data = json.loads(m.group("json"))
    except ValueError:
        return None
    if not isinstance(data, dict) or "epoch" not in data:
        return None
    strip = f"{tag}_"
    out = {}
    for k, v in data.items():
        key = k[len(strip):] if tag != "train_inner" and k.startswith(strip) else k
        if _KEY.match(key) and (f := _number(v)) is not None:
            out[key] = f
    prefix = "" if tag == "train_inner" else f"{tag}/"
    return (prefix, out) if "num_updates" in out else None


def _fairseq_row(m: re.Match[str]) -> tuple[str, dict[str, float]] | None:
    """(prefix, numbers) of a fairseq progress line: "" for train_inner rows, `train/` for the
    epoch's averages, `<subset>/` for a validation row."""
    rest = m.group("rest")
    inner = _FS_INNER.match(rest)
    out: dict[str, float] = {}
    if inner is not None:
        for field in inner.group("stats").split(", "):
            key, sep, val = field.partition("=")
            if sep and _KEY.match(key.strip()) and (v := _float(val)) is not None:
                out[key.strip()] = v
        return ("", out) if out else None
    parts = [p.strip() for p in rest.split(" | ")][1:]  # rest opens with " | "
    prefix = "train/"
    if parts and (sub := _FS_SUBSET.match(parts[0])):
        prefix = f"{sub.group('subset') or sub.group('s3')}/"
        parts = parts[1:]
    for field in parts:
        key, _, val = field.partition(" ")
        if _KEY.match(key) and (v := _float(val.strip())) is not None:
            out[key] = v
    return (prefix, out) if out else None


def _float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v


def read_text_log(path: str, grammar: Grammar | None = None, lines: list[str] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    """Every record of a text log as history (the file's, or `lines` of it: a Markdown code
    block); skipped lines counted in the notes."""
    name = os.path.basename(path)
    grammar = grammar or sniff_text(path, lines)
    if grammar is None:
        return rundiff_core.empty_history(), [f"{name}: not a text log with a step field; skipped"]
    reader = _READERS.get(grammar.framework or "")
    if reader is not None:
        frame, notes = reader(path, name, grammar, lines)
        return _with_other_family(path, name, grammar, lines, frame, notes)
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    skipped = 0
    total_lines = 0
    with _opened(path, lines) as fh:
        if grammar.long_form:
            for line in fh:
                total_lines += 1
                m = _TRIPLE.match(line)
                if m is None:
                    skipped += line.strip() != ""
                    continue
                steps.append(float(m.group("step")))
                keys.append(m.group("key"))
                values.append(float(m.group("val")))
            notes = [f"{name} read as a {grammar.describe()}; {total_lines} lines, "
                     f"{len(values)} points, {skipped} line(s) skipped"]
            return points_frame(steps, keys, values, None, notes, name)
        step_key = grammar.step
        pending: list[tuple[Record, bool, str | None]] = []
        stepless: Counter[tuple[str, ...]] = Counter()
        kept_stepless = 0
        units: set[str] = set()
        totals: dict[str, int] = {}
        last_step: float | None = None
        header: float | None = None
        headed = 0
        records: list[tuple[float, Record, int, bool]] = []  # (step, record, session, stamped)
        phases: list[str | None] = []  # per record: the phase banner above it (`== validate ==`)
        phase: str | None = None
        headed_phase = False  # the phase is an evaluation heading's (textblocks)
        sessions = Sessions()
        stamped = [0, 0]  # of the records with a step: with a time stamp, in all
        for line in fh:
            total_lines += 1
            if not line.strip():
                continue
            rec = parse_line(line)
            if rec is None:
                skipped += 1
                if (banner_words := _BANNER.match(line)) is not None:
                    phase, headed_phase = _phase(banner_words.group("words")), False
                elif (split := eval_heading(clean_line(line))) is not None:
                    phase, headed_phase = split, True  # until the next record with the step
                continue
            units |= rec.units
            totals.update(rec.totals)
            step = next((v for k, v in rec.pairs if k == step_key), None)
            stamp = bool(_STAMP.match(line))
            if step is None:
                stepless[tuple(k for k, _ in rec.pairs)] += 1
                if header is not None:  # under an `Epoch 3/30` line: epoch 3's
                    records.append((header, rec, sessions.current, stamp))
                    phases.append(phase)
                else:
                    pending.append((rec, stamp, phase))
                continue
            if headed_phase:  # an evaluation heading's section ends at a training record
                phase, headed_phase = None, False
            sessions.see(step)
            stamped[0] += stamp
            stamped[1] += 1
            for p, p_stamp, p_phase in pending:
                records.append((step, p, sessions.current, p_stamp))
                phases.append(p_phase)
            pending = []
            records.append((step, rec, sessions.current, stamp))
            phases.append(phase)
            last_step = step
            # a line holding the step alone (`Epoch 3/30`) heads the records that follow it
            header = step if len(rec.pairs) == 1 else None
            headed += header is not None
        trailing = len(pending)
        if last_step is not None:
            records.extend((last_step, p, sessions.current, p_stamp) for p, p_stamp, _ in pending)
            phases.extend(p_phase for _, _, p_phase in pending)
        # the log stamps its records, and a line without the stamp is no record of it: a block
        # the script printed (its config dump: `  BATCH_SIZE: 2` under `Running with config:`)
        unstamped_out = stamped[1] > 0 and stamped[0] >= 0.9 * stamped[1]
        banner = printed = 0
        finer, shared, kinds_said = finer_kind_keys([(s, r) for s, r, _, _ in records], step_key,
                                                    STEP_KEYS)
        shifts = sessions.shifts()
        phased = _phased_keys(records, phases, step_key)
        places = _place_counters(records, step_key)
        for i, (step, rec, session, stamp) in enumerate(records):
            if shifts:
                step += shifts[session]
            sig = tuple(k for k, _ in rec.pairs)
            if step_key not in sig and unstamped_out and not stamp:
                printed += 1
                continue
            if step_key not in sig:
                if stepless[sig] < 2:
                    banner += 1
                    continue
                kept_stepless += 1
            counter = finer.get(i)
            for k, v in rec.pairs:
                if k == step_key or k in places:
                    continue
                steps.append(step)
                keys.append(f"{counter}/{k}" if counter and k in shared else
                            f"{phases[i]}/{k}" if k in phased else k)
                values.append(v)
    notes = [f"{name} read as a {grammar.describe()}; {total_lines} lines, {len(values)} points, "
             f"{skipped} line(s) skipped (not key/value records)"]
    if units:
        notes.append(f"{name}: units stripped from values and appended to keys: "
                     + ", ".join(sorted(units)))
    if totals.get(step_key):
        notes.append(f"{name}: {step_key} is written as N/{totals[step_key]} (total steps)")
    if kept_stepless:
        notes.append(f"{name}: {kept_stepless} record(s) without a {step_key} field took the step "
                     + (f"of the `{step_key} N` line above them ({headed} such lines)" if headed
                        else "of the next record that has one")
                     + (f" ({trailing} at the end took the last step)" if trailing else ""))
    if printed:
        notes.append(f"{name}: {printed} line(s) without the time stamp its records carry (a "
                     "printed block, such as a config dump) not read as metrics")
    if banner:
        notes.append(f"{name}: {banner} one-off line(s) without a {step_key} (a banner) not read "
                     "as metrics")
    if places:
        notes.append(f"{name}: {', '.join(sorted(places))} count(s) within the {step_key} "
                     "(where a record was written, not a measurement): not read as metrics")
    if kinds_said:
        notes.append(f"{name}: {kinds_said}")
    if phased:
        notes.append(f"{name}: {_some_keys(phased)} written under different phase banners or evaluation headings "
                     f"({', '.join(sorted({ph for ph in phases if ph}))}): kept apart, named by "
                     "the banner (`<phase>/<key>`)")
    if shifts:
        notes.append(sessions.describe(name, step_key, shifts))
    return points_frame(steps, keys, values, None, notes, name)


#: A line of decoration around a few words (`=====training epoch 1=====`, `--- Validation ---`,
#: `*** test ***`): a banner naming the phase of the records printed under it
_BANNER = re.compile(r"^\s*(?P<deco>[=\-*#~]{3,})\s*(?P<words>[A-Za-z][\w ]{0,40}?)\s*(?P=deco)?\s*$")


def _phase(words: str) -> str | None:
    """A banner's phase: its words without counters (`training epoch 1` → `training`); None when
    only counters are left (`=== Epoch 3 ===` opens a step, not a phase)."""
    kept = [w for w in words.split() if not w.isdigit() and w.lower() not in STEP_KEYS]
    return "_".join(kept) if kept else None


def _phased_keys(records: list[tuple[float, Record, int, bool]], phases: list[str | None],
                 step_key: str | None) -> set[str]:
    """The keys written under two or more phase banners, every record of them under one (a
    script printing `avg_loss` after `== training ==` and after `== validate ==`): one series
    each phase, never one series alternating between them."""
    seen: dict[str, set[str | None]] = {}
    for (_, rec, _, _), ph in zip(records, phases, strict=True):
        for k, _ in rec.pairs:
            if k != step_key:
                seen.setdefault(k, set()).add(ph)
    return {k for k, phs in seen.items() if len(phs) >= 2 and None not in phs}


def _place_counters(records: list[tuple[float, Record, int, bool]], step_key: str | None
                    ) -> set[str]:
    """The counters finer than the step (`Epoch[0] Batch [20]`'s batch) or placing a record that
    has no step (`Update[3120]: Change learning rate to …`): keys named as a step, whole numbers
    in every record, always beside measured keys, and changing from record to record at least
    as often as the step does. They say where a record was written, so they are no series; a
    coarser counter (`iteration:1 step:100/1044`'s iteration) stays one."""
    seen: dict[str, bool] = {}
    last: dict[str, tuple[float, float]] = {}
    moves: dict[str, list[int]] = {}  # per counter: [its changes, the step's changes]
    for _, rec, _, _ in records:
        keys = [k for k, _ in rec.pairs if k != step_key]
        measured = any(not _is_step_name(k) for k in keys)
        step = next((v for k, v in rec.pairs if k == step_key), None)
        for k, v in rec.pairs:
            if k == step_key or not _is_step_name(k):
                continue
            seen[k] = seen.get(k, True) and measured and float(v).is_integer()
            if step is not None:
                if k in last:
                    m = moves.setdefault(k, [0, 0])
                    m[0] += v != last[k][0]
                    m[1] += step != last[k][1]
                last[k] = (v, step)
    return {k for k, ok in seen.items() if ok and (k not in moves or moves[k][0] >= moves[k][1])}


def _some_keys(keys: set[str]) -> str:
    shown = sorted(keys)
    return ", ".join(shown[:4]) + (" …" if len(shown) > 4 else "")


# -- framework readers ----------------------------------------------------------------------------
#: Whether a line is one of a framework's records (what its reader reads; textfamilies reads the rest)
_FRAMEWORK_LINE = {
    "hf-dict": lambda ln: _dict_record(ln) is not None,
    "fairseq": lambda ln: bool(_fairseq_json_row(ln) or _FAIRSEQ.search(ln)),
    "torchtune-tqdm": lambda ln: bool(_TT_TQDM.match(ln)),
}


def _with_other_family(path: str, name: str, grammar: Grammar, given: list[str] | None,
                       frame: pd.DataFrame, notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The framework's records, and the records of another grammar the file holds beside them
    (textfamilies: kept as their own series)."""
    is_framework = _FRAMEWORK_LINE.get(grammar.framework or "")
    if is_framework is None:
        return frame, notes
    from .textfamilies import other_family

    lines = [ln for ln in _lines(path, given) if not _PROGRESS.search(ln)]
    other, more = other_family(path, name, lines, is_framework,
                               {str(k) for k in frame["key"].unique()} if len(frame) else set(),
                               sniff_text, read_text_log)
    if other is None:
        return frame, notes
    return (pd.concat([frame, other], ignore_index=True) if len(frame) else other), notes + more


def _lines(path: str, given: list[str] | None = None):  # noqa: ANN202 - yields str
    """The file's lines (text mode splits at \\n, \\r\\n and \\r alike), or the `given` ones."""
    if given is not None:
        yield from given
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        yield from fh


def _opened(path: str, given: list[str] | None):  # noqa: ANN202 - a context manager of lines
    """The open file, or the `given` lines as one (`with _opened(...) as fh: for line in fh`)."""
    import contextlib

    return contextlib.nullcontext(given) if given is not None else open(  # noqa: SIM115
        path, encoding="utf-8", errors="replace")


def _read_torchtune_tqdm(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                         ) -> tuple[pd.DataFrame, list[str]]:
    by_step: dict[int, list[tuple[str, float]]] = {}
    lines = seen = skipped = 0
    renamed: set[str] = set()
    for line in _lines(path, given):
        lines += 1
        m = _TT_TQDM.match(line)
        rec = parse_line(m.group("desc")) if m else None
        if rec is None:
            skipped += line.strip() != ""
            continue
        seen += 1
        pairs = []
        for k, v in rec.pairs:
            if k != k.lower():
                renamed.add(k)
            pairs.append((k.lower(), v))
        by_step[int(m.group("step"))] = pairs  # a step printed again keeps its last value
    steps, keys, values = [], [], []
    for step, pairs in by_step.items():
        for k, v in pairs:
            steps.append(float(step))
            keys.append(k)
            values.append(v)
    notes = [f"{name} read as a {grammar.describe()}; {lines} lines (split at \\r too), {seen} "
             f"progress descriptions, {len(by_step)} distinct steps (a step printed again keeps its "
             f"last value), {skipped} other line(s) skipped"]
    if renamed:
        notes.append(f"{name}: tqdm labels lower-cased to torchtune's metric names "
                     + ", ".join(f"{k} → {k.lower()}" for k in sorted(renamed)))
    return points_frame(steps, keys, values, None, notes, name)


def _read_hf_dicts(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                   ) -> tuple[pd.DataFrame, list[str]]:
    records: list[dict[str, float]] = []
    lines = skipped = 0
    for line in _lines(path, given):
        lines += 1
        rec = _dict_record(line)
        if rec is None:
            skipped += line.strip() != ""
            continue
        records.append(rec)
    records, foreign = _trainer_records(records)
    train = [r for r in records if "loss" in r] or records
    epochs = [r.get("epoch") for r in train]
    by_epoch = all(e is not None and math.isfinite(e) for e in epochs) and all(
        b > a for a, b in zip(epochs, epochs[1:], strict=False)) and all(
        r.get("epoch") is not None for r in records)
    train_ids = {id(r) for r in train}
    steps, keys, values = [], [], []
    count = 0
    kinds: Counter[str] = Counter()
    for r in records:
        if id(r) in train_ids:
            count += 1
            kinds["train"] += 1
        else:
            kinds["eval" if any(k.startswith("eval_") for k in r) else "other"] += 1
        x = r["epoch"] if by_epoch else float(count)
        for k, v in r.items():
            if by_epoch and k == "epoch":
                continue
            steps.append(x)
            keys.append(k)
            values.append(v)
    said = ", ".join(f"{n} {k}" for k, n in kinds.items())
    x_said = ("x = epoch (as printed: rounded by transformers)" if by_epoch else
              "x = the count of train records (epoch does not rise from record to record); "
              "an eval record takes the count of the train record before it")
    notes = [f"{name} read as {grammar.describe().split(';')[0]}; {lines} lines (split at \\r "
             f"too), {len(records)} records ({said}) read with ast.literal_eval; {x_said}; "
             + (f"{foreign} dict line(s) without `epoch` skipped (not Trainer records); "
                if foreign else "") + f"{skipped} other line(s) skipped"]
    return points_frame(steps, keys, values, None, notes, name)


def _read_fairseq(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    steps, keys, values = [], [], []
    lines = skipped = stepless = 0
    kinds: Counter[str] = Counter()
    last: float | None = None
    pending: list[tuple[str, dict[str, float]]] = []
    for line in _lines(path, given):
        lines += 1
        text = line.rstrip("\n")
        row = _fairseq_json_row(text)
        if row is None:
            m = _FAIRSEQ.search(text)
            row = _fairseq_row(m) if m else None
        if row is None:
            skipped += line.strip() != ""
            continue
        prefix, stats = row
        kinds[prefix.rstrip("/") or "train_inner"] += 1
        step = stats.pop("num_updates", None)
        if step is None:
            if last is None:
                pending.append(row)
                continue
            step = last
            stepless += 1
        for p_prefix, p_stats in pending:  # rows before the first num_updates take it
            for k, v in p_stats.items():
                steps.append(step)
                keys.append(p_prefix + k)
                values.append(v)
            stepless += 1
        pending = []
        last = step
        for k, v in stats.items():
            steps.append(step)
            keys.append(prefix + k)
            values.append(v)
    said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    notes = [f"{name} read as a {grammar.describe()}; {lines} lines, rows: {said} (train_inner "
             "rows as plain keys, the epoch's train averages as train/<key>, validation as "
             f"<subset>/<key>); {skipped} other line(s) skipped"]
    if stepless:
        notes.append(f"{name}: {stepless} row(s) without num_updates took the nearest one")
    if pending:
        notes.append(f"{name}: {len(pending)} row(s) and no num_updates anywhere; not read")
    return points_frame(steps, keys, values, None, notes, name)


def _read_counted(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    """Records with no step: the n-th record of a key set is point n (1-based) of its keys."""
    seen: Counter[tuple[str, ...]] = Counter()
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    total_lines = skipped = 0
    with _opened(path, given) as fh:
        for line in fh:
            total_lines += 1
            rec = parse_line(line) if line.strip() else None
            if rec is None:
                skipped += line.strip() != ""
                continue
            sig = tuple(k for k, _ in rec.pairs)
            seen[sig] += 1
            for k, v in rec.pairs:
                steps.append(float(seen[sig]))
                keys.append(k)
                values.append(v)
    notes = [f"{name} read as a {grammar.describe()}; {total_lines} lines, {len(values)} points, "
             f"{skipped} line(s) skipped (not key/value records)"]
    return points_frame(steps, keys, values, None, notes, name)


def _read_tqdm_postfix(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                       ) -> tuple[pd.DataFrame, list[str]]:
    from .textbars import read_bars

    return read_bars(path, name, grammar.describe(), given)


_READERS = {"tqdm-postfix": _read_tqdm_postfix, "counted": _read_counted, "torchtune-tqdm": _read_torchtune_tqdm, "hf-dict": _read_hf_dicts,
            "fairseq": _read_fairseq}
