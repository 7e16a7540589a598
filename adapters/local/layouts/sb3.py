"""Stable-Baselines3 logger folders: `progress.csv` and the `*monitor.csv` files of its envs."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun
from rundiff_core import read_config_yaml as read_yaml
from rundiff_core import read_json_file as read_json

from ..common import Meta, subdirs
from ..lazy import np, pd
from ..sniff import read_head


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


# -- reading a CSV a damaged line or cell at a time ------------------------------------------------
class Table:
    """A CSV's numeric columns: `values` (float64), `valid` (the cell holds a number — `nan` and
    `inf` written out count), the 1-based `line` of each row, and what was skipped, said in
    `notes`: lines with the wrong number of cells (a half-written last line), cells that are not
    numbers, columns with no number at all."""

    def __init__(self, names: list[str]) -> None:
        self.header = list(names)  # the header line's names, in order
        self.names = names
        self.values: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []
        self.line = np.empty(0, dtype=np.int64)
        self.text: list[str] = []
        self.notes: list[str] = []

    def column(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        if name not in self.names:
            return None
        j = self.names.index(name)
        return self.values[j], self.valid[j]

    @property
    def rows(self) -> int:
        return int(self.line.size)


_NUMBERS = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf,
            "-inf": -math.inf, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def _number(cell: str) -> float | None:
    """A cell's number (None: empty or not a number)."""
    text = cell.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return _NUMBERS.get(text.lower())


def read_csv(path: str, columns: list[str] | None = None) -> Table | None:
    """A comma-separated log with a header line (after `#` comment lines), every row that has as
    many cells as the header; None when the file has no header line. Never drops the file for a
    bad line or cell: each is skipped and counted, with its line number, in `Table.notes`. A last
    line without its line end is a line still being written (a live run's normal state): skipped
    and said so. `columns`, for a file whose header line damage made unreadable: every line after
    the comments is a row of these columns (the damaged header then a bad line among them)."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        table = Table([])
        table.notes.append(f"{name}: unreadable ({exc.strerror}); skipped")
        return table
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    partial = lines.pop() if lines else ""  # after the last line end: a line being written
    first = 0
    while first < len(lines) and (lines[first].startswith("#") or not lines[first].strip()):
        first += 1
    if first >= len(lines):
        return None
    if columns is not None:
        header, first = list(columns), first - 1
    else:
        header = [h.strip() for h in _cells(lines[first].rstrip("\r"))]
    if not partial.strip() and columns is None:
        fast = _read_fast(data, first, header)
        if fast is not None:
            return fast
    table = Table(header)
    width = len(header)
    cells: list[list[str]] = []
    line_no: list[int] = []
    ragged: list[tuple[int, str, int]] = []
    for i in range(first + 1, len(lines)):
        raw = lines[i].rstrip("\r")
        if not raw.strip():
            continue
        row = _cells(raw)
        if len(row) != width:
            ragged.append((i + 1, raw, len(row)))
            continue
        cells.append(row)
        line_no.append(i + 1)
    table.line = np.asarray(line_no, dtype=np.int64)
    if ragged:
        shown = "; ".join(f"line {n}: {len(c)} of {width} cells ({_quote(t)})" for n, t, c in
                          ((n, t, _cells(t)) for n, t, _w in ragged[:3]))
        more = f" and {len(ragged) - 3} more" if len(ragged) > 3 else ""
        table.notes.append(f"{name}: {len(ragged)} line(s) with the wrong number of cells skipped ({shown}{more})")
    if partial.strip():
        table.notes.append(f"{name}: the last line ({_quote(partial)}, line {len(lines) + 1}) has no line "
                           "end yet — half-written, as a live run's last line is; skipped")
    bad: list[tuple[int, str, str]] = []  # (line, column, cell)
    for j, col in enumerate(header):
        vals = np.full(len(cells), np.nan)
        ok = np.zeros(len(cells), dtype=bool)
        wrong: list[int] = []
        for r, row in enumerate(cells):
            v = _number(row[j])
            if v is not None:
                vals[r], ok[r] = v, True
            elif row[j].strip():
                wrong.append(r)
        if wrong and not ok.any():
            table.text.append(col)  # a text column, not numbers with damage
            continue
        bad += [(line_no[r], col, cells[r][j]) for r in wrong]
        table.values.append(vals)
        table.valid.append(ok)
    table.names = [h for h in header if h not in table.text]
    if bad:
        bad.sort()
        shown = "; ".join(f"line {n} {c}={_quote(v)}" for n, c, v in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        table.notes.append(f"{name}: {len(bad)} cell(s) not a number skipped ({shown}{more})")
    return table


def _read_fast(data: bytes, first: int, header: list[str]) -> Table | None:
    """`read_csv` for a file with nothing to skip, in pyarrow's C++ reader: None (the careful
    line-by-line read decides) at the first thing it cannot vouch for — a quote, a blank line,
    a line with the wrong number of cells, a column that is not all numbers."""
    start = 0
    for _ in range(first + 1):
        start = data.index(b"\n", start) + 1
    rest = data[start:]
    if b'"' in rest or b"\n\n" in rest or b"\n\r\n" in rest or len(set(header)) != len(header):
        return None
    body = memoryview(data)[start:]
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        arrow = pacsv.read_csv(pa.BufferReader(body), read_options=pacsv.ReadOptions(
            column_names=header, block_size=8 << 20), parse_options=pacsv.ParseOptions(delimiter=","),
            convert_options=pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    table = Table(list(header))
    for col in arrow.columns:
        typ = col.type
        if pa.types.is_null(typ):
            values, valid = np.full(len(col), np.nan), np.zeros(len(col), dtype=bool)
        elif pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ):
            valid = col.is_valid().to_numpy(zero_copy_only=False)
            values = col.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            values[~valid] = np.nan
        else:
            return None  # text: bad cells, or a text column — the careful read tells which
        table.values.append(values)
        table.valid.append(valid)
    table.line = np.arange(arrow.num_rows, dtype=np.int64) + first + 2
    return table


def _cells(line: str) -> list[str]:
    if '"' not in line:
        return line.split(",")
    import csv

    return next(csv.reader([line]), [])


def _quote(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 40 else text[:37] + "...")


def progress_history(path: str) -> tuple[pd.DataFrame, list[str]]:
    """SB3's `progress.csv` (its CSV logger: one row per dump, a header rewritten as keys appear)
    into the long history, x = time/total_timesteps. Empty cells are not points; logged
    `nan`/`inf` are; a row whose x is empty, not a number, NaN or infinite gives no points, counted."""
    name = os.path.basename(path)
    table = read_csv(path)
    if table is None:
        return rundiff_core.empty_history(), [f"{name}: no header line; skipped"]
    from ..columns import Columns
    from ..sniff import to_long

    notes = list(table.notes)
    step = STEP if STEP in table.names else None
    if step is not None:
        x, ok = table.column(step)
        bad_x = ok & ~np.isfinite(x)
        if bad_x.any():
            lines = table.line[bad_x].tolist()
            notes.append(f"{name}: {len(lines)} row(s) whose {step} is {_kinds(x[bad_x])} skipped "
                         f"(line {', '.join(map(str, lines[:5]))}{' …' if len(lines) > 5 else ''}): "
                         "an x that is not a finite number places no point")
            j = table.names.index(step)
            table.valid[j] = ok & np.isfinite(x)
    cols = Columns(table.names, table.values, table.valid, table.text, table.rows)
    frame, more = to_long(cols, name, step=step, described="CSV")
    return frame, notes + more


STEP = "time/total_timesteps"


def _kinds(values: np.ndarray) -> str:
    kinds = sorted({"NaN" if math.isnan(v) else "infinite" for v in values.tolist()})
    return " or ".join(kinds)


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
    tables = {p: read_csv(p) for p in paths}
    known = next((t.header for t in tables.values()
                  if t is not None and all(t.column(c) is not None for c in ("r", "l", "t"))), None)
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
        table = tables[p]
        if table is None:
            notes.append(f"{name}: no header line; not a Monitor CSV; skipped")
            continue
        cols = {c: table.column(c) for c in ("r", "l", "t")}
        if any(v is None for v in cols.values()) and known and _damaged(table.header):
            # the header line is damaged (bytes zeroed or garbled); every Monitor file of a run
            # is written by the same wrapper, so its rows have the columns of its siblings
            table = read_csv(p, columns=known)
            assert table is not None
            table.notes.insert(0, f"{name}: header line unreadable (damaged); its rows read with "
                                  f"the columns of the run's other Monitor files ({','.join(known)}), "
                                  "the damaged line skipped")
            cols = {c: table.column(c) for c in ("r", "l", "t")}
        if any(v is None for v in cols.values()):
            notes.append(f"{name}: lacks r,l,t columns; skipped")
            continue
        notes += table.notes
        (r, rv), (ln, lv), (t, tv) = cols["r"], cols["l"], cols["t"]
        good_t = tv & np.isfinite(t)
        good_l = lv & np.isfinite(ln) & (ln >= 0)
        if (~good_t).any():
            lines = table.line[~good_t].tolist()
            kinds = _cell_kinds(t[~good_t], tv[~good_t])
            notes.append(f"{name}: {len(lines)} episode(s) whose time t is {kinds} skipped (line "
                         f"{', '.join(map(str, lines[:5]))}{' …' if len(lines) > 5 else ''}); a time "
                         "that is not a finite number is never a sort key: each one's steps still "
                         "count in x, after the episode before it in this file")
        lost_l = ~good_l & good_t
        if lost_l.any():
            lines = table.line[lost_l].tolist()
            notes.append(f"{name}: {len(lines)} episode(s) whose length l is {_cell_kinds(ln[lost_l], lv[lost_l])} "
                         f"skipped (line {', '.join(map(str, lines[:5]))}{' …' if len(lines) > 5 else ''}); "
                         "their steps are unknown, so x after them is short by that many")
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
