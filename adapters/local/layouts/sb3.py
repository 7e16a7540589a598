"""Stable-Baselines3 logger folders: `progress.csv` and the `*monitor.csv` files of its envs."""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun
from rundiff_core import read_config_yaml as read_yaml
from rundiff_core import read_json_file as read_json

from ..common import Meta, subdirs
from ..lazy import np, pd
from ..sniff import Sniff, read_columns, read_head, row_lines, to_long

if TYPE_CHECKING:
    from ..columns import Columns


def claim(folder: LayoutFolder) -> Claimed | None:
    monitors = [f for f in folder.files if f.endswith("monitor.csv")]
    if not (folder.has("progress.csv") or monitors):
        return None
    what = (["progress.csv"] if folder.has("progress.csv") else []) + (
        [f"{len(monitors)} monitor file(s)"] if monitors else [])
    return Claimed([LayoutRun(folder.path, "sb3", [folder.join(f) for f in folder.files],
                              "Stable-Baselines3 logger: " + ", ".join(what))])


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    monitors = sorted(f for f in spec.files if f.endswith("monitor.csv"))
    info: dict[str, Any] = {}
    for f in monitors:
        head = read_head(f, 4096).split(b"\n", 1)[0]
        if head.startswith(b"#"):
            try:
                info = json.loads(head[1:])
            except ValueError:
                out.notes.append(f"{os.path.basename(f)}: comment line is not JSON")
            break
    env_id = info.get("env_id") if isinstance(info, dict) else None
    cfg_dirs = [spec.path] + ([os.path.join(spec.path, str(env_id))] if env_id else [])
    cfg_dirs += [os.path.join(spec.path, d) for d in subdirs(spec.path)
                 if os.path.isfile(os.path.join(spec.path, d, "config.yml"))]
    for d in dict.fromkeys(cfg_dirs):
        for name in ("args.yml", "config.yml", "config.yaml", "config.json"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                data = read_json(p, out.notes) if name.endswith(".json") else read_yaml(p, out.notes)
                if isinstance(data, dict):
                    key = "hyperparams" if name == "config.yml" else None
                    if key:
                        out.config[key] = data
                    else:
                        out.config.update(data)
                    out.notes.append(f"{os.path.relpath(p, spec.path)} → config"
                                     + (f".{key}" if key else ""))
    if env_id:
        out.config.setdefault("env_id", env_id)
    parts = []
    if os.path.join(spec.path, "progress.csv") in spec.files:
        parts.append("progress.csv → history (x = time/total_timesteps)")
    if monitors:
        parts.append(f"{len(monitors)} Monitor file(s) → episode/reward, episode/length")
    out.notes[:0] = parts
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    frames, notes = [], []
    progress = os.path.join(spec.path, "progress.csv")
    if progress in spec.files:
        f, n = progress_history(progress)
        frames.append(f)
        notes += n
    monitors = sorted(f for f in spec.files if f.endswith("monitor.csv"))
    if monitors:
        f, n = monitor_history(monitors)
        frames.append(f)
        notes += n
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else rundiff_core.empty_history()), notes


# -- SB3's CSV files through the shared table reader ------------------------------------------------
def _sniff(path: str, columns: list[str] | None = None) -> Sniff | None:
    """SB3's CSV writers: `#` comment lines (Monitor's JSON), then a comma-separated header line
    — or, given `columns`, a header line damage made unreadable, read as a row of these columns
    (a bad line among the rows). None when the file has no header line."""
    lines = read_head(path, 1 << 16).decode("utf-8", errors="replace").split("\n")
    comments = list(itertools.takewhile(lambda ln: ln.startswith("#"), lines))
    rest = [ln for ln in lines[len(comments):-1] if ln.strip()]
    if not rest:
        return None
    header = columns or [h.strip() for h in next(csv.reader([rest[0].rstrip("\r")]), [])]
    return Sniff(",", header=header, comments=comments, headerless=columns is not None)


def _read(path: str, columns: list[str] | None = None
          ) -> tuple[Columns, Callable[[np.ndarray], list[int]], list[str]] | None:
    """A CSV SB3 wrote, through the shared reader: its columns (a column is numbers while it holds
    one; SB3 ends every line, so a last line without its line end is being written), the file
    lines of rows (found when a note names one) and notes naming each line and cell skipped."""
    sniff = _sniff(path, columns)
    if sniff is None:
        return None
    cols, _ = read_columns(path, sniff, bad_share=1.0, whole_lines=True)
    found: list[np.ndarray] = []

    def lines(rows: np.ndarray) -> list[int]:
        if not found:
            found.append(row_lines(path, cols, sniff))
        return found[0][rows].tolist()

    name, notes = os.path.basename(path), []
    if cols.ragged:
        shown = "; ".join(f"line {n}: {c} of {len(sniff.header)} cells ({_quote(t)})"
                          for n, t, c in cols.ragged[:3])
        notes.append(f"{name}: {len(cols.ragged)} line(s) with the wrong number of cells skipped "
                     f"({shown}{_more(cols.ragged)})")
    if cols.partial:
        notes.append(f"{name}: the last line ({_quote(cols.partial[1])}, line {cols.partial[0]}) has "
                     "no line end yet — half-written, as a live run's last line is; skipped")
    if cols.cells:
        at = lines(np.asarray([r for r, _, _ in cols.cells], dtype=np.int64))
        bad = sorted((n, c, v) for n, (_, c, v) in zip(at, cols.cells, strict=True))
        shown = "; ".join(f"line {n} {c}={_quote(v)}" for n, c, v in bad[:3])
        notes.append(f"{name}: {len(bad)} cell(s) not a number skipped ({shown}{_more(bad)})")
    cols.bad, cols.labels = {}, {}  # said above, line by line; SB3 writes no label column
    return cols, lines, notes


def _more(items: list) -> str:
    return f" and {len(items) - 3} more" if len(items) > 3 else ""


def _shown(lines: list[int]) -> str:
    return f"{', '.join(map(str, lines[:5]))}{' …' if len(lines) > 5 else ''}"


def _column(cols: Columns, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    if name not in cols.names:
        return None
    j = cols.names.index(name)
    return cols.values[j], cols.valid[j]


def _quote(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 40 else text[:37] + "...")


def progress_history(path: str) -> tuple[pd.DataFrame, list[str]]:
    """SB3's `progress.csv` (its CSV logger: one row per dump, a header rewritten as keys appear)
    into the long history, x = time/total_timesteps. Empty cells are not points; logged
    `nan`/`inf` are; a row whose x is empty, not a number, NaN or infinite gives no points, counted."""
    name = os.path.basename(path)
    read = _read(path)
    if read is None:
        return rundiff_core.empty_history(), [f"{name}: no header line; skipped"]
    cols, lines, notes = read
    step = STEP if STEP in cols.names else None
    if step is not None:
        x, ok = _column(cols, step)
        bad_x = ok & ~np.isfinite(x)
        if bad_x.any():
            at = lines(bad_x)
            notes.append(f"{name}: {len(at)} row(s) whose {step} is {_cell_kinds(x[bad_x], ok[bad_x])} skipped "
                         f"(line {_shown(at)}): an x that is not a finite number places no point")
            cols.valid = [v & np.isfinite(x) if n == step else v
                          for n, v in zip(cols.names, cols.valid, strict=True)]
    frame, more = to_long(cols, name, step=step, described="CSV")
    return frame, notes + more


STEP = "time/total_timesteps"


def monitor_history(paths: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """SB3 Monitor files of one run (one per parallel env) merged into episode series.

    x is the env steps done when each episode ended, summed over envs in end-time order (the
    `t` column is seconds since the file's `t_start`, so end time = t_start + t). A bad line or
    cell costs its own episode or point, never the file: an episode whose time is empty, not a
    number, NaN or infinite gives no points and is never a sort key — its steps still count in
    x, right after the episode before it in its file (a Monitor file is written in order); one
    whose length is unreadable gives no points and its steps cannot count; a bad reward loses
    the reward point alone.
    """
    notes: list[str] = []
    ends, keys, rewards, lengths, r_ok, l_ok, t_ok = [], [], [], [], [], [], []
    files = 0
    tables = {p: _read(p) for p in paths}
    known = next((_sniff(p).header for p, t in tables.items()
                  if t is not None and all(_column(t[0], c) is not None for c in ("r", "l", "t"))), None)
    starts = {p: _t_start(p) for p in paths}
    good_starts = [t for t, why in starts.values() if why is None]
    for p in paths:
        name = os.path.basename(p)
        t_start, why = starts[p]
        if why is not None and good_starts:
            # the run's other files started within moments of this one (one process, one clock):
            # their earliest start puts this file's episodes in the run's time order
            t_start = min(good_starts)
            notes.append(f"{name}: comment line {why}; its start taken as the run's other Monitor "
                         "files' earliest t_start")
        elif why is not None:
            notes.append(f"{name}: comment line {why}; times relative")
        read = tables[p]
        if read is None:
            notes.append(f"{name}: no header line; not a Monitor CSV; skipped")
            continue
        cols = {c: _column(read[0], c) for c in ("r", "l", "t")}
        if any(v is None for v in cols.values()) and known and _damaged(_sniff(p).header):
            # the header line is damaged (bytes zeroed or garbled); every Monitor file of a run
            # is written by the same wrapper, so its rows have the columns of its siblings
            read = _read(p, columns=known)
            assert read is not None
            read[2].insert(0, f"{name}: header line unreadable (damaged); its rows read with "
                              f"the columns of the run's other Monitor files ({','.join(known)}), "
                              "the damaged line skipped")
            cols = {c: _column(read[0], c) for c in ("r", "l", "t")}
        if any(v is None for v in cols.values()):
            notes.append(f"{name}: lacks r,l,t columns; skipped")
            continue
        _, lines, more = read
        notes += more
        (r, rv), (ln, lv), (t, tv) = cols["r"], cols["l"], cols["t"]
        good_t = tv & np.isfinite(t)
        good_l = lv & np.isfinite(ln) & (ln >= 0)
        if (~good_t).any():
            at = lines(~good_t)
            kinds = _cell_kinds(t[~good_t], tv[~good_t])
            notes.append(f"{name}: {len(at)} episode(s) whose time t is {kinds} skipped (line "
                         f"{_shown(at)}); a time that is not a finite number is never a sort key: "
                         "each one's steps still count in x, after the episode before it in this file")
        lost_l = ~good_l & good_t
        if lost_l.any():
            at = lines(lost_l)
            notes.append(f"{name}: {len(at)} episode(s) whose length l is {_cell_kinds(ln[lost_l], lv[lost_l])} "
                         f"skipped (line {_shown(at)}); their steps are unknown, so x after them is "
                         "short by that many")
        # the sort key: the end time, or for an episode without one, the last end time before it
        end = np.where(good_t, t + t_start, np.nan)
        key = end.copy()
        if (~good_t).any():
            idx = np.where(good_t, np.arange(end.size), -1)
            np.maximum.accumulate(idx, out=idx)
            key = np.where(idx >= 0, end[np.maximum(idx, 0)], -np.inf)
        ends.append(end)
        keys.append(key)
        rewards.append(r)
        lengths.append(ln)
        r_ok.append(rv)
        l_ok.append(good_l)
        t_ok.append(good_t)
        files += 1
    if not ends:
        return rundiff_core.empty_history(), notes
    key = np.concatenate(keys)
    order = np.argsort(key, kind="stable")
    end, r, ln = np.concatenate(ends)[order], np.concatenate(rewards)[order], np.concatenate(lengths)[order]
    rv, lv, tv = np.concatenate(r_ok)[order], np.concatenate(l_ok)[order], np.concatenate(t_ok)[order]
    step = np.cumsum(np.where(lv, ln, 0.0))
    has_x = tv & lv
    rew = has_x & rv
    n_r, n_l = int(rew.sum()), int(has_x.sum())
    codes = np.concatenate([np.zeros(n_r, dtype=np.int32), np.ones(n_l, dtype=np.int32)])
    key_cat = pd.Categorical.from_codes(codes, categories=["episode/reward", "episode/length"])
    frame = rundiff_core.make_history(np.concatenate([step[rew], step[has_x]]), key_cat,
                                      np.concatenate([r[rew], ln[has_x]]),
                                      np.concatenate([end[rew], end[has_x]]))
    total = int(end.size)
    skipped = total - n_l
    notes.append(f"{files} Monitor file(s) read as CSV after their JSON comment line; {total} episodes"
                 + (f" ({skipped} of them without points, above)" if skipped else "")
                 + "; x = env steps summed over envs at each episode's end (unfinished episodes "
                 "are never written)")
    if n_l - n_r:
        notes.append(f"{n_l - n_r} episode(s) whose reward r is not a number: their reward point "
                     "skipped, their length kept")
    return frame, notes


def _t_start(path: str) -> tuple[float, str | None]:
    """A Monitor file's `t_start` from its `#{...}` comment line, or (0, what is wrong with it)."""
    head = read_head(path, 4096).split(b"\n", 1)[0]
    if not head.startswith(b"#"):
        return 0.0, "missing or damaged"
    try:
        t = float(json.loads(head[1:]).get("t_start", 0.0))
    except (ValueError, AttributeError, TypeError):
        return 0.0, "is not JSON"
    return (t, None) if math.isfinite(t) else (0.0, "has a t_start that is not a finite number")


def _damaged(header: list[str]) -> bool:
    """A header line damage made unreadable: NUL bytes, bytes that are not UTF-8, or no name at all."""
    text = "".join(header)
    return not text.strip() or "\x00" in text or "\ufffd" in text


def _cell_kinds(values: np.ndarray, valid: np.ndarray) -> str:
    kinds = set()
    for v, ok in zip(values.tolist(), valid.tolist(), strict=True):
        kinds.add(("NaN" if math.isnan(v) else "infinite" if math.isinf(v) else "negative") if ok
                  else "empty or not a number")
    return " or ".join(sorted(kinds))
