"""Read a W&B `.wandb` transaction log without wandb: records into run metadata and history columns.

wandb no longer ships a reader for its own log, so this package is one, written from the format:
`framing.py` splits the file into records (header, 32 KiB blocks, CRCs, damage), each record is
one `wandb_internal.Record` protobuf, decoded by hand for the few fields rundiff needs (history,
summary, config, run, exit, environment, header) — not with wandb's generated classes: it works
without the `[wandb]` extra, and it is much faster. History and summary records — nearly all of a
log — are decoded many at a time (`vector.py`); any record of another shape, and every other
record, one at a time here (`wire.py`). Values are then parsed in bulk (`values.py`).
"""

from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rundiff_core import protobuf

from .framing import HEADER, PAD, Framed, FrameStats, LogFormatError, damaged_header, frame, sniff
from .values import numeric_values, parse_spans
from .vector import last_of_repeats, span_names, walk, walk_keys
from .wire import DAMAGE, git, item, text, timestamp

# bound once: the per-record decoder calls these for every field it reads
varint, skip, fields, int64 = protobuf.varint, protobuf.skip, protobuf.fields, protobuf.int64

# Record.record_type field numbers this reader decodes.
R_HISTORY, R_SUMMARY, R_CONFIG, R_RUN, R_EXIT = 2, 3, 5, 17, 18
R_FINAL, R_HEADER, R_PREEMPTING, R_ENVIRONMENT = 20, 21, 23, 26
RECORD_NAMES = {
    1: "num", 2: "history", 3: "summary", 4: "output", 5: "config", 6: "files", 7: "stats",
    8: "artifact", 9: "tbrecord", 10: "alert", 11: "telemetry", 12: "metric", 13: "output_raw",
    16: "control", 17: "run", 18: "exit", 19: "uuid", 20: "final", 21: "header", 22: "footer",
    23: "preempting", 24: "noop_link_artifact", 25: "use_artifact", 26: "environment",
    27: "output_logger", 100: "request", 200: "_info",
}
_PASSIVE = frozenset((1, 16, 19, 200))  # num, control, uuid, _info: never a record's type
STEP_KEY, TIMESTAMP_KEY = "_step", "_timestamp"
BOOKKEEPING = frozenset(("_step", "_timestamp", "_runtime"))


def is_bookkeeping(name: str) -> bool:
    """wandb's own per-row fields (`_step`, `_timestamp`, `_runtime`, `_wandb/…`): not metrics."""
    return name in BOOKKEEPING or name == "_wandb" or name.startswith("_wandb/")


# -- the decoded log --------------------------------------------------------------------------
@dataclass
class History:
    """History in columns: one entry per row (history record) and one per metric item.

    Bookkeeping items become row columns (`record_step`, `item_step`, `wall_time`); the rest are
    items with a key code into `names` and a parsed value (`ok` False for text/null/objects, whose
    kinds are listed in `others` as `(item index, kind)`; booleans are usable, kind "bool").
    """

    rows: int = 0
    record_step: np.ndarray = field(default_factory=lambda: np.empty(0))  # record.step.num / NaN
    item_step: np.ndarray = field(default_factory=lambda: np.empty(0))  # numeric `_step` / NaN
    bad_steps: dict[str, int] = field(default_factory=dict)  # non-numeric `_step` kinds
    wall_time: np.ndarray = field(default_factory=lambda: np.empty(0))  # `_timestamp` / NaN
    row: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    code: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    value: np.ndarray = field(default_factory=lambda: np.empty(0))
    ok: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))
    others: list[tuple[int, str]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    vector_rows: int = 0  # rows decoded by the vector walk (the rest: per-record decoder)


@dataclass
class LogData:
    """Everything rundiff takes from one `.wandb` file."""

    path: str
    version: int = 0
    stats: FrameStats = field(default_factory=FrameStats)
    run: dict[str, Any] = field(default_factory=dict)
    config_updates: list[tuple[str, tuple[str, ...], bytes]] = field(default_factory=list)
    summary_updates: dict[tuple[str, ...], bytes | None] | None = field(default_factory=dict)
    exit: dict[str, Any] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    final: bool = False
    preempting: bool = False
    producer: str | None = None
    record_counts: dict[str, int] = field(default_factory=dict)
    history: History = field(default_factory=History)
    run_summary: tuple[int, int] | None = None  # a run record's own summary, until folded
    # the file's (mtime_ns, size, inode, device) when it framed clean, every CRC checked: a later
    # read of the same bytes may trust them (`read_log(verified=…)`)
    verified: tuple[int, int, int, int] | None = None
    header_damaged: bool = False  # the 7-byte header is a few bits off, a valid chunk after it
    # the file's stamp when read, damaged or not: `summary_payloads` hold while it keeps it (every
    # record they point into was taken from CRC-checked chunks)
    stamp: tuple[int, int, int, int] | None = None
    # summary records found or decoded one at a time (in `_record`, or flagged by the vector walk)
    summary_records_one_by_one: int = 0
    # with `summary=False` (and the vector walk): every summary payload as a (start, end)
    # offset, in log order, so the fold later reads just those bytes (`fold_summary_at`): file
    # offsets, or past the file's end into the bytes of the records that spanned chunks, kept
    summary_payloads: tuple[np.ndarray, np.ndarray, bytes] | None = None


HEADER_PROBE = 1 << 16  # bytes read to tell a damaged header from a foreign file


def read_log(path: str, *, vector: bool = True, history: bool = True, summary: bool = True,
             verified: tuple[int, int, int, int] | None = None) -> LogData:
    """Decode one `.wandb` file. Raises LogFormatError for a file that is not one.

    `vector=False` decodes every record one by one (the reference the vector walk is tested
    against, and what it falls back to for records of unusual shape). `history=False` skips the
    history items, `summary=False` skips the summary fold (`summary_updates` stays None); each is
    about as much work as the other, and callers often need only one. `verified` is an earlier
    read's `LogData.verified`: when the file still has that mtime, size, inode and device, its
    chunk CRCs — checked clean then — are not computed again (the source caches a decoded log by
    the same stamp).
    """
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        raw = _zeroed(size + PAD + max(1 << 16, size // 32))  # room for multi-chunk records
        n = fh.readinto(memoryview(raw)[:size]) or 0
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
        if os.fstat(fh.fileno()).st_mtime_ns != st.st_mtime_ns or n != size:
            stamp = None  # written to while read: nothing to vouch for
    head = bytes(raw[: len(HEADER)])
    if n < len(HEADER):
        raise LogFormatError(f"{n} bytes: too short for a W&B transaction log header")
    header_damaged = False
    if not sniff(head):
        if not damaged_header(bytes(raw[: min(n, HEADER_PROBE)])):
            raise LogFormatError("no ':W&B' header with magic 0xBEE1")
        header_damaged = True
    log = LogData(path=path, version=0 if header_damaged else head[6], header_damaged=header_damaged)
    if log.version != 0:
        raise LogFormatError(f"transaction log version {log.version} (this reader knows version 0)")
    framed = frame(raw, n, crc=not (vector and stamp is not None and verified == stamp))
    del raw
    log.stats = framed.stats
    log.verified = stamp if framed.clean else None
    log.stamp = stamp
    _decode(framed, log, vector=vector, history=history, summary=summary)
    return log


def _decode(framed: Framed, log: LogData, *, vector: bool, history: bool = True,
            summary: bool = True) -> None:
    buf, starts, ends = framed.buf, framed.starts, framed.ends
    arr = np.frombuffer(buf, dtype=np.uint8)
    n = len(starts)
    if vector and n:
        kind, sub_s, sub_e = _record_types(arr, starts, ends)
    else:
        kind = np.zeros(n, dtype=np.int8)
        sub_s, sub_e = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    hist_idx = np.flatnonzero(kind == R_HISTORY)
    summ_idx = np.flatnonzero(kind == R_SUMMARY)
    counts: dict[int, int] = {}
    py_history: list[tuple[int, float, list[tuple[bytes, bytes]]]] = []  # (record, step, items)
    summary_spans: list[tuple[int, int, int]] = []  # (record, start, end) for the fold
    for i in np.flatnonzero(kind == 0).tolist():
        _record(buf, int(starts[i]), int(ends[i]), i, log, counts, py_history, summary_spans)
    if history:
        log.history = _history_columns(buf, arr, hist_idx, sub_s, sub_e, py_history, log)
    if summary:
        _summary_fold(buf, arr, summ_idx, sub_s, sub_e, summary_spans, log, vector=vector)
    else:
        log.summary_updates = None
        if vector:
            _rec, s, e = _summary_payloads(summ_idx, sub_s, sub_e, summary_spans)
            joined_end = max(int(e.max()) if e.size else 0, framed.file_size)
            log.summary_payloads = (s, e, bytes(buf[framed.file_size:joined_end]))
    counts[R_HISTORY] = len(hist_idx) + len(py_history)
    counts[R_SUMMARY] = len(summary_spans) + len(summ_idx)
    log.record_counts = {RECORD_NAMES.get(k, str(k)): v for k, v in sorted(counts.items()) if v}


def _record_types(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each record's type — its first field after an optional `num` and the passive fields:
    2 history, 3 summary, 0 anything else (decoded one by one) — and that field's payload span.
    A function of its own, so that its temporaries (tens of MB on a big log) go before the walks."""
    n = len(starts)
    kind = np.zeros(n, dtype=np.int8)
    sub_s = np.zeros(n, dtype=np.int64)
    sub_e = np.zeros(n, dtype=np.int64)
    p = starts.copy()
    has_num = arr[p] == 0x08
    if has_num.any():
        q = p[has_num] + 1
        _val, width, ok = protobuf.read_varints(arr, q, ends[has_num])
        p[has_num] = np.where(ok, q + width, ends[has_num])
    p = _skip_passive(arr, p, ends)
    tag = arr[np.minimum(p, len(arr) - 1)]
    cand = ((tag == 0x12) | (tag == 0x1A)) & (p < ends)
    length, body, bad = protobuf.read_lengths(arr, p + 1)
    cand &= ~bad & (body + length <= ends)
    kind[cand] = tag[cand] >> 3
    sub_s[cand] = body[cand]
    sub_e[cand] = body[cand] + length[cand]
    return kind, sub_s, sub_e


PREFAULT_ABOVE = 1 << 20  # bytes: larger read buffers are mapped with their pages made up front


def _zeroed(size: int) -> bytearray | mmap.mmap:
    """`size` zero bytes to read a log into. Above 1 MiB, memory mapped with every page made up
    front (MAP_POPULATE, where the OS has it): a fresh process otherwise takes a page fault per
    4 KiB as the file is copied in — ~34,000 of them, a tenth of a second or more, for a 135 MB
    log. The file itself is read, not mapped: a log its writer truncates could not crash us."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate and size > PREFAULT_ABOVE:
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return bytearray(size)


def _skip_passive(arr: np.ndarray, p: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Step over `control`, `uuid` and `_info` fields ahead of a record's type, as `_record` does.

    wandb-core (Go) writes a record's plain fields before its oneof, so a record that carries
    `_info` — every summary the user's process sends (`run.summary[k] = v`, `del run.summary[k]`)
    — has it between `num` and the summary. A field that does not fit sends the record to `_record`.
    """
    last = len(arr) - 1
    for _ in range(3):
        b0, b1 = arr[np.minimum(p, last)], arr[np.minimum(p + 1, last)]
        passive = (((b0 == 0x82) | (b0 == 0x9A)) & (b1 == 0x01) | (b0 == 0xC2) & (b1 == 0x0C))
        passive &= p + 2 < ends
        if not passive.any():
            break
        w = np.flatnonzero(passive)
        length, body, bad = protobuf.read_lengths(arr, p[w] + 2)
        fend = body + length
        p[w] = np.where(~bad & (fend <= ends[w]), fend, ends[w])
    return p


def _record(buf: bytes, start: int, end: int, index: int, log: LogData, counts: dict,
            py_history: list, summary_spans: list) -> None:
    """Decode one record in Python: find its type field, hand it to the right reader."""
    try:
        pos = start
        while pos < end:
            tag, pos = varint(buf, pos)
            fno, wire = tag >> 3, tag & 7
            if wire != 2:
                pos = skip(buf, pos, wire)
                continue
            ln, pos = varint(buf, pos)
            sub_end = pos + ln
            if sub_end > end:
                raise protobuf.ProtobufError("field past record end")
            if fno not in _PASSIVE:
                if fno == R_HISTORY:
                    step, items = _history_record(buf, pos, sub_end)
                    py_history.append((index, step, items))
                elif fno == R_SUMMARY:
                    summary_spans.append((index, pos, sub_end))
                    log.summary_records_one_by_one += 1  # found here, not by the vector pass
                else:
                    _other(fno, buf, pos, sub_end, log)
                    counts[fno] = counts.get(fno, 0) + 1
                    if log.run_summary is not None:
                        summary_spans.append((index, *log.run_summary))
                        log.run_summary = None
                return
            pos = sub_end
    except DAMAGE:
        log.stats.bad_records += 1


def _history_record(buf: bytes, pos: int, end: int) -> tuple[float, list[tuple[bytes, bytes]]]:
    """One HistoryRecord: (step.num or NaN, [(key path joined by '/', value JSON bytes)])."""
    step = math.nan
    items: list[tuple[bytes, bytes]] = []
    while pos < end:
        tag, pos = varint(buf, pos)
        fno, wire = tag >> 3, tag & 7
        if wire != 2:
            pos = skip(buf, pos, wire)
            continue
        ln, pos = varint(buf, pos)
        sub_end = pos + ln
        if sub_end > end:
            raise protobuf.ProtobufError("history field past end")
        if fno == 1:
            key, value = item(buf, pos, sub_end)
            items.append(("/".join(key).encode(), value))
        elif fno == 2:
            step = 0.0
            for f, w, v in fields(buf, pos, sub_end):
                if f == 1 and w == 0:
                    step = float(int64(v))
        pos = sub_end
    if pos != end:
        raise protobuf.ProtobufError("history overruns")
    return step, items


def _history_columns(buf, arr: np.ndarray, hist_idx: np.ndarray, sub_s: np.ndarray,
                     sub_e: np.ndarray, py_history: list, log: LogData) -> History:
    """All history rows (vector-walked and per-record decoded) as ordered columns."""
    items, vstep, flagged, codes, keys = walk_keys(arr, sub_s[hist_idx], sub_e[hist_idx], history=True)
    py_all = list(py_history)
    for i in np.flatnonzero(flagged).tolist():  # records off the usual shape, one by one
        rec = int(hist_idx[i])
        try:
            step, its = _history_record(buf, int(sub_s[rec]), int(sub_e[rec]))
        except DAMAGE:
            log.stats.bad_records += 1  # unreadable: no row, as in the record-by-record path
            continue
        py_all.append((rec, step, its))
    # key names: one per distinct key span, nested parts joined with "/"
    names: list[str] = []
    name_code: dict[str, int] = {}
    remap = np.empty(len(keys), dtype=np.int64)
    for c, path in enumerate(span_names(keys)):
        remap[c] = name_code.setdefault("/".join(path), len(name_code))
        if remap[c] == len(names):
            names.append("/".join(path))
    item_code = remap[codes] if codes.size else codes
    n_vec_items = item_code.size
    if not py_all and not flagged.any():  # every row walked: record i is row i
        rows = len(hist_idx)
        record_step = vstep
        item_row, item_j = items["rec"], items["j"]
        py_vals: list[bytes] = []
    else:
        rec_all = np.concatenate([hist_idx, np.asarray([r for r, _s, _i in py_all], dtype=np.int64)])
        keep_vec = np.ones(len(hist_idx), dtype=bool)
        keep_vec[flagged] = False
        rec_all = np.concatenate([hist_idx[keep_vec], rec_all[len(hist_idx):]])
        order = np.argsort(rec_all, kind="stable")
        rows = len(rec_all)
        row_index = np.empty(rows, dtype=np.int64)
        row_index[order] = np.arange(rows)
        vec_row = np.full(len(hist_idx), -1, dtype=np.int64)
        vec_row[keep_vec] = row_index[: int(keep_vec.sum())]
        record_step = np.full(rows, np.nan)
        record_step[vec_row[keep_vec]] = vstep[keep_vec]
        rows_py, j_py, code_py, py_vals = [], [], [], []
        for (_r, step, its), row in zip(py_all, row_index[int(keep_vec.sum()):].tolist(), strict=True):
            record_step[row] = step
            for jj, (k, v) in enumerate(its):
                name = k.decode("utf-8", "replace")
                c = name_code.get(name)
                if c is None:
                    c = name_code[name] = len(names)
                    names.append(name)
                rows_py.append(row)
                j_py.append(jj)
                code_py.append(c)
                py_vals.append(v)
        item_row = np.concatenate([vec_row[items["rec"]], np.asarray(rows_py, dtype=np.int64)])
        item_j = np.concatenate([items["j"], np.asarray(j_py, dtype=np.int64)])
        item_code = np.concatenate([item_code, np.asarray(code_py, dtype=np.int64)])
    # which items to parse: metrics, `_timestamp`, and `_step` where the record has no step
    hidden = np.array([is_bookkeeping(nm) for nm in names] or [False], dtype=bool)
    step_code = name_code.get(STEP_KEY, -1)
    ts_code = name_code.get(TIMESTAMP_KEY, -1)
    need = ~hidden[item_code] if item_code.size else np.zeros(0, dtype=bool)
    need |= item_code == ts_code
    if step_code >= 0:
        need |= (item_code == step_code) & np.isnan(record_step[item_row])
    idx = np.flatnonzero(need)
    # logged order: row by row, items in record order
    counts = np.bincount(item_row, minlength=rows) if rows else np.zeros(0, dtype=np.int64)
    if idx.size and (item_j >= counts[item_row]).any():  # j counted other fields too
        idx = idx[np.lexsort((item_j[idx], item_row[idx]))]
    elif idx.size:
        offsets = np.cumsum(counts) - counts
        marker = np.full(item_code.size, -1, dtype=np.int64)
        marker[offsets[item_row[idx]] + item_j[idx]] = idx
        idx = marker[marker >= 0]
    is_vec = idx < n_vec_items
    sel_code = item_code[idx]
    sel_row = item_row[idx]
    if is_vec.all():
        vs, ve = items["vs"][idx], items["ve"][idx]
        del items, item_code, item_row, item_j, need  # millions of items: let go before parsing
        values, ok, others = parse_spans(arr, buf, vs, ve)
        del vs, ve
    else:
        values = np.empty(idx.size)
        ok = np.empty(idx.size, dtype=bool)
        vpos, ppos = np.flatnonzero(is_vec), np.flatnonzero(~is_vec)
        v1, o1, x1 = parse_spans(arr, buf, items["vs"][idx[vpos]], items["ve"][idx[vpos]])
        v2, o2, x2 = numeric_values([py_vals[i - n_vec_items] for i in idx[ppos].tolist()])
        values[vpos], ok[vpos], values[ppos], ok[ppos] = v1, o1, v2, o2
        others = [(int(vpos[i]), k) for i, k in x1] + [(int(ppos[i]), k) for i, k in x2]
    wall = np.full(rows, np.nan)
    m = (sel_code == ts_code) & ok
    wall[sel_row[m]] = values[m]
    item_step = np.full(rows, np.nan)
    is_step = sel_code == step_code
    usable = is_step & ok
    bad_steps: dict[str, int] = {}
    for i, kind in others:
        if is_step[i]:
            bad_steps[kind] = bad_steps.get(kind, 0) + 1
            usable[i] = False  # a boolean parses as 1/0 but is no step
    item_step[sel_row[usable]] = values[usable]
    metric = ~hidden[sel_code] if sel_code.size else np.zeros(0, dtype=bool)
    keep_idx = np.flatnonzero(metric)
    kept_others = [(i, kind) for i, kind in others if metric[i]]
    new_pos = np.searchsorted(keep_idx, [i for i, _k in kept_others]).tolist()
    return History(
        rows=rows,
        record_step=record_step,
        item_step=item_step,
        bad_steps=bad_steps,
        wall_time=wall,
        row=sel_row[keep_idx],
        code=sel_code[keep_idx].astype(np.int32),
        value=values[keep_idx],
        ok=ok[keep_idx],
        others=[(p, kind) for p, (_i, kind) in zip(new_pos, kept_others, strict=True)],
        names=names,
        vector_rows=len(hist_idx) - int(flagged.sum()),
    )


def _summary_fold(buf: bytes, arr: np.ndarray, summ_idx: np.ndarray, sub_s: np.ndarray,
                  sub_e: np.ndarray, py_spans: list[tuple[int, int, int]], log: LogData, *,
                  vector: bool) -> None:
    """The summary after every update and removal, in log order (the last update of a key wins).

    `summ_idx` are summary records found by the vector pass (payload spans in sub_s/sub_e);
    `py_spans` are `(record, start, end)` found one by one (a run record's own summary, a record
    of unusual shape). `vector=False` folds record by record (`_summary_fold_py`, the reference);
    otherwise `_summary_fold_vec` folds them all at once.
    """
    rec, s, e = _summary_payloads(summ_idx, sub_s, sub_e, py_spans)
    if not rec.size:
        return
    if vector:
        _summary_fold_vec(buf, arr, s, e, log)
    else:
        _summary_fold_py(buf, list(zip(rec.tolist(), s.tolist(), e.tolist(), strict=True)), log)


def _summary_payloads(summ_idx: np.ndarray, sub_s: np.ndarray, sub_e: np.ndarray,
                      py_spans: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(record, start, end) of every summary payload, the vector pass's and `_record`'s, in log
    order."""
    if not py_spans:
        return summ_idx, sub_s[summ_idx], sub_e[summ_idx]
    extra = np.asarray(py_spans, dtype=np.int64).reshape(-1, 3)
    rec = np.concatenate([summ_idx, extra[:, 0]])
    order = np.argsort(rec, kind="stable")
    return (rec[order], np.concatenate([sub_s[summ_idx], extra[:, 1]])[order],
            np.concatenate([sub_e[summ_idx], extra[:, 2]])[order])


def fold_summary_at(path: str, payloads: tuple[np.ndarray, np.ndarray, bytes],
                    verified: tuple[int, int, int, int]) -> dict[tuple[str, ...], bytes | None] | None:
    """The summary fold of a log read earlier with `summary=False`, from its summary payloads'
    file offsets alone: no framing, no record types again. Only while the file has the stamp of
    that read (`LogData.stamp`: the payloads lie in chunks whose CRCs it checked, damaged log or
    not); None otherwise, and the caller reads the log again (`read_log(history=False)`).

    The payloads are read a window of `FOLD_WINDOW` bytes at a time into one reused buffer, in
    log order, the records that spanned chunks (kept by the first read) where they fall: no
    second copy of a big log in memory, and none of the page faults a fresh one costs."""
    s, e, joined = payloads
    log = LogData(path=path)
    fold = _SummaryFold(log)
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev) != verified:
            return None
        size = st.st_size
        spilled = joined  # the bytes of the records that spanned chunks, as the first read kept them
        in_file = s < size
        f_idx = np.flatnonzero(in_file)
        longest = int((e[f_idx] - s[f_idx]).max()) if f_idx.size else 0
        room = max(FOLD_WINDOW, longest)
        window = bytearray(room + len(spilled) + PAD)
        view = memoryview(window)
        k, start = 0, 0  # next file payload (of f_idx), next payload in log order
        while start < s.size:
            if k < f_idx.size:  # file payloads k … m-1 fit the window; joined ones go along
                m = k + int(np.searchsorted(e[f_idx[k:]], int(s[f_idx[k]]) + room, side="right"))
                m = max(m, k + 1)
                stop = int(f_idx[m]) if m < f_idx.size else s.size
                lo, hi = int(s[f_idx[k]]), int(e[f_idx[m - 1]])
            else:  # only records that spanned chunks are left
                m, stop, lo, hi = k, s.size, 0, 0
            fh.seek(lo)
            if (fh.readinto(view[: hi - lo]) or 0) != hi - lo:
                return None
            ws, we = s[start:stop] - lo, e[start:stop] - lo
            spill = ~in_file[start:stop]
            used = hi - lo
            if spill.any():  # joined records after the file bytes, as the first read laid them out
                js, je = s[start:stop][spill] - size, e[start:stop][spill] - size
                parts = [spilled[a:b] for a, b in zip(js.tolist(), je.tolist(), strict=True)]
                sizes = np.array([len(x) for x in parts], dtype=np.int64)
                at = used + np.cumsum(sizes) - sizes
                window[used : used + int(sizes.sum())] = b"".join(parts)
                ws[spill], we[spill] = at, at + sizes
                used += int(sizes.sum())
            view[used : used + PAD] = bytes(PAD)
            fold.add(window, np.frombuffer(window, dtype=np.uint8, count=used + PAD), ws, we)
            k, start = m, stop
        if os.fstat(fh.fileno()).st_mtime_ns != st.st_mtime_ns:
            return None
    fold.finish()
    return log.summary_updates


SUMMARY_CHUNK = 1 << 14  # summary records walked at once: temporaries stay in cache, memory bounded
FOLD_WINDOW = 1 << 22  # bytes of a log the lazy fold reads at once


def _summary_fold_vec(buf: bytes, arr: np.ndarray, s: np.ndarray, e: np.ndarray, log: LogData) -> None:
    """`_summary_fold_py` without per-record Python: the SummaryRecord payloads `s`..`e` (in log
    order) walked many at a time, each key path's last operation found with one `maximum.at`.

    The order of operations is `_summary_fold_py`'s: record by record, within a record its updates
    then its removals, each in wire order; a key is a path (nested key parts, or the flat key), so
    `key: "a"` and `nested_key: ["a"]` are one key. Byte-identical repeats are dropped first
    (`last_of_repeats`: only the last copy can matter). Records the walk cannot read (damage, keys
    nested deeper than it follows) are decoded one by one with the reference's own `item()`, a
    damaged one counted once per copy. Records go in chunks of `SUMMARY_CHUNK`; a later chunk's
    operations come after an earlier one's, so each chunk only updates one entry per key path.
    The result and the damage count are the reference's, tested on real logs, on logs of the
    installed wandb and on randomly damaged ones.
    """
    fold = _SummaryFold(log)
    fold.add(buf, arr, s, e)
    fold.finish()


class _SummaryFold:
    """`_summary_fold_vec`'s state across batches of summary payloads given in log order (the
    lazy fold's windows of the file): per key path, the batch and position of its last
    operation, and its value (bytes copied out of the batch's buffer; None when removed)."""

    def __init__(self, log: LogData) -> None:
        self.log = log
        self.paths: list[tuple[str, ...]] = []
        self.path_id: dict[tuple[str, ...], int] = {}
        self.key_pid: dict[bytes, int] = {}  # a key's raw bytes (as the walk spans them) → path id
        self.last_chunk: list[int] = []
        self.last_order: list[int] = []
        self.last_value: list[bytes | None] = []
        self.chunk = 0

    def pid_of(self, path: tuple[str, ...]) -> int:
        c = self.path_id.get(path)
        if c is None:
            c = self.path_id[path] = len(self.paths)
            self.paths.append(path)
            self.last_chunk.append(-1)
            self.last_order.append(-1)
            self.last_value.append(None)
        return c

    def add(self, buf: bytes | bytearray, arr: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        """Fold the payloads `s`..`e` of `buf` (`arr`: its bytes as uint8, zero padding after the
        last payload)."""
        log = self.log
        keep, copies = last_of_repeats(arr, np.arange(s.size), s, e, counts=True)
        s, e = s[keep], e[keep]
        for lo in range(0, s.size, SUMMARY_CHUNK):
            chunk = self.chunk
            self.chunk += 1
            cs, ce = s[lo : lo + SUMMARY_CHUNK], e[lo : lo + SUMMARY_CHUNK]
            items, _step, flagged = walk(arr, cs, ce, history=False)
            codes, keys = protobuf.factorize_spans(arr, items["ks"], items["ke"] - items["ks"])
            remap = np.empty(len(keys), dtype=np.int64)
            for c, raw in enumerate(keys):
                got = self.key_pid.get(raw)
                if got is None:
                    got = self.key_pid[raw] = self.pid_of(span_names([raw])[0])
                remap[c] = got
            pid = remap[codes] if codes.size else codes
            rec, j, rm = items["rec"], items["j"], items["rm"]
            vs, ve = items["vs"], items["ve"]
            # records off the walk's shape: one by one, as the reference reads them
            py_rec: list[int] = []
            py_j: list[int] = []
            py_pid: list[int] = []
            py_rm: list[bool] = []
            py_val: list[bytes | None] = []
            flagged_idx = np.flatnonzero(flagged).tolist()
            log.summary_records_one_by_one += len(flagged_idx)
            for r in flagged_idx:
                try:
                    entries = [(f, item(buf, *val)) for f, wire, val in fields(buf, int(cs[r]), int(ce[r]))
                               if wire == 2 and f in (1, 2)]
                except DAMAGE:
                    log.stats.bad_records += int(copies[lo + r])
                    continue
                for jj, (f, (key, value)) in enumerate(entries):
                    py_rec.append(r)
                    py_j.append(jj)
                    py_pid.append(self.pid_of(key))
                    py_rm.append(f == 2)
                    py_val.append(bytes(value) if f == 1 else None)
            n_vec = pid.size
            if py_rec:
                rec = np.concatenate([rec, np.asarray(py_rec, dtype=np.int64)])
                j = np.concatenate([j, np.asarray(py_j, dtype=np.int64)])
                rm = np.concatenate([rm, np.asarray(py_rm, dtype=bool)])
                pid = np.concatenate([pid, np.asarray(py_pid, dtype=np.int64)])
            if not pid.size:
                continue
            width = int(j.max()) + 1
            order = (rec * 2 + rm) * width + j  # log order within the chunk: record, phase, field
            latest = np.full(len(self.paths), -1, dtype=np.int64)
            np.maximum.at(latest, pid, order)
            for i in np.flatnonzero(order == latest[pid]).tolist():
                c = int(pid[i])
                self.last_chunk[c], self.last_order[c] = chunk, int(order[i])
                if i >= n_vec:
                    self.last_value[c] = py_val[i - n_vec]
                else:
                    self.last_value[c] = None if rm[i] else bytes(buf[int(vs[i]) : int(ve[i])])

    def finish(self) -> None:
        done = [c for c in range(len(self.paths)) if self.last_chunk[c] >= 0]
        done.sort(key=lambda c: (self.last_chunk[c], self.last_order[c]))
        self.log.summary_updates = {self.paths[c]: self.last_value[c] for c in done}


def _summary_fold_py(buf: bytes, spans: list[tuple[int, int, int]], log: LogData) -> None:
    """The per-record fold, walking backwards: a key seen once is final; entries are then replayed
    in log order, so a later update or removal of a parent key still replaces its children."""
    final: dict[tuple[str, ...], tuple[int, bytes | None]] = {}
    counter = 0
    for _rec, start, end in reversed(spans):
        try:
            entries = []
            for f, wire, val in fields(buf, start, end):
                if wire == 2 and f in (1, 2):
                    key, value = item(buf, *val)
                    entries.append((key, value if f == 1 else None))
        except DAMAGE:
            log.stats.bad_records += 1
            continue
        # within a record wandb applies updates, then removals
        entries.sort(key=lambda kv: kv[1] is None)
        for key, value in reversed(entries):
            counter -= 1
            if key not in final:
                final[key] = (counter, value)
    log.summary_updates = {k: v for k, (_c, v) in sorted(final.items(), key=lambda kv: kv[1][0])}


def _other(fno: int, buf: bytes, start: int, end: int, log: LogData) -> None:
    """Decode the non-history records rundiff reads; others are only counted."""
    if fno == R_CONFIG:
        _config(buf, (start, end), log)
    elif fno == R_RUN:
        _run(buf, (start, end), log)
    elif fno == R_EXIT:
        out: dict[str, Any] = {"exit_code": 0, "runtime": None, "not_complete": False}
        for f, wire, val in fields(buf, start, end):
            if f == 1 and wire == 0:
                out["exit_code"] = int64(val)  # int32, sign-extended on the wire
            elif f == 2 and wire == 0:
                out["runtime"] = val
            elif f == 3 and wire == 0:
                out["not_complete"] = bool(val)
        log.exit = out
    elif fno == R_FINAL:
        log.final = True
    elif fno == R_PREEMPTING:
        log.preempting = True
    elif fno == R_HEADER:
        for f, wire, val in fields(buf, start, end):
            if f == 1 and wire == 2:
                for g, w2, v2 in fields(buf, *val):
                    if g == 1 and w2 == 2:
                        log.producer = text(buf, v2)
    elif fno == R_ENVIRONMENT:
        names = {1: "os", 2: "python", 4: "docker", 6: "program", 7: "code_path", 11: "root",
                 12: "host", 13: "username", 14: "executable", 18: "gpu_type", 25: "cuda_version"}
        env = log.environment
        for f, wire, val in fields(buf, start, end):
            if f in names and wire == 2:
                env[names[f]] = text(buf, val)
            elif f == 3 and wire == 2:
                env["started_at"] = timestamp(buf, val)
            elif f == 5 and wire == 2:
                env.setdefault("args", []).append(text(buf, val))
            elif f == 9 and wire == 2:
                env["git"] = git(buf, val)
            elif f in (16, 17, 19) and wire == 0:
                env[{16: "cpu_count", 17: "cpu_count_logical", 19: "gpu_count"}[f]] = val


def _config(buf: bytes, span: tuple[int, int], log: LogData) -> None:
    for f, wire, val in fields(buf, *span):
        if wire == 2 and f in (1, 2):
            key, value = item(buf, *val)
            log.config_updates.append(("update" if f == 1 else "remove", key, value))


def _run(buf: bytes, span: tuple[int, int], log: LogData) -> None:
    run = log.run
    strings = {1: "run_id", 2: "entity", 3: "project", 6: "group", 7: "job_type",
               8: "display_name", 9: "notes", 12: "sweep_id", 13: "host", 16: "storage_id"}
    tags: list[str] = []
    for f, wire, val in fields(buf, *span):
        if f in strings and wire == 2:
            value = text(buf, val)
            if value:
                run[strings[f]] = value
        elif f == 10 and wire == 2:
            tags.append(text(buf, val))
        elif f == 4 and wire == 2:
            _config(buf, val, log)
        elif f == 5 and wire == 2:
            log.run_summary = (val[0], val[1])
        elif f == 14 and wire == 0:
            run["starting_step"] = int64(val)
        elif f == 17 and wire == 2:
            run["start_time"] = timestamp(buf, val)
        elif f == 18 and wire == 0:
            run["resumed"] = bool(val)
        elif f == 24 and wire == 0:
            run["resume"] = bool(val)
        elif f == 22 and wire == 0:
            run["forked"] = bool(val)
        elif f == 20 and wire == 0:
            run["runtime"] = val
        elif f == 21 and wire == 2:
            run["git"] = git(buf, val)
        elif f == 23 and wire == 2:
            bp: dict[str, Any] = {}
            for g, w2, v2 in fields(buf, *val):
                if g == 1 and w2 == 2:
                    bp["run"] = text(buf, v2)
                elif g == 2 and w2 == 1:
                    bp["value"] = float(np.frombuffer(v2.to_bytes(8, "little"), "<f8")[0])
                elif g == 3 and w2 == 2:
                    bp["metric"] = text(buf, v2)
            run["branch_point"] = bp
    if tags:
        run["tags"] = tags


