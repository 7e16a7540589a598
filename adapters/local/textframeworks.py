"""Frameworks' own text-log lines, recognised before the generic grammar (textgrammar.FRAMEWORKS
names them; a line is also split at `\\r`, so tqdm's rewritten progress lines are records too):

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
import re
from collections import Counter

from .lazy import pd  # imported on first use: sniffing needs neither
from .sniff import points_frame
from .textgrammar import KEY, NUMBER, Grammar, content_lines, parse_line

# torchtune recipes: pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")
_TT_TQDM = re.compile(r"^\s*(?P<epoch>\d+)\|(?P<step>\d+)\|(?P<desc>[A-Za-z].*?)"
                      r"(?::\s+\d{1,3}%\||:?\s*$)")
# torchtune DiskLogger.log_dict: f"Step {step} | " + f"{name}:{data} " per metric
TORCHTUNE_DISK = re.compile(r"^Step \d+ \| [A-Za-z_][\w/.]*:\S+")
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



def framework_grammar(lines: list[str]) -> Grammar | None:
    """A framework's own lines, recognised before the generic grammar (at least 2 records)."""
    content = content_lines(lines)
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


_NUMERIC_TEXT = re.compile(rf"^(?:{NUMBER})$", re.I)


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
        if KEY.match(key) and (f := _number(v)) is not None:
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
            if sep and KEY.match(key.strip()) and (v := _float(val)) is not None:
                out[key.strip()] = v
        return ("", out) if out else None
    parts = [p.strip() for p in rest.split(" | ")][1:]  # rest opens with " | "
    prefix = "train/"
    if parts and (sub := _FS_SUBSET.match(parts[0])):
        prefix = f"{sub.group('subset') or sub.group('s3')}/"
        parts = parts[1:]
    for field in parts:
        key, _, val = field.partition(" ")
        if KEY.match(key) and (v := _float(val.strip())) is not None:
            out[key] = v
    return (prefix, out) if out else None


def _float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v


# -- framework readers ----------------------------------------------------------------------------
#: Whether a line is one of a framework's records (what its reader reads; textfamilies reads the rest)
FRAMEWORK_LINE = {
    "hf-dict": lambda ln: _dict_record(ln) is not None,
    "fairseq": lambda ln: bool(_fairseq_json_row(ln) or _FAIRSEQ.search(ln)),
    "torchtune-tqdm": lambda ln: bool(_TT_TQDM.match(ln)),
}


def log_lines(path: str, given: list[str] | None = None):  # noqa: ANN202 - yields str
    """The file's lines (text mode splits at \\n, \\r\\n and \\r alike), or the `given` ones."""
    if given is not None:
        yield from given
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        yield from fh


def opened_log(path: str, given: list[str] | None):  # noqa: ANN202 - a context manager of lines
    """The open file, or the `given` lines as one (`with opened_log(...) as fh: for line in fh`)."""
    import contextlib

    return contextlib.nullcontext(given) if given is not None else open(  # noqa: SIM115
        path, encoding="utf-8", errors="replace")


def read_torchtune_tqdm(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                         ) -> tuple[pd.DataFrame, list[str]]:
    by_step: dict[int, list[tuple[str, float]]] = {}
    lines = seen = skipped = 0
    renamed: set[str] = set()
    for line in log_lines(path, given):
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


def read_hf_dicts(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                   ) -> tuple[pd.DataFrame, list[str]]:
    records: list[dict[str, float]] = []
    lines = skipped = 0
    for line in log_lines(path, given):
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


def read_fairseq(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    steps, keys, values = [], [], []
    lines = skipped = stepless = 0
    kinds: Counter[str] = Counter()
    last: float | None = None
    pending: list[tuple[str, dict[str, float]]] = []
    for line in log_lines(path, given):
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


