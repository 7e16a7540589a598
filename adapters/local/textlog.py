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

Frameworks' own lines (torchtune, HF Trainer / axolotl, fairseq) are read by
adapters/local/textframeworks.py, and what one line holds by adapters/local/textgrammar.py.
"""

from __future__ import annotations

import os
import re
from collections import Counter

import rundiff_core  # names resolved at use: the data model (numpy) loads only when a log is read

from .lazy import pd  # imported on first use: sniffing needs neither
from .sniff import looks_binary, points_frame
from .textblocks import eval_heading
from .textframeworks import (
    FRAMEWORK_LINE,
    TORCHTUNE_DISK,
    framework_grammar,
    log_lines,
    opened_log,
    read_fairseq,
    read_hf_dicts,
    read_torchtune_tqdm,
)
from .textgrammar import (
    PROGRESS,
    STAMP,
    STEP_KEYS,
    TRIPLE,
    Grammar,
    Record,
    clean_line,
    content_lines,
    is_step_name,
    parse_line,
)
from .textkinds import finer_kind_keys
from .textsessions import Sessions
from .textsummaries import is_heading, summary_kind_keys

HEAD_BYTES = 16 << 10
TAIL_BYTES = 16 << 10
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
    grammar = _sniff_records(lines)
    if grammar is None and lines:
        from .textbars import X_NAME, sniff_bars

        bars = sniff_bars([ln for ln in lines if ln.strip()])
        if bars is not None:
            return Grammar(step=X_NAME, framework="tqdm-postfix", share=bars)
    return grammar


def _sniff_records(lines: list[str] | None) -> Grammar | None:
    if not lines:
        return None
    nonblank = [ln for ln in lines if ln.strip()]
    framework = framework_grammar(nonblank)
    if framework is not None:
        return framework
    triples = sum(1 for ln in nonblank if TRIPLE.match(ln))
    if triples >= 2 and triples >= 0.8 * len(nonblank):
        return Grammar(step=None, long_form=True, share=(triples, content_lines(nonblank)))
    records = [r for ln in nonblank if (r := parse_line(ln)) is not None]
    step = _step_key(records)
    if step is None:
        counted = _counted(records)
        if counted is not None:
            counted.share = (sum(1 for r in records if r.forms - {"key value"}),
                             content_lines(nonblank))
        return counted
    stepped = [r for r in records if any(k == step for k, _ in r.pairs)]
    if len(stepped) < 2 or all(len(r.pairs) < 2 for r in stepped) and len(
            {tuple(k for k, _ in r.pairs) for r in records}) < 2:
        return None
    forms = sorted(set().union(*(r.forms for r in records)))
    disk = sum(1 for ln in nonblank if TORCHTUNE_DISK.match(ln))
    return Grammar(step=step, forms=tuple(forms),
                   framework="torchtune-disk" if step == "Step" and disk >= 2 else None,
                   share=(len(records), content_lines(nonblank)))


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
    with opened_log(path, lines) as fh:
        if grammar.long_form:
            for line in fh:
                total_lines += 1
                m = TRIPLE.match(line)
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
            stamp = bool(STAMP.match(line))
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
        period = sessions.period_shifts(totals.get(step_key)) if step_key else None
        shifts = period or sessions.shifts()
        phased = _phased_keys(records, phases, step_key)
        places = _place_counters(records, step_key)
        summary, summed, summary_said = summary_kind_keys([(s, r) for s, r, _, _ in records],
                                                          step_key, STEP_KEYS)
        headings = 0
        for i, (step, rec, session, stamp) in enumerate(records):
            if shifts:
                step += shifts[session]
            sig = tuple(k for k, _ in rec.pairs)
            if step_key not in sig and unstamped_out and not stamp:
                printed += 1
                continue
            if step_key not in sig:
                if is_heading(sig, step_key, STEP_KEYS):
                    headings += 1  # `epoch: 3` above the epoch's records: where, not a metric
                    continue
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
                            f"{summary[i]}/{k}" if i in summary and k in summed else
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
    if summary_said:
        notes.append(f"{name}: {summary_said}")
    if headings:
        notes.append(f"{name}: {headings} line(s) holding a counter alone (a heading such as "
                     "`epoch: 3`) not read as metrics")
    if phased:
        notes.append(f"{name}: {_some_keys(phased)} written under different phase banners or evaluation headings "
                     f"({', '.join(sorted({ph for ph in phases if ph}))}): kept apart, named by "
                     "the banner (`<phase>/<key>`)")
    if period:
        notes.append(sessions.describe_period(name, step_key, totals[step_key]))
    elif shifts:
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
        measured = any(not is_step_name(k) for k in keys)
        step = next((v for k, v in rec.pairs if k == step_key), None)
        for k, v in rec.pairs:
            if k == step_key or not is_step_name(k):
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


def _with_other_family(path: str, name: str, grammar: Grammar, given: list[str] | None,
                       frame: pd.DataFrame, notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The framework's records, and the records of another grammar the file holds beside them
    (textfamilies: kept as their own series)."""
    is_framework = FRAMEWORK_LINE.get(grammar.framework or "")
    if is_framework is None:
        return frame, notes
    from .textfamilies import other_family

    lines = [ln for ln in log_lines(path, given) if not PROGRESS.search(ln)]
    other, more = other_family(path, name, lines, is_framework,
                               {str(k) for k in frame["key"].unique()} if len(frame) else set(),
                               sniff_text, read_text_log)
    if other is None:
        return frame, notes
    return (pd.concat([frame, other], ignore_index=True) if len(frame) else other), notes + more


def _read_counted(path: str, name: str, grammar: Grammar, given: list[str] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    """Records with no step: the n-th record of a key set is point n (1-based) of its keys."""
    seen: Counter[tuple[str, ...]] = Counter()
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    total_lines = skipped = 0
    with opened_log(path, given) as fh:
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


_READERS = {"tqdm-postfix": _read_tqdm_postfix, "counted": _read_counted,
            "torchtune-tqdm": read_torchtune_tqdm, "hf-dict": read_hf_dicts, "fairseq": read_fairseq}

