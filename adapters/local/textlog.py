"""Plain-text training logs: lines of `key:value`, `key=value` or `key value` fields with a step.

The grammar, sniffed from the head and tail of a file (a log may open with a banner or the whole
training script):

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
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

import rundiff_core  # names resolved at use: the data model (numpy) loads only when a log is read

from .lazy import pd  # imported on first use: sniffing needs neither
from .sniff import looks_binary, points_frame

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


def parse_line(line: str) -> Record | None:
    """The fields of one line, or None when the line is not wholly key/value fields."""
    pairs: list[tuple[str, float]] = []
    rec = Record(pairs)
    for segment in _SPLIT.split(line.strip()):
        words: list[str] = []
        for tok in segment.split():
            joined = _JOINED.match(tok)
            if joined and (v := parse_value(joined.group("val"))) is not None:
                if words and not all(_PUNCT.match(w) for w in words):
                    return None  # `key value key:value`: words left over
                words = []
                _add(rec, joined.group("key"), v, "key:value" if joined.group("sep") == ":" else
                     "key=value")
                continue
            bare = tok.rstrip(":=")
            v = parse_value(bare) if words else None
            if v is not None:
                key_words = [w for w in words if not _PUNCT.match(w)]
                if not key_words:
                    return None
                last = key_words[-1]
                form = "key: value" if last.endswith(":") else "key=value" if last.endswith("=") \
                    else "key value"
                key = "_".join(w.rstrip(":=") for w in key_words)
                if not all(_KEY.match(w.rstrip(":=")) for w in key_words):
                    return None
                _add(rec, key, v, form)
                words = []
                continue
            words.append(tok)
        if any(not _PUNCT.match(w) for w in words):
            return None
    return rec if pairs else None


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
    """What the sniff found: the step field and the field forms, said in the run's notes."""

    step: str | None
    long_form: bool = False
    forms: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.long_form:
            return "text log, `<step> <name> <value>` per line"
        return (f"text log, {' / '.join(f'`{f}`' for f in self.forms)} fields; step = {self.step}")


def _sample(path: str) -> list[str] | None:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
            tail = b""
            if size > HEAD_BYTES + TAIL_BYTES:
                fh.seek(size - TAIL_BYTES)
                tail = fh.read(TAIL_BYTES)
    except OSError:
        return None
    if looks_binary(head):
        return None
    text = (head + b"\n" + tail).decode("utf-8", errors="replace")
    lines = text.splitlines()
    if size > len(head):  # the sniff window may cut lines at both ends
        lines = lines[:-1] if not tail else lines[:-1]
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


def sniff_text(path: str) -> Grammar | None:
    """The grammar of a text log from its head and tail, or None when it is not one."""
    lines = _sample(path)
    if not lines:
        return None
    nonblank = [ln for ln in lines if ln.strip()]
    triples = sum(1 for ln in nonblank if _TRIPLE.match(ln))
    if triples >= 2 and triples >= 0.8 * len(nonblank):
        return Grammar(step=None, long_form=True)
    records = [r for ln in nonblank if (r := parse_line(ln)) is not None]
    step = _step_key(records)
    if step is None:
        return None
    stepped = [r for r in records if any(k == step for k, _ in r.pairs)]
    if len(stepped) < 2 or all(len(r.pairs) < 2 for r in stepped) and len(
            {tuple(k for k, _ in r.pairs) for r in records}) < 2:
        return None
    forms = sorted(set().union(*(r.forms for r in records)))
    return Grammar(step=step, forms=tuple(forms))


def read_text_log(path: str, grammar: Grammar | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Every record of a text log as history; skipped lines counted in the notes."""
    name = os.path.basename(path)
    grammar = grammar or sniff_text(path)
    if grammar is None:
        return rundiff_core.empty_history(), [f"{name}: not a text log with a step field; skipped"]
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    skipped = 0
    total_lines = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
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
        pending: list[Record] = []
        stepless: Counter[tuple[str, ...]] = Counter()
        kept_stepless = 0
        units: set[str] = set()
        totals: dict[str, int] = {}
        last_step: float | None = None
        records: list[tuple[float, Record]] = []
        for line in fh:
            total_lines += 1
            if not line.strip():
                continue
            rec = parse_line(line)
            if rec is None:
                skipped += 1
                continue
            units |= rec.units
            totals.update(rec.totals)
            step = next((v for k, v in rec.pairs if k == step_key), None)
            if step is None:
                stepless[tuple(k for k, _ in rec.pairs)] += 1
                pending.append(rec)
                continue
            for p in pending:
                records.append((step, p))
            pending = []
            records.append((step, rec))
            last_step = step
        trailing = len(pending)
        if last_step is not None:
            records.extend((last_step, p) for p in pending)
        banner = 0
        for step, rec in records:
            sig = tuple(k for k, _ in rec.pairs)
            if step_key not in sig:
                if stepless[sig] < 2:
                    banner += 1
                    continue
                kept_stepless += 1
            for k, v in rec.pairs:
                if k == step_key:
                    continue
                steps.append(step)
                keys.append(k)
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
                     "of the next record that has one"
                     + (f" ({trailing} at the end took the last step)" if trailing else ""))
    if banner:
        notes.append(f"{name}: {banner} one-off line(s) without a {step_key} (a banner) not read "
                     "as metrics")
    return points_frame(steps, keys, values, None, notes, name)
