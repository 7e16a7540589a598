"""One TensorBoard run directory → every scalar point, its config, and honest fidelity notes.

The event files of a run are read in file-name order (TensorBoard's order) and merged as one
stream, which is what TensorBoard's accumulators see. A tag is a scalar series when its values
carry `simple_value`, or tensors whose tag's first metadata names the `scalars` plugin (TF2 and
newer writers). Every point is kept by default, with a note of what TensorBoard would hide after a
restart; `purge="tensorboard"` (TensorBoard's server rules) or `purge="accumulator"`
(EventAccumulator/tbparse rules) drops those points instead, and says how many.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rundiff_core import (
    HistoryColumns,
    RunEvent,
)

from . import is_event_file
from .events import (
    KIND_NAMES,
    SESSION_CHECKPOINT,
    SESSION_START,
    SESSION_STOP,
    V_SIMPLE,
    V_TENSOR,
    FileEvents,
    hparams_config,
    hparams_metrics,
    parse_file_version,
    read_event_file,
)
from .tfrecord import Damage

log = logging.getLogger(__name__)

SCALARS_PLUGIN = "scalars"
HPARAMS_PLUGIN = "hparams"
DATA_CLASS_SCALAR = 1
MAX_EVENTS = 100  # RunEvents listed per kind; the rest are counted in a note
PURGE_MODES = ("keep", "tensorboard", "accumulator")
PURGE_RULES = {"tensorboard": "TensorBoard server (plugin_event_accumulator)",
               "accumulator": "EventAccumulator/tbparse"}


def event_files(run_dir: str) -> list[str]:
    """The event files directly inside `run_dir`, in TensorBoard's (sorted path) order."""
    try:
        entries = list(os.scandir(run_dir))
    except OSError:
        return []
    return sorted(e.path for e in entries if is_event_file(e.name) and e.is_file())


@dataclass
class RunData:
    """Everything decoded from one run, ready to become a Run and its history frame."""

    step: np.ndarray
    key: np.ndarray  # int codes into `keys`
    keys: list[str]
    value: np.ndarray
    wall_time: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def history(self, keys: Any = None) -> HistoryColumns:
        """The points as history columns (no DataFrame, so no pandas, until an engine asks)."""
        codes, names = self.key, self.keys
        step, value, wall = self.step, self.value, self.wall_time
        if keys is not None:
            wanted = np.array([k in set(keys) for k in names], dtype=bool)
            sel = wanted[codes] if len(names) else np.zeros(len(codes), bool)
            codes, step, value, wall = codes[sel], step[sel], value[sel], wall[sel]
        f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        return HistoryColumns(f64(step), np.asarray(codes, dtype=np.int32), list(names),
                              f64(value), f64(wall))


def read_run(paths: list[str], *, purge: str = "keep", root: str | None = None) -> RunData:
    """Decode and merge a run's event files (in the given order)."""
    files = [read_event_file(p) for p in paths]
    return merge(files, purge=purge, root=root)


def _global_codes(per_file: list[list[str]]) -> tuple[list[str], list[np.ndarray]]:
    names: dict[str, int] = {}
    maps = []
    for lst in per_file:
        maps.append(np.array([names.setdefault(x, len(names)) for x in lst], dtype=np.int64))
    return list(names), maps


def merge(files: list[FileEvents], *, purge: str = "keep", root: str | None = None) -> RunData:
    notes: list[str] = []
    rel = (lambda p: os.path.relpath(p, root)) if root else os.path.basename
    log_damage: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        damage = _damage_notes(f, rel(f.path))
        notes.extend(damage)
        for note in damage:
            log.warning("%s", note)
        if f.framing.damage:
            log_damage[rel(f.path)] = [d.as_meta() for d in f.framing.damage]

    offsets = np.cumsum([0] + [len(f.step) for f in files])
    ev_step = np.concatenate([f.step for f in files]) if files else np.empty(0, np.int64)
    ev_wall = np.concatenate([f.wall_time for f in files]) if files else np.empty(0)
    ev_sum = np.concatenate([f.has_summary for f in files]) if files else np.empty(0, bool)
    ev_status = np.concatenate([f.session_status for f in files]) if files else np.empty(0, np.int64)
    ev_file = np.repeat(np.arange(len(files)), np.diff(offsets)) if files else np.empty(0, np.int64)

    tags, tag_maps = _global_codes(_phase_tags(files, rel, notes))
    plugins, plugin_maps = _global_codes([f.plugins for f in files])

    def cat(attr: str, dtype: Any) -> np.ndarray:
        parts = [getattr(f, attr) for f in files]
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    v_event = np.concatenate([f.v_event + offsets[i] for i, f in enumerate(files)]) if files \
        else np.empty(0, np.int64)
    v_tag = np.concatenate([tag_maps[i][f.v_tag] for i, f in enumerate(files)]) if files \
        else np.empty(0, np.int64)
    v_plugin = np.concatenate(
        [np.where(f.v_plugin >= 0, plugin_maps[i][np.maximum(f.v_plugin, 0)] if len(plugin_maps[i])
                  else -1, -1) for i, f in enumerate(files)]
    ) if files else np.empty(0, np.int64)
    v_kind, v_value = cat("v_kind", np.int64), cat("v_value", np.float64)
    v_ok, v_class = cat("v_scalar_ok", bool), cat("v_data_class", np.int64)
    v_meta = cat("v_has_meta", bool)

    # a tag's plugin is named by its first value that carries metadata (EventAccumulator's rule)
    nt = len(tags)
    tag_plugin = np.full(nt, -1, np.int64)
    tag_class = np.zeros(nt, np.int64)
    with_meta = np.flatnonzero(v_meta)
    if len(with_meta):
        rev = with_meta[::-1]
        tag_plugin[v_tag[rev]] = v_plugin[rev]
        tag_class[v_tag[rev]] = v_class[rev]
    scalar_plugin = plugins.index(SCALARS_PLUGIN) if SCALARS_PLUGIN in plugins else -2
    hparams_plugin = plugins.index(HPARAMS_PLUGIN) if HPARAMS_PLUGIN in plugins else -2
    scalar_tag = (tag_plugin == scalar_plugin) | ((tag_plugin == -1) & (tag_class == DATA_CLASS_SCALAR))

    is_tensor_scalar = (v_kind == V_TENSOR) & scalar_tag[v_tag] if nt else np.zeros(0, bool)
    point = (v_kind == V_SIMPLE) | (is_tensor_scalar & v_ok)
    bad_tensor = is_tensor_scalar & ~v_ok
    if bad_tensor.any():
        names = sorted({tags[t] for t in np.unique(v_tag[bad_tensor]).tolist()})
        notes.append(
            f"{int(bad_tensor.sum())} tensor value(s) of scalar tags skipped: not exactly one "
            f"number ({_clip(names)})"
        )

    p = np.flatnonzero(point)
    p_event = v_event[p]
    p_tag = v_tag[p]
    p_step = ev_step[p_event]

    meta: dict[str, Any] = {}
    events: list[RunEvent] = []
    p_simple = v_kind[p] == V_SIMPLE
    args = (files, offsets, ev_step, ev_sum, ev_status, v_event, v_tag, p_event, p_tag, p_step,
            p_simple, tags)
    if purge == "keep":  # keep everything, and say what either TensorBoard reader would hide
        would = [note for mode in ("tensorboard", "accumulator")
                 for _keep, note in [_purge(mode, *args)] if note]
        if would:
            notes.append("kept all points; " + " | ".join(would)
                         + "; address ?purge=tensorboard or ?purge=accumulator to drop them")
    else:
        keep, orphan_note = _purge(purge, *args)
        if orphan_note:
            notes.append(f"purge={purge}: dropped " + orphan_note)
        p, p_event, p_tag, p_step = p[keep], p_event[keep], p_tag[keep], p_step[keep]

    data = RunData(
        step=p_step.astype(np.float64),
        key=p_tag,
        keys=tags,
        value=v_value[p],
        wall_time=ev_wall[p_event],
    )
    notes.extend(_order_notes(data, p_event, ev_file, files, rel, events, purge))
    notes.extend(_session_notes(files, offsets, ev_status, ev_step, ev_wall, ev_file, rel, events))

    # listing what is not loaded
    listing = _non_scalar(v_kind, v_tag, v_plugin, point | bad_tensor, tags, plugins, hparams_plugin)
    others: dict[str, int] = {}
    for f in files:
        for k, n in f.other_records.items():
            others[k] = others.get(k, 0) + n
    if listing or others:
        meta["non_scalar"] = listing
        if others:
            meta["other_records"] = others
        parts = [f"{kind}: {_clip(sorted(t for t, d in listing.items() if d['kind'] == kind))}"
                 for kind in sorted({d["kind"] for d in listing.values()})]
        parts += [f"{k}: {n} record(s)" for k, n in sorted(others.items())]
        notes.append("not loaded (non-scalar data, listed in meta.non_scalar): " + "; ".join(parts))

    config = _config(files, offsets, notes, meta)
    if len(files) > 1:
        notes.append(f"{len(files)} event files merged in file-name order (TensorBoard's order)")
    fvs = sorted({t for f in files for _r, t in f.file_versions})
    writers = sorted({w for f in files for w in f.source_writers})
    meta.update(
        {
            "event_files": [
                {"file": rel(f.path), "bytes": f.framing.size, "records": f.n_records,
                 "events": len(f.step)}
                | ({"truncated_tail": f.framing.truncated_tail} if f.framing.truncated_tail else {})
                for f in files
            ],
            "file_version": fvs[0] if len(fvs) == 1 else fvs,
            "purge": purge,
        }
    )
    if log_damage:
        meta["log_damage"] = log_damage  # per file: byte ranges, records skipped, repeats dropped
    if writers:
        meta["source_writer"] = writers[0] if len(writers) == 1 else writers
    data.config, data.notes, data.events, data.meta = config, notes, events, meta
    return data


def _phase_tags(files: list[FileEvents], rel: Any, notes: list[str]) -> list[list[str]]:
    """Each file's tags, a tag shared with a file of another phase named by its file in both.

    A later event file that brings mostly tags of its own and shares only a few with the files
    before it is another phase of the run, not the same stream resumed: Lightning's
    `trainer.test` writes `test_*` tags and its own `epoch` into a second file beside
    `trainer.fit`'s. Its shared tags (`epoch`) are kept apart, `<file>/<tag>` in each file that
    holds them: two files' values are never joined into one series. A file whose tags are
    mostly the earlier files' (a restart, a resume) continues their series, as TensorBoard
    merges them."""
    holders: dict[str, list[int]] = {}
    apart: set[tuple[int, str]] = set()
    for i, f in enumerate(files):
        mine = set(f.tags)
        shared = {t for t in mine if t in holders}
        if shared and len(shared) < len(mine - shared):
            apart |= {(j, t) for t in shared for j in [*holders[t], i]}
        for t in mine:
            holders.setdefault(t, []).append(i)
    if not apart:
        return [f.tags for f in files]
    shown = sorted({t for _i, t in apart})
    notes.append(f"{_clip(shown)} in event files of different phases (a later file with tags "
                 "mostly its own): kept apart, each named by its file (`<file>/<tag>`), never "
                 "joined into one series")
    return [[f"{os.path.basename(rel(f.path))}/{t}" if (i, t) in apart else t for t in f.tags]
            for i, f in enumerate(files)]


def _clip(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f", … ({len(names) - n} more)" if len(names) > n else "")


DAMAGE_NOTES = 5  # damaged stretches told one by one per file; the rest in one sum


def _damage_notes(f: FileEvents, name: str) -> list[str]:
    """What one file's damage cost, said as found: one note per damaged stretch (its bytes, the
    records seen in it and not read, the bytes that frame no record, repeats dropped after it),
    the truncated tail, unparseable records, and the good records kept."""
    fr = f.framing
    notes = [_stretch_note(name, d) for d in fr.damage[:DAMAGE_NOTES]]
    more = fr.damage[DAMAGE_NOTES:]
    if more:
        counted = sum(d.skipped for d in more)
        unframed = sum(d.unframed for d in more)
        notes.append(f"{name}: {len(more)} more damaged stretch(es), {sum(d.size for d in more):,} "
                     f"byte(s) in all; {counted:,} record(s) skipped (their CRCs fail)"
                     + (f"; {unframed:,} byte(s) in which no record can be framed" if unframed else "")
                     + (f"; {sum(d.repeated for d in more):,} repeated record(s) dropped"
                        if any(d.repeated for d in more) else ""))
    if fr.truncated_tail:
        notes.append(f"{name}: truncated record at the end skipped ({fr.truncated_tail} bytes from "
                     f"byte {fr.size - fr.truncated_tail:,}: a record begun and not finished — a "
                     "writer still running, or stopped mid-write)")
    if f.unparseable:
        notes.append(f"{name}: {f.unparseable} unparseable record(s) skipped (their CRCs check, "
                     "their bytes are not an Event)")
    if notes:
        notes[-1] += f"; {len(f.step):,} good record(s) kept"
    return notes


def _stretch_note(name: str, d: Damage) -> str:
    what = f"{name}: bytes {d.start:,}–{d.end:,} unreadable ({d.size:,} byte(s)"
    if d.zero_bytes == d.size:
        what += ", all zero"
    elif 2 * d.zero_bytes >= d.size:
        what += f", {d.zero_bytes:,} of them zero"
    what += ")"
    if d.seam >= 0:
        what += (f"; the seam of a repeated region: from byte {d.seam:,} the file repeats the "
                 f"{d.shift:,} byte(s) before it, so the record begun here is read whole in the "
                 "repeat; no record lost")
    else:
        kinds = []
        if d.bad_data:
            kinds.append(f"{d.bad_data:,} whose header checks but whose data CRC fails")
        if d.bad_header:
            kinds.append(f"{d.bad_header:,} whose header is damaged but whose data CRC checks")
        if kinds:
            what += f"; {d.skipped:,} record(s) skipped ({', '.join(kinds)})"
        if d.unframed:
            what += (f"; {'' if not kinds else 'and '}{d.unframed:,} byte(s) in which no record can be framed"
                     " — the records lost there, if any, cannot be counted (TFRecord does not "
                     "number its records)")
        elif not kinds:
            what += "; no record lost"
        if d.overrun:
            what += (f"; the last of them claims {d.overrun:,} byte(s) past the next good record's "
                     "start, so bytes are missing here (removed), and the records they held cannot "
                     "be counted")
    if d.gave_up:
        what += (f"; the search for the next record whose CRCs check gave up (its budget spent): "
                 f"the last {d.size:,} byte(s) of the file were not read")
    elif d.at_end:
        what += "; no record whose CRCs check after them (the end of the file)"
    else:
        what += "; reading resumed at the next record whose CRCs check"
    if d.repeated:
        what += (f"; the {d.repeated:,} record(s) after them repeat, byte for byte, records already "
                 f"read ({d.shift:,} byte(s) earlier: a repeated region) and were dropped")
    return what


def _order_notes(data: RunData, p_event: np.ndarray, ev_file: np.ndarray, files: list[FileEvents],
                 rel: Any, events: list[RunEvent], purge: str) -> list[str]:
    """Duplicate steps and steps going backwards, per tag, counted and kept."""
    n = len(data.step)
    if n < 2:
        return []
    codes = data.key
    small = codes.astype(np.int16) if len(data.keys) < 2**15 else codes
    order = np.argsort(small, kind="stable")
    k, s = codes[order], data.step[order]
    same = k[1:] == k[:-1]
    d = s[1:] - s[:-1]
    back = same & (d < 0)
    if not back.any() and not (same & (d == 0)).any():
        return []
    notes = []
    dup = _repeats(codes, data.step)
    if dup.any():
        per = np.bincount(codes[dup], minlength=len(data.keys))
        top = [f"{data.keys[i]} {per[i]}" for i in np.argsort(-per, kind="stable") if per[i]]
        notes.append(f"duplicate steps kept: {int(dup.sum())} point(s) repeat an earlier step of "
                     f"their tag ({_clip(top)})")
    if back.any():
        rows_to = order[1:][back]  # points whose step is below their tag's previous point
        rows_from = order[:-1][back]
        per = np.bincount(codes[rows_to], minlength=len(data.keys))
        ev_rows = p_event[rows_to]
        first_of_event = np.unique(ev_rows, return_index=True)[1]
        examples = []
        for j in first_of_event[:MAX_EVENTS].tolist():
            r_to, r_from = int(rows_to[j]), int(rows_from[j])
            payload = {"key": data.keys[int(codes[r_to])], "from_step": float(data.step[r_from]),
                       "file": rel(files[int(ev_file[p_event[r_to]])].path)}
            events.append(RunEvent("rollback", step=float(data.step[r_to]),
                                   time=float(data.wall_time[r_to]), payload=payload))
            if len(examples) < 3:
                examples.append(f"{payload['key']} {_fmt(payload['from_step'])}→"
                                f"{_fmt(float(data.step[r_to]))}")
        more = len(first_of_event) - MAX_EVENTS
        top = [f"{data.keys[i]} {per[i]}×" for i in np.argsort(-per, kind="stable") if per[i]]
        how = (f"what purge={purge} left is kept" if purge != "keep"
               else "all points kept (keep-all); ?purge=tensorboard applies TensorBoard's "
               "purge_orphaned_data")
        notes.append(f"step went backwards (restart/rollback) at {len(first_of_event)} event(s): "
                     f"{_clip(top)}; e.g. {', '.join(examples)}; {how}"
                     + (f"; {more} more rollback event(s) not listed in events" if more > 0 else ""))
    return notes


def _repeats(codes: np.ndarray, step: np.ndarray) -> np.ndarray:
    """True for each point whose (tag, step) pair appeared earlier (what DataFrame.duplicated says)."""
    n = len(step)
    out = np.zeros(n, dtype=bool)
    if n < 2:
        return out
    order = np.lexsort((np.arange(n), step, codes))  # by tag, then step, then logged position
    k, s = codes[order], step[order]
    same = (k[1:] == k[:-1]) & ((s[1:] == s[:-1]) | (np.isnan(s[1:]) & np.isnan(s[:-1])))
    out[order[1:][same]] = True
    return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def _session_notes(files: list[FileEvents], offsets: np.ndarray, status: np.ndarray,
                   step: np.ndarray, wall: np.ndarray, ev_file: np.ndarray, rel: Any,
                   events: list[RunEvent]) -> list[str]:
    """SessionLog START/STOP/CHECKPOINT as run events; a START after the first is a restart."""
    idx = np.flatnonzero(status > 0)
    if not len(idx):
        return []
    paths = {}
    for i, f in enumerate(files):
        for row, path in f.checkpoints:
            paths[int(offsets[i] + row)] = path
    starts = 0
    listed = 0
    for e in idx.tolist():
        st = int(status[e])
        kind = {SESSION_START: "start", SESSION_STOP: "stop", SESSION_CHECKPOINT: "checkpoint"}.get(st)
        if kind is None:
            continue
        if st == SESSION_START:
            starts += 1
            kind = "start" if starts == 1 else "restart"
        if listed < MAX_EVENTS:
            payload: dict[str, Any] = {"source": "SessionLog", "file": rel(files[int(ev_file[e])].path)}
            if e in paths:
                payload["checkpoint_path"] = paths[e]
            events.append(RunEvent(kind, step=float(step[e]), time=float(wall[e]), payload=payload))
            listed += 1
    if starts > 1:
        return [f"SessionLog START seen {starts} times: {starts - 1} restart(s), listed in events"]
    return []


def _non_scalar(kind: np.ndarray, tag: np.ndarray, plugin: np.ndarray, loaded: np.ndarray,
                tags: list[str], plugins: list[str], hparams_plugin: int) -> dict[str, dict[str, Any]]:
    """Tags of values that are not scalar points: what they are and how many were logged."""
    rest = np.flatnonzero(~loaded & (kind != 0))
    if not len(rest):
        return {}
    out: dict[str, dict[str, Any]] = {}
    # the plugin of a tag, from its first value that names one
    first_plugin = np.full(len(tags), -1, np.int64)
    named = np.flatnonzero(plugin >= 0)
    first_plugin[tag[named[::-1]]] = plugin[named[::-1]]
    t_codes, counts = np.unique(tag[rest], return_counts=True)
    for t, c in zip(t_codes.tolist(), counts.tolist(), strict=True):
        if first_plugin[t] == hparams_plugin:
            continue  # read into the config
        kinds = np.unique(kind[rest][tag[rest] == t]).tolist()
        k = KIND_NAMES.get(int(kinds[-1]), "other")
        plug = plugins[first_plugin[t]] if first_plugin[t] >= 0 else None
        label = {"histograms": "histogram", "images": "image", "audio": "audio",
                 "pr_curves": "pr_curve", "text": "text", "mesh": "mesh"}.get(plug or "", None)
        entry: dict[str, Any] = {"kind": label or (plug if k == "tensor" and plug else k),
                                 "points": int(c)}
        if plug:
            entry["plugin"] = plug
        out[tags[t]] = entry
    return out


def _config(files: list[FileEvents], offsets: np.ndarray, notes: list[str],
            meta: dict[str, Any]) -> dict[str, Any]:
    """hparams plugin session_start_info → config (the first, as TensorBoard shows it)."""
    starts: list[tuple[dict[str, Any], dict[str, Any]]] = []
    metrics: list[str] = []
    undecodable = 0
    for f in files:
        for _row, tag, content in f.hparams:
            if tag.endswith("session_start_info"):
                got = hparams_config(content)
                if got is None:
                    undecodable += 1
                else:
                    starts.append(got)
            elif tag.endswith("experiment"):
                for m in hparams_metrics(content):
                    if m not in metrics:
                        metrics.append(m)
    if undecodable:
        notes.append(f"{undecodable} hparams session_start_info record(s) could not be decoded")
    if metrics:
        meta["hparams_metrics"] = metrics
    if not starts:
        return {}
    config, info = starts[0]
    if info:
        meta["hparams_session"] = info
    if any(c != config for c, _i in starts[1:]):
        notes.append(f"hparams session_start_info logged {len(starts)} times with different "
                     "values; config is the first (as TensorBoard shows it)")
    return config


def _purge(mode: str, files: list[FileEvents], offsets: np.ndarray, ev_step: np.ndarray,
           ev_sum: np.ndarray, ev_status: np.ndarray, v_event: np.ndarray, v_tag: np.ndarray,
           p_event: np.ndarray, p_tag: np.ndarray, p_step: np.ndarray, p_simple: np.ndarray,
           tags: list[str]) -> tuple[np.ndarray, str | None]:
    """Which points TensorBoard's purge_orphaned_data keeps, under one of its two rule sets.

    Both: while the latest file_version is >= 2, a SessionLog START purges every earlier point
    whose step is >= the START's step; before that (old files), an event with a summary whose
    step is below the "most recent step" purges earlier points of the tags it carries with step
    >= its step.

    - "tensorboard" (plugin_event_accumulator, TensorBoard's server): the first START is not a
      restart; the most recent step is the previous summary event's; every scalar is purged
      (simple_value and tensor-encoded alike).
    - "accumulator" (event_accumulator.EventAccumulator, also what tbparse runs): every START
      purges; the most recent step is that of the last event that did not trigger a purge;
      only simple_value scalars are purged (its tensors are never purged).
    """
    n_ev = len(ev_step)
    keep = np.ones(len(p_event), bool)
    if not n_ev or not len(p_event):
        return keep, None
    fv = np.full(n_ev, np.nan)
    for i, f in enumerate(files):
        for row, text in f.file_versions:
            v = parse_file_version(text)
            if v is not None:
                fv[offsets[i] + row] = v
    seen = np.where(np.isnan(fv), 0, np.arange(n_ev))  # forward-fill the last file_version
    np.maximum.accumulate(seen, out=seen)
    filled = fv[seen]
    new_mode = np.nan_to_num(filled, nan=0.0) >= 2  # NaN (no file_version yet) is False
    starts = np.flatnonzero(new_mode & (ev_status == SESSION_START))
    if mode == "tensorboard":
        starts = starts[1:]
        # the most recent step: that of the last event before this one that held a summary
        last = np.maximum.accumulate(np.where(ev_sum, np.arange(n_ev), -1))
        before = np.concatenate([[-1], last[:-1]])
        prev = np.where(before >= 0, ev_step[np.maximum(before, 0)], -1)
        ooo = np.flatnonzero(~new_mode & ev_sum & (ev_step < prev))
        target = np.ones(len(p_event), bool)
    else:
        old = np.flatnonzero(~new_mode)
        ooo_list: list[int] = []
        # a trigger needs a step below an earlier old-mode step: skip the walk when none is
        if len(old) and (ev_step[old][1:] < np.maximum.accumulate(ev_step[old])[:-1]).any():
            recent = -1
            for e, step, has in zip(old.tolist(), ev_step[old].tolist(), ev_sum[old].tolist(),
                                    strict=True):
                if has and step < recent:
                    ooo_list.append(e)
                else:
                    recent = step
        ooo = np.asarray(ooo_list, dtype=np.int64)
        target = p_simple
    big = np.iinfo(np.int64).max
    if len(starts):
        trig = np.full(n_ev + 1, big, np.int64)
        trig[starts] = ev_step[starts]
        after = np.minimum.accumulate(trig[::-1])[::-1][p_event + 1]  # min over later STARTs
        keep &= ~target | (p_step < after)
    if len(ooo):
        in_ooo = np.isin(v_event, ooo)
        for t in np.unique(v_tag[in_ooo]).tolist():
            t_ev = np.unique(v_event[in_ooo & (v_tag == t)])
            suffix = np.minimum.accumulate(ev_step[t_ev][::-1])[::-1]
            sel = np.flatnonzero((p_tag == t) & target)
            pos = np.searchsorted(t_ev, p_event[sel], side="right")  # triggers strictly later
            bound = np.full(len(sel), big, np.int64)
            has = pos < len(t_ev)
            bound[has] = suffix[pos[has]]
            keep[sel] &= p_step[sel] < bound
    dropped = int((~keep).sum())
    if not dropped:
        return keep, None
    per = np.bincount(p_tag[~keep], minlength=len(tags))
    top = [f"{tags[i]} {per[i]}" for i in np.argsort(-per, kind="stable") if per[i]]
    why = []
    if len(starts):
        why.append(f"{len(starts)} SessionLog START(s)")
    if len(ooo):
        why.append(f"{len(ooo)} out-of-order step event(s)")
    return keep, (f"{dropped} point(s) orphaned by restarts under purge_orphaned_data with "
                  f"{PURGE_RULES[mode]} rules ({', '.join(why)}; {_clip(top)})")
