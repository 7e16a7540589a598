"""WandbSource: local W&B runs (logs, run folders, `wandb/` folders) or, online, wandb.Api.

`wandb:PATH` reads files on disk with rundiff's own log reader (no wandb needed);
`wandb:ENTITY/PROJECT[/RUN_ID]` goes online through `wandb.Api` (see online.py). Construction
picks the right class, so the registry names one source for the scheme.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from rundiff_core import (
    Address,
    BaseSource,
    HistoryColumns,
    InputError,
    Run,
    RunEvent,
    RunNotFoundError,
    RunRef,
    seed_from_config,
)

from .address import is_online
from .datastore import LogData, LogFormatError, fold_summary_at, read_log
from .layout import LocalRun, discover
from .reader import SegmentData, assemble, summary_of


class WandbSource(BaseSource):
    """Local W&B runs. `WandbSource(address)` returns an OnlineWandbSource for online addresses."""

    def __new__(cls, address: Address) -> BaseSource:
        if cls is WandbSource and is_online(address.locator):
            from .online import OnlineWandbSource

            return OnlineWandbSource(address)  # not a WandbSource, so Python skips __init__ below
        return super().__new__(cls)

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        locator = address.locator or "."
        self.root = os.path.abspath(os.path.expanduser(locator))
        if not os.path.exists(self.root):
            raise InputError(
                f"no such W&B run, run folder or wandb/ folder: {locator}",
                hint="give a .wandb file, a run-*/offline-run-* folder, a wandb/ folder, or "
                "wandb:ENTITY/PROJECT[/RUN_ID] for a run on a W&B server",
            )
        self._runs: dict[str, LocalRun] | None = None
        self._logs: dict[str, tuple[tuple[Any, ...], SegmentData]] = {}  # path → (stamp, segment)

    # -- listing --------------------------------------------------------------------------------
    def _found(self) -> dict[str, LocalRun]:
        if self._runs is None:
            runs = discover(self.root)
            if not runs and os.path.isfile(self.root):
                raise InputError(f"{self.root} is not a W&B transaction log",
                                 hint="a .wandb file starts with ':W&B'; check the path")
            self._runs = {r.address: r for r in runs}
        return self._runs

    def list_runs(self) -> list[RunRef]:
        return [RunRef(run_id=r.run_id, address=r.address, name=r.run_id)
                for r in self._found().values()]

    def collection(self, ref: RunRef) -> str | None:
        """The folder holding the run's folder (a `wandb/` directory), where its seeds are."""
        seg = self._local(ref).segments[-1]
        where = seg.folder or seg.log
        return f"wandb:{os.path.dirname(os.path.normpath(where))}" if where else None

    def _local(self, ref: RunRef) -> LocalRun:
        found = self._found().get(ref.address)
        if found is None:
            raise RunNotFoundError(f"no W&B run {ref.run_id!r} at {ref.address}",
                                   hint="run `rundiff ls` on the folder to see its runs")
        return found

    # -- decoding (cached per log file, keyed by its size and mtime) --------------------------------
    def _segment(self, log_path: str, folder: str | None) -> SegmentData:
        try:
            st = os.stat(log_path)
        except OSError as exc:
            raise InputError(f"cannot read {log_path}: {exc.strerror}") from exc
        stamp = (st.st_mtime, st.st_size)
        cached = self._logs.get(log_path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            log: LogData = read_log(log_path, summary=False)
        except LogFormatError as exc:
            if folder is None or not os.path.isdir(os.path.join(folder, "files")):
                raise InputError(f"{log_path} is not a readable W&B transaction log: {exc}",
                                 hint="a .wandb file starts with ':W&B' and magic 0xBEE1") from exc
            # an empty or foreign log (a run killed before its first write) beside files/: the
            # run is still what files/ says, as for a folder committed without its log
            seg = _files_only(folder)
            seg.notes.insert(0, f"{os.path.basename(log_path)} is not a readable W&B transaction "
                             f"log ({exc}): the run is read from files/ alone")
            self._logs[log_path] = (stamp, seg)
            return seg
        except OSError as exc:
            raise InputError(f"cannot read {log_path}: {exc.strerror}") from exc
        verified, read_at = log.verified, log.stamp  # the closure keeps the stamps, not the log
        payloads = log.summary_payloads  # the closure keeps their offsets, not the decoded log
        seg = assemble(log, folder,
                       summary_loader=lambda: _fold_summary(log_path, verified, payloads, read_at))
        self._logs[log_path] = (stamp, seg)
        return seg

    def _files_segment(self, folder: str) -> SegmentData:
        """A log-less folder's segment, cached like a log's: keyed by the stamp of its files/
        (the console log it may read its history from is parsed once, not per call)."""
        files = os.path.join(folder, "files")
        try:
            stamp = tuple((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in
                          sorted(os.scandir(files), key=lambda e: e.name) if e.is_file())
        except OSError:
            stamp = ()
        cached = self._logs.get(folder)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        seg = _files_only(folder)
        self._logs[folder] = (stamp, seg)
        return seg

    def _segments(self, run: LocalRun) -> list[tuple[SegmentData, str]]:
        out = []
        for s in run.segments:
            if s.log is None:
                out.append((self._files_segment(s.folder or ""), s.folder or ""))
            else:
                out.append((self._segment(s.log, s.folder), s.log))
        return out

    # -- the run ----------------------------------------------------------------------------------
    def load_run(self, ref: RunRef) -> Run:
        local = self._local(ref)
        parts = self._segments(local)
        last = parts[-1][0]
        runinfo: dict[str, Any] = {}
        config: dict[str, Any] = {}
        env: dict[str, Any] = {}
        notes: list[str] = []
        events: list[RunEvent] = []
        for seg, _where in parts:
            runinfo.update({k: v for k, v in seg.run.items() if v not in (None, "", [])})
            config.update(seg.config)
            env.update(seg.environment)
            events.extend(seg.events)
        if len(parts) > 1:
            where = ", ".join(os.path.basename(os.path.dirname(p)) or p for _s, p in parts)
            notes.append(f"resumed run: {len(parts)} sittings merged in time order ({where})")
            for i, (seg, _p) in enumerate(parts[1:], start=1):
                if not any(e.kind == "resume" for e in seg.events):
                    events.append(RunEvent("resume", step=seg.info.get("first_step")))
                first, before = seg.info.get("first_step"), parts[i - 1][0].last_step
                if first is not None and before is not None and first <= before:
                    notes.append(f"sitting {i + 1} starts at step {first:g}, at or before sitting "
                                 f"{i}'s last step {before:g}: steps overlap (kept as logged; an "
                                 "offline resume cannot know where the run stopped)")
        for i, (seg, _p) in enumerate(parts):
            prefix = f"sitting {i + 1}: " if len(parts) > 1 else ""
            notes.extend(prefix + n for n in seg.notes)
        metadata = next((s.info.get("metadata") for s, _p in reversed(parts) if s.info.get("metadata")), {})
        git = runinfo.get("git") or env.pop("git", None) or metadata.get("git") or {}
        env.pop("git", None)
        for k in ("program", "host", "os", "python", "executable", "cuda"):
            if k in metadata and k not in env:
                env[k] = metadata[k]
        if isinstance(metadata.get("args"), list) and "args" not in env:
            env["args"] = metadata["args"]
        name = runinfo.get("display_name") or ref.run_id
        seed = seed_from_config(config)
        meta = {
            "run_id": runinfo.get("run_id", ref.run_id),
            "entity": runinfo.get("entity"),
            "project": runinfo.get("project"),
            "group": runinfo.get("group"),
            "job_type": runinfo.get("job_type"),
            "tags": runinfo.get("tags", []),
            "notes": runinfo.get("notes"),
            "sweep_id": runinfo.get("sweep_id"),
            "start_time": parts[0][0].run.get("start_time") or _started_at(metadata),
            "resumed": bool(runinfo.get("resumed")) or len(parts) > 1,
            "resume_mode": runinfo.get("resume"),
            "starting_step": runinfo.get("starting_step"),
            "exit": last.exit,
            "logs": [p for _s, p in parts],
            "producer": last.info.get("producer"),
            "records": last.info.get("records"),
            "wandb_internal": last.internal.get("config"),
        }
        if runinfo.get("branch_point"):
            meta["fork"] = runinfo["branch_point"]
        damage = {os.path.basename(p): seg.info["log_damage"] for seg, p in parts if seg.info.get("log_damage")}
        if damage:
            meta["log_damage"] = damage  # per log: byte ranges, records lost, repeats dropped, shift
        run = Run(
            address=local.address,
            name=name,
            run_id=ref.run_id,
            adapter="wandb",
            config=config,
            status=last.status,
            seed=seed,
            git_sha=git.get("commit") or None,
            env=env,
            events=events,
            fidelity=notes,
            meta={k: v for k, v in meta.items() if v not in (None, [], {})},
        )
        segs = [seg for seg, _p in parts]
        if any(s.summary_loader for s in segs):
            run.defer_summary(lambda: _merged_summary(segs, run))
        else:
            run.summary = _merged_summary(segs, run)
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> HistoryColumns:
        """The run's points as columns (sittings in order, keys in first-logged order); `keys`
        keeps those keys' rows and every key name, as filtering the frame would."""
        local = self._local(ref)
        parts = [seg.history for seg, _p in self._segments(local) if len(seg.history)]
        if not parts:
            return HistoryColumns.empty()
        if len(parts) == 1:
            cols = parts[0]
        else:
            names = list(dict.fromkeys(k for p in parts for k in p.keys))
            at = {k: i for i, k in enumerate(names)}
            codes = np.concatenate([np.asarray([at[k] for k in p.keys], dtype=np.int32)[p.key_codes]
                                    for p in parts])
            cols = HistoryColumns(np.concatenate([p.step for p in parts]), codes, names,
                                  np.concatenate([p.value for p in parts]),
                                  np.concatenate([p.wall_time for p in parts]))
        if keys is None:
            return cols
        wanted = set(keys)
        rows = np.isin(cols.key_codes, [i for i, k in enumerate(cols.keys) if k in wanted])
        return HistoryColumns(cols.step[rows], cols.key_codes[rows], cols.keys, cols.value[rows],
                              cols.wall_time[rows])


def _fold_summary(log_path: str, verified: tuple[int, int, int, int] | None = None,
                  payloads: tuple[Any, Any] | None = None,
                  read_at: tuple[int, int, int, int] | None = None) -> dict[str, Any]:
    """The summary, folded when first read: from the summary payloads the first read located, if
    the file is still the one it read (`read_at`, damaged or not); else by reading the log again
    (trusting its CRCs only if it framed clean then: `verified`)."""
    stamp = read_at or verified
    if payloads is not None and stamp is not None:
        updates = fold_summary_at(log_path, payloads, stamp)
        if updates is not None:
            return summary_of(updates)
    log = read_log(log_path, history=False, verified=verified)
    return summary_of(log.summary_updates or {})


def _merged_summary(segs: list[SegmentData], run: Run) -> dict[str, Any]:
    """Later sittings' summaries over earlier ones; a log gone since is a note."""
    summary: dict[str, Any] = {}
    for seg in segs:
        if seg.summary_loader is not None:
            try:
                seg.summary = seg.summary_loader()
            except (OSError, LogFormatError) as exc:
                run.note(f"summary unavailable: the log could not be re-read ({exc})")
                seg.summary = {}
            seg.summary_loader = None
        summary.update(seg.summary)
    return summary


def _files_only(folder: str) -> SegmentData:
    """A run folder with files/ but no .wandb log (the log was deleted after syncing)."""
    from .reader import read_run_files

    files = read_run_files(folder)
    history, said = _console_history(folder)
    seg = SegmentData(history=history, config=dict(files.get("config", {})),
                      summary=dict(files.get("summary", {})))
    seg.internal["config"] = seg.config.pop("_wandb", None)
    seg.internal["summary"] = seg.summary.pop("_wandb", None)
    seg.notes = list(files.get("notes", [])) + said
    if files.get("metadata"):
        seg.info["metadata"] = files["metadata"]
    return seg


def _console_history(folder: str) -> tuple[HistoryColumns, list[str]]:
    """A synced run folder committed without its `.wandb` log often keeps `files/output.log`,
    wandb's copy of the console: where it holds a training log the local adapter's text reader
    knows (HF Trainer dicts, torchtune, fairseq, `key: value` lines), that is the run's history,
    said so; otherwise the run has none."""
    console = os.path.join(folder, "files", "output.log")
    none = "no .wandb transaction log in this run folder: no history (config and summary come from files/)"
    if not os.path.isfile(console):
        return HistoryColumns.empty(), [none]
    from rundiff_adapters.local.textlog import read_text_log, sniff_text

    grammar = sniff_text(console)
    frame, notes = read_text_log(console, grammar) if grammar is not None else (None, [])
    if frame is None or not len(frame):
        return HistoryColumns.empty(), [none + "; files/output.log holds no training log rundiff reads"]
    return HistoryColumns.from_frame(frame), [
        "no .wandb transaction log in this run folder: history read from files/output.log (the "
        "console wandb captured), not from logged history; config and summary come from files/",
        *notes]


def _started_at(metadata: dict[str, Any]) -> float | None:
    text = metadata.get("startedAt")
    if not isinstance(text, str):
        return None
    import pandas as pd  # only for a run whose log has no start time (a files-only folder)

    try:
        return pd.Timestamp(text).tz_localize("UTC").timestamp() if pd.Timestamp(
            text).tzinfo is None else pd.Timestamp(text).timestamp()
    except ValueError:
        return None
