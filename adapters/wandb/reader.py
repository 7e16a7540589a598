"""Turn decoded `.wandb` logs (and an online run folder's files/) into the core model's pieces.

Decisions, all documented in docs/adapters/wandb.md:
- Nested keys (`run.log({"train": {"loss": x}})` arrives as the key list ["train", "loss"]) are
  joined with `/`, so they meet the flat `train/loss` keys most W&B users log.
- A row's step is `record.step.num` when the row carries one, else its `_step` item when that is
  a number, else the previous row's step + 1 (from the run's `starting_step`): the rule wandb's
  own sender applies. `_timestamp` is the wall time. `_step`, `_timestamp`, `_runtime` and
  `_wandb/*` are bookkeeping, not metrics.
- Numbers (and bare NaN/±Infinity) are points; booleans count as 1/0; text, null, lists and
  media/objects (images, histograms, tables) are not metrics and are counted in a fidelity note.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rundiff_core import (
    HistoryColumns,
    RunEvent,
    YamlRefused,
    load_yaml_plain,
)

from .datastore import LogData
from .values import loads, nest

LIVE_SECONDS = 600  # a log without an exit record written to this recently is still running


@dataclass
class SegmentData:
    """One log (one sitting of a run) assembled: history frame plus metadata and notes."""

    history: HistoryColumns  # as columns: `rundiff ls` and the one-metric engines never need pandas
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    exit: dict[str, Any] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    internal: dict[str, Any] = field(default_factory=dict)  # config/summary `_wandb`
    notes: list[str] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    status: str = "unknown"
    last_step: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    summary_loader: Callable[[], dict[str, Any]] | None = None


# -- history ----------------------------------------------------------------------------------
def history_frame(log: LogData, starting_step: float = 0.0) -> tuple[HistoryColumns, list[str], dict]:
    """Every numeric point of a decoded log as the canonical long history (in columns; keys in
    first-logged order), plus notes and step facts."""
    h = log.history
    notes: list[str] = []
    nrec = h.rows
    info: dict[str, Any] = {"rows": nrec}
    if nrec == 0:
        return HistoryColumns.empty(), notes, info
    step = h.record_step.copy()
    has_record_step = ~np.isnan(step)
    both = has_record_step & ~np.isnan(h.item_step)
    differ = int(np.count_nonzero(both & (h.item_step != step)))
    if differ:
        notes.append(f"{differ} history row(s) carry a _step item that disagrees with the "
                     "record's step; the record's step is used")
    step = np.where(has_record_step, step, h.item_step)
    if h.bad_steps:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(h.bad_steps.items()))
        notes.append(f"{sum(h.bad_steps.values())} history row(s) have a _step that is not a number "
                     f"({kinds}); those rows are numbered after the previous row")
    known = ~np.isnan(step)
    n_auto = int(nrec - np.count_nonzero(known))
    if n_auto:
        idx = np.arange(nrec)
        last = np.maximum.accumulate(np.where(known, idx, -1))
        base = np.where(last >= 0, step[np.maximum(last, 0)], starting_step - 1)
        step = np.where(known, step, base + (idx - last))
    info["auto_rows"] = n_auto
    info["explicit_rows"] = nrec - n_auto
    info["first_step"] = float(step[0])
    info["last_step"] = float(step[-1])
    info["max_step"] = float(np.nanmax(step))

    names = h.names
    skipped: dict[str, dict[str, int]] = {}
    for idx_, kind in h.others:
        if kind != "bool":
            per = skipped.setdefault(names[h.code[idx_]], {})
            per[kind] = per.get(kind, 0) + 1
    if skipped:
        shown = "; ".join(
            f"{k} ({', '.join(f'{n} {kind}' for kind, n in sorted(v.items()))})"
            for k, v in sorted(skipped.items())[:8]
        )
        more = f" and {len(skipped) - 8} more key(s)" if len(skipped) > 8 else ""
        notes.append(f"non-numeric values not loaded as points: {shown}{more}")

    keep = h.ok
    kept_codes = h.code[keep]
    used, first_at = np.unique(kept_codes, return_index=True)
    order = used[np.argsort(first_at)]  # categories in first-logged order
    remap = np.full(max(len(names), 1), -1, dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    rows = h.row[keep]
    frame = HistoryColumns(step=step[rows], key_codes=remap[kept_codes],
                           keys=[names[c] for c in order], value=h.value[keep],
                           wall_time=h.wall_time[rows])
    return frame, notes, info


# -- one segment ------------------------------------------------------------------------------
def summary_of(updates: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """Folded summary updates (key paths → value JSON) as nested values, wandb's `_wandb` dropped."""
    summary = nest([(k, loads(v)) for k, v in updates.items() if v is not None])
    summary.pop("_wandb", None)
    return summary


def assemble(log: LogData, folder: str | None, *, now: float | None = None,
             summary_loader: Callable[[], dict[str, Any]] | None = None) -> SegmentData:
    """A decoded log plus its folder's files as config, summary, status, notes and history.

    A log decoded without its summary fold (`read_log(summary=False)`) gets `summary_loader`,
    called when the summary is first read.
    """
    run = dict(log.run)
    starting = float(run.get("starting_step", 0) or 0)
    frame, notes, info = history_frame(log, starting_step=starting)
    seg = SegmentData(history=frame, run=run, exit=log.exit, environment=dict(log.environment),
                      notes=notes, info=info)
    if log.producer:
        seg.info["producer"] = log.producer
    seg.info["records"] = dict(log.record_counts)

    # config: the log's updates in order; an online folder's config.yaml fills what the log lacks
    pairs: list[tuple[tuple[str, ...], Any]] = []
    for op, key, raw in log.config_updates:
        if op == "update":
            pairs.append((key, loads(raw)))
        else:
            pairs = [(k, v) for k, v in pairs if k[: len(key)] != key]
    config = nest(pairs)
    files = read_run_files(folder) if folder else {}
    for key, value in files.get("config", {}).items():
        config.setdefault(key, value)
    seg.internal["config"] = config.pop("_wandb", None)
    seg.config = config

    file_summary = files.get("summary")
    if log.summary_updates is None and log.record_counts.get("summary") and summary_loader:
        seg.summary_loader = summary_loader  # folded when first read
    else:
        summary = summary_of(log.summary_updates or {})
        if not summary and isinstance(file_summary, dict):
            summary = {k: v for k, v in file_summary.items() if k != "_wandb"}
            seg.info["summary_source"] = "wandb-summary.json"
        seg.summary = summary
    if files.get("metadata"):
        seg.info["metadata"] = files["metadata"]
    for note in files.get("notes", []):
        notes.append(note)

    # framing damage
    st = log.stats
    log_name = os.path.basename(log.path)  # a folder can hold several logs: name the damaged one
    if st.torn_records or st.torn_tail_bytes:
        notes.append(
            f"{log_name}: torn end of log: the last {st.torn_tail_bytes:,} byte(s) hold {st.torn_records} record(s) "
            "begun but never finished (the writer stopped mid-record: a live run, or a copy made "
            "while it wrote); read up to the last whole record"
        )
    if log.header_damaged:
        notes.append(f"{log_name}: bytes 0–7, the W&B header, damaged (a few bits off ':W&B' 0xBEE1 "
                     "version 0); the chunks after it are CRC-valid, read as version 0")
    notes += damage_notes(log_name, st)
    if st.damage:
        seg.info["log_damage"] = [
            {"bytes": [list(r) for r in d.ranges], "records_lost": d.lost, "first_lost": d.first_lost,
             "repeated_dropped": d.repeated, "shift": d.shift} for d in st.damage]
    if st.bad_records:
        notes.append(f"{log_name}: {st.bad_records} record(s) whose CRC held but whose protobuf "
                     "did not parse, skipped")

    # steps
    if info["rows"] and info.get("explicit_rows", 0) == 0:
        if run.get("resume"):
            notes.append("resume mode with no steps in the log: the server numbers these rows after "
                         "the resumed run's last step, which the log does not record; numbered from "
                         f"{starting:g} in logged order")
        else:
            notes.append("rows carry no step (newer writers leave auto steps to the sender, and "
                         f"shared-mode runs have none): numbered {starting:g}, {starting + 1:g}, … "
                         "in logged order, as wandb's sender does")
    seg.last_step = info.get("max_step")

    # status
    if log.exit is not None:
        code = log.exit.get("exit_code", 0)
        seg.status = "finished" if code == 0 and not log.exit.get("not_complete") else "crashed"
        if seg.status == "crashed":
            notes.append(f"the run exited with code {code}"
                         + (f" after {log.exit['runtime']} s" if log.exit.get("runtime") else ""))
    else:
        age = (now or time.time()) - os.path.getmtime(log.path)
        where = f" at step {seg.last_step:g}" if seg.last_step is not None else ""
        if age < LIVE_SECONDS and not st.damage:
            seg.status = "running"
            notes.append(f"no exit record yet: the run is still writing its log (last write "
                         f"{age:.0f} s ago); the history is preliminary")
        elif st.torn_records:
            seg.status = "unknown"
            notes.append(f"no exit record: the log ends in a torn record{where} — the writer stopped "
                         "mid-write (the process was killed, or the file was copied while the run was live)")
        elif st.damage and st.damage[-1].at_end:
            seg.status = "unknown"
            notes.append(f"no exit record: the last whole record is{where}, and the bytes after it are "
                         "damaged (above): whether the run finished cannot be told from this copy")
        elif st.damage and any(d.lost != 0 for d in st.damage):
            seg.status = "unknown"
            notes.append(f"no exit record: the log ends on a whole record{where}; the records lost to "
                         "the damage above may have held it, so whether the run finished cannot be told")
        else:
            seg.status = "unknown"
            notes.append(f"no exit record: the log ends on a whole record{where} without the run "
                         "finishing (the process stopped before wandb wrote its exit record — killed, "
                         "or the file was copied while the run was live)")
        if log.preempting:
            notes.append("the run was preempted")
    if not info["rows"]:
        notes.append("no history: the run logged no metrics"
                     + (" before it crashed" if seg.status == "crashed" else ""))

    # the summary may claim more than the log holds (a log cut mid-run)
    claim = (file_summary or {}).get("_step") if isinstance(file_summary, dict) else None
    if isinstance(claim, int | float) and not isinstance(claim, bool):
        have = seg.last_step
        if have is None or claim > have:
            notes.append(
                f"wandb-summary.json claims step {claim:g} but the log holds history "
                + (f"only to step {have:g}" if have is not None else "for no step")
                + ": this copy of the log is incomplete"
            )
            seg.info["summary_claims_step"] = claim

    # events
    if run.get("resumed"):  # the server resumed it (`resume` alone is only the mode asked for)
        seg.events.append(RunEvent("resume", step=info.get("first_step", starting),
                                   time=run.get("start_time"),
                                   payload={"starting_step": run.get("starting_step", 0)}))
    if run.get("branch_point"):
        bp = run["branch_point"]
        seg.events.append(RunEvent("fork", step=bp.get("value"), payload=dict(bp)))
    if log.exit is not None and seg.status == "crashed":
        seg.events.append(RunEvent("crash", step=seg.last_step, payload=dict(log.exit)))
    if log.preempting:
        seg.events.append(RunEvent("preempted", step=seg.last_step))
    return seg


DAMAGE_NOTES = 5  # damaged stretches told one by one; the rest in one sum


def damage_notes(log_name: str, st) -> list[str]:
    """One note per damaged stretch of a log (`FrameStats.damage`): where it is, how many bytes,
    what the records either side say was lost, and whether what follows was shifted or repeated."""
    out = []
    for d in st.damage[:DAMAGE_NOTES]:
        where = " and ".join(f"{a:,}–{b:,}" for a, b in d.ranges)
        what = f"{log_name}: bytes {where} unreadable ({d.size:,} byte(s){', all zero' if d.zeros else ''}"
        what += "; no valid chunk starts there, reading resumed at the next one)"
        if d.lost is not None:
            if d.lost == 0:
                what += "; no record lost"
            else:
                last = d.first_lost + d.lost - 1
                nums = f"number {d.first_lost:,}" if d.lost == 1 else f"numbers {d.first_lost:,}–{last:,}"
                what += f"; {d.lost:,} record(s) skipped ({nums})"
        elif d.at_end:
            what += "; no whole record after it, so the records there cannot be counted"
        else:
            what += "; the records there cannot be counted (this writer does not number its records)"
        if d.repeated:
            what += (f"; the {d.repeated:,} record(s) after it repeat records just before it (a "
                     "repeated region) and were dropped")
        if d.shift > 0:
            what += f"; what follows is {d.shift:,} byte(s) later than the block grid before it (bytes inserted"
            what += " or repeated)" if not d.repeated else " by the repeat)"
        elif d.shift < 0:
            what += f"; what follows is {-d.shift:,} byte(s) earlier than the block grid before it (bytes removed)"
        out.append(what)
    more = st.damage[DAMAGE_NOTES:]
    if more:
        lost = [d.lost for d in more]
        counted = sum(x for x in lost if x is not None)
        out.append(f"{log_name}: {len(more)} more damaged stretch(es), {sum(d.size for d in more):,} "
                   f"byte(s) in all; {counted:,} record(s) skipped"
                   + (" that could be counted" if None in lost else ""))
    cut = st.cut_records + st.orphan_chunks
    if cut and any(d.lost is None for d in st.damage):
        out.append(f"{log_name}: {cut} record(s) cut by the damage (their other chunks unreadable) dropped")
    return out


# -- an online run folder's files/ ----------------------------------------------------------------
def read_run_files(folder: str) -> dict[str, Any]:
    """files/config.yaml (unwrapped from {desc, value}), wandb-summary.json, wandb-metadata.json."""
    out: dict[str, Any] = {"notes": []}
    files = os.path.join(folder, "files")
    cfg = os.path.join(files, "config.yaml")
    if os.path.isfile(cfg):
        try:
            with open(cfg, "rb") as fh:
                data = load_yaml_plain(fh.read(), "files/config.yaml")
            if isinstance(data, dict):
                data.pop("wandb_version", None)
                out["config"] = {
                    k: (v["value"] if isinstance(v, dict) and "value" in v and set(v) <= {"desc", "value"}
                        else v)
                    for k, v in data.items()
                }
        except YamlRefused as exc:
            out["notes"].append(f"{exc}; config ignored")
        except Exception as exc:  # yaml errors of any kind: degrade, never crash
            out["notes"].append(f"files/config.yaml unreadable ({type(exc).__name__}); ignored")
    for name, slot in (("wandb-summary.json", "summary"), ("wandb-metadata.json", "metadata")):
        p = os.path.join(files, name)
        if not os.path.isfile(p):
            continue
        try:
            with open(p, "rb") as fh:
                obj = json.loads(fh.read() or b"{}")
            if isinstance(obj, dict):
                out[slot] = obj
        except ValueError:
            out["notes"].append(f"files/{name} is not valid JSON; ignored")
    return out
