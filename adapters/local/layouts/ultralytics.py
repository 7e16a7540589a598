"""Ultralytics YOLO train folders: `results.csv` beside `args.yaml` (YOLOv8, v10, YOLO11) or
`opt.yaml` + `hyp.yaml` (YOLOv5), with the TensorBoard `events.out.tfevents.*` file Ultralytics'
callback writes into the same folder.

- history: `results.csv`, one row per epoch. Header names and cells are padded with spaces by
  the v5 and v8.0–8.2 writers (`%23s`; names of 20+ characters get no padding, so YOLOv5's
  `metrics/mAP_0.5,metrics/mAP_0.5:0.95` look glued together): stripped. x = the `epoch` column
  as logged: YOLOv5 counts from 0, v8+ from 1. YOLO11's `time` column (cumulative seconds since
  the start) stays a key of its own.
- the events file belongs to the run (so `local:` outranks `tb:` for such folders, see
  `adapters/local/__init__.py`): it is read, lazily, through `rundiff_core.load_run("tb:…")`.
  Its tags that duplicate a results.csv column are not added twice (results.csv is the history;
  the events file gives those points their wall time); tags the CSV lacks are added.
- config: `args.yaml` as written (v8+: hyperparameters at top level), or `opt.yaml` with
  `hyp.yaml` under `hyp` (where YOLOv5 ≥ 6 also nests it inside opt.yaml).
- status: unknown — nothing in the folder says whether training finished.
- groups: the `metrics/` columns are what Ultralytics' validator reports on the val split after
  each epoch (`yolo val` prints the same): declared downstream, so `compare` and `diff` lead with
  them rather than with a loss. `train/` and `val/` losses stay proxies.
- headline: Ultralytics keeps `best.pt` by fitness, 0.1·mAP50 + 0.9·mAP50-95. Fitness itself is
  not in the file; when the header has exactly one mAP50-95 column (detect; YOLOv5's
  `metrics/mAP_0.5:0.95`), that column, fitness's main term, is declared the headline (goal max).
  Segment and pose runs log two (box and mask/pose, and fitness adds both), classify runs log
  top-1 and top-5: nothing is declared and the headline rule of `rundiff_core.engines.primary`
  decides among the downstream columns. The vocabulary gives `*_loss` min.
"""

from __future__ import annotations

import os
import re

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import np, pd
from ..sniff import read_columns, sniff_table, to_long
from .common import Meta, count_rows, files_beside, read_yaml, run_dir

RESULTS = "results.csv"


def is_events_file(name: str) -> bool:
    """TensorBoard's rule for its event files (`tfevents` in the name, no profile stubs)."""
    return "tfevents" in name and not name.endswith(".profile-empty")


def _header_ok(head: bytes) -> bool:
    """False only when results.csv opens with a readable CSV header whose first name is not
    `epoch` (someone else's results.csv); a damaged or empty file is still this layout's."""
    line = head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf").strip()
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    if "," not in text or not text.isprintable():
        return True
    return text.split(",", 1)[0].strip() == "epoch"


def _run_for(path: str, files: list[str], folder: str) -> LayoutRun | None:
    names = set(files)
    if RESULTS not in names:
        return None
    config = "args.yaml" if "args.yaml" in names else "opt.yaml" if "opt.yaml" in names else None
    if config is None:
        return None
    try:
        with open(os.path.join(folder, RESULTS), "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    if not _header_ok(head):
        return None
    events = sorted(f for f in files if is_events_file(f))
    writer = "YOLOv8+ (args.yaml)" if config == "args.yaml" else \
        "YOLOv5 (opt.yaml" + (" + hyp.yaml)" if "hyp.yaml" in names else ")")
    reason = f"Ultralytics {writer}: results.csv" + (
        f" + {len(events)} TensorBoard events file(s) of the same run" if events else "")
    mine = [RESULTS, config] + [f for f in ("hyp.yaml",) if f in names and config == "opt.yaml"]
    return LayoutRun(path, "ultralytics", [os.path.join(folder, f) for f in mine + events], reason,
                     {"owns_events": events})


def claim(folder: LayoutFolder) -> Claimed | None:
    run = _run_for(folder.path, folder.files, folder.path)
    if run is None:
        return None
    return Claimed([run], {"weights"})


def claim_file(path: str) -> list[LayoutRun] | None:
    """`results.csv` given alone: the train folder it sits in, when args.yaml/opt.yaml is beside."""
    if os.path.basename(path) != RESULTS:
        return None
    folder, files = files_beside(path)
    run = _run_for(path, files, folder)
    return [run] if run is not None else None


def _last_part(path: object) -> str:
    return re.split(r"[\\/]", str(path).rstrip("\\/"))[-1] if path else ""


def meta(run: LayoutRun) -> Meta:
    out = Meta()
    d = run_dir(run)
    args, opt, hyp = (os.path.join(d, n) for n in ("args.yaml", "opt.yaml", "hyp.yaml"))
    if os.path.isfile(args):
        data = read_yaml(args, out.notes)
        if isinstance(data, dict):
            out.config = data
            out.notes.append("args.yaml (Ultralytics v8+ train arguments, hyperparameters at top "
                             "level) → config")
        elif data is not None:
            out.notes.append("args.yaml: not a mapping; no config")
    elif os.path.isfile(opt):
        data = read_yaml(opt, out.notes)
        if isinstance(data, dict):
            out.config = data
            out.notes.append("opt.yaml (YOLOv5 train options) → config")
        elif data is not None:
            out.notes.append("opt.yaml: not a mapping; no config")
        if os.path.isfile(hyp):
            h = read_yaml(hyp, out.notes)
            if isinstance(h, dict):
                before = out.config.get("hyp")
                out.config["hyp"] = h
                if isinstance(before, dict) and before != h:
                    diff = sorted(k for k in set(before) | set(h) if before.get(k) != h.get(k))
                    out.notes.append("hyp.yaml → config.hyp (it differs from opt.yaml's hyp in "
                                     f"{', '.join(diff[:5])}{'…' if len(diff) > 5 else ''}: "
                                     "hyp.yaml's values kept)")
                elif isinstance(before, str):
                    out.notes.append(f"hyp.yaml → config.hyp (opt.yaml's hyp was the path {before!r})")
                else:
                    out.notes.append("hyp.yaml → config.hyp (YOLOv5 hyperparameters; opt.yaml "
                                     "nests the same under hyp)")
            elif h is not None:
                out.notes.append("hyp.yaml: not a mapping; ignored")
    cfg = out.config
    saved = _last_part(cfg.get("save_dir"))
    base = os.path.basename(os.path.normpath(d))
    if saved and saved != base:
        out.notes.append(f"the config's save_dir ends in {saved!r} but the folder is {base!r} "
                         "(renamed or copied after training); the run is named by its folder")
    rows = count_rows(os.path.join(d, RESULTS))
    epochs = cfg.get("epochs")
    if rows is not None and isinstance(epochs, int) and not isinstance(epochs, bool) and rows < epochs:
        out.notes.append(f"results.csv has {rows} epoch row(s) of epochs: {epochs} (stopped early, "
                         "interrupted or still running: the files do not say which; status unknown)")
    _declare_metrics(out, _header(os.path.join(d, RESULTS)))
    events = run.sniffs.get("owns_events") or []
    if events:
        out.notes.append(f"{', '.join(events)}: TensorBoard file of the same run (Ultralytics' "
                         "callback), read with results.csv")
    return out


MAP50_95 = re.compile(r"^metrics/mAP(50-95|_0\.5:0\.95)(\([A-Z]\))?$")
FITNESS = "Ultralytics keeps best.pt by fitness = 0.1·mAP50 + 0.9·mAP50-95; this is its main term"


def _header(path: str) -> list[str]:
    """results.csv's column names, stripped (first 64 KiB; [] when unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(65536)
    except OSError:
        return []
    return [c.strip() for c in first.split(",") if c.strip()]


def _declare_metrics(out: Meta, columns: list[str]) -> None:
    """`metrics/*` are the validator's results (downstream); one mAP50-95 column is the headline."""
    scores = [c for c in columns if c.startswith("metrics/")]
    if not scores:
        return
    out.meta["groups"] = {c: "downstream" for c in scores}
    main = [c for c in scores if MAP50_95.match(c)]
    if len(main) == 1:
        out.goals[main[0]] = "max"
        out.goal_sources[main[0]] = FITNESS
        out.meta["goals"] = {main[0]: {"goal": "max", "source": FITNESS, "headline": True}}
        out.notes.append(f"{main[0]}: the headline (Ultralytics' fitness, 0.1·mAP50 + "
                         "0.9·mAP50-95, picks best.pt); metrics/* are validation results: downstream")
    else:
        out.notes.append("metrics/* are validation results: downstream"
                         + (f" ({len(main)} mAP50-95 columns: no headline declared)" if main else ""))


def _read_results(path: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(frame, notes, stripped column names) of a results.csv."""
    sniff = sniff_table(path)
    if sniff is None:
        what = "empty" if not os.path.getsize(path) else "header only, or not a CSV table"
        return rundiff_core.empty_history(), [f"results.csv: no epoch rows ({what}); no history"], []
    cols, notes = read_columns(path, sniff)
    stripped = [str(n).strip() for n in cols.names]
    padded = stripped != cols.names or any(str(t) != str(t).strip() for t in cols.text)
    cols.names = stripped
    cols.text = [str(t).strip() for t in cols.text]
    if getattr(cols, "labels", None):  # text cells kept by column name: the names are stripped
        cols.labels = {str(k).strip(): v for k, v in cols.labels.items()}
    step = "epoch" if "epoch" in stripped else None
    frame, more = to_long(cols, RESULTS, step=step, described="CSV")
    n_keys = len([c for c in stripped if c != step])
    bits = [f"results.csv (one row per epoch) → {n_keys} keys"]
    if padded:
        bits.append("header names and cells padded with spaces by the YOLOv5/v8 writer: stripped")
    if step is None:
        bits.append("no epoch column: x = row index")
    elif len(frame):
        bits.append(f"x = epoch as logged (YOLOv5 counts from 0, v8+ from 1; this run starts at "
                    f"{frame['step'].min():g})")
    if cols.text:
        bits.append(f"{len(cols.text)} non-numeric column(s) skipped ({', '.join(cols.text[:5])})")
    notes.append("; ".join(bits))
    notes += more[1:]  # to_long's own first note says less than the one above
    if "time" in stripped:
        notes.append("time (cumulative seconds since the start, YOLO11) kept as a key, not read "
                     "as wall time")
    return frame, notes, stripped


def _events(run: LayoutRun, d: str, frame: pd.DataFrame, columns: list[str]
            ) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """The events file's contribution: wall times for the CSV points, keys the CSV lacks."""
    events = run.sniffs.get("owns_events") or []
    if not events:
        return frame, [], {}
    try:
        tb = rundiff_core.load_run("tb:" + d).history()
    except Exception as exc:  # any reader failure is a note: results.csv is the history anyway
        return frame, [f"{', '.join(events)}: not read ({type(exc).__name__}: {str(exc)[:100]}); "
                       "results.csv alone"], {}
    if not len(tb):
        return frame, [f"{', '.join(events)}: no scalars"], {}
    notes: list[str] = []
    tb_keys = tb["key"].astype(str)
    dup = sorted(set(tb_keys.unique()) & set(columns))
    extra = sorted(set(tb_keys.unique()) - set(columns))
    files = {k: events[0] if len(events) == 1 else "events.out.tfevents.*" for k in extra}
    if dup:
        # each CSV point takes the wall time of the events file's point of the same tag and step
        # (its first, where the final validation repeats the last step)
        first = tb[tb_keys.isin(dup)].assign(key=tb_keys[tb_keys.isin(dup)]) \
            .drop_duplicates(["key", "step"], keep="first")
        wall = dict(zip(zip(first["key"], first["step"], strict=True), first["wall_time"],
                        strict=True))
        keys = frame["key"].astype(str).to_numpy()
        got = np.array([wall.get((k, s), np.nan) for k, s in zip(keys, frame["step"], strict=True)],
                       dtype="float64")
        have = np.isfinite(got)
        if have.any():
            frame = frame.copy()
            frame["wall_time"] = np.where(have, got, frame["wall_time"].to_numpy())
        counts = tb_keys[tb_keys.isin(dup)].value_counts()
        csv_counts = pd.Series(keys).value_counts()
        more = sorted(k for k in dup if counts.get(k, 0) > csv_counts.get(k, 0))
        notes.append(f"events file: {len(dup)} of its {len(dup) + len(extra)} tags duplicate "
                     "results.csv columns and are not added twice; they give "
                     f"{int(have.sum())} of {len(frame)} points their wall time (same tag and step)")
        if more:
            last = tb[tb_keys == more[0]].iloc[-1]
            notes.append(f"events file: {len(more)} tag(s) ({', '.join(more[:4])}"
                         f"{'…' if len(more) > 4 else ''}) hold more points than results.csv — "
                         f"a repeated step {last['step']:g} (Ultralytics' final validation, of "
                         f"best.pt: {more[0]} = {last['value']:.6g}); not added, results.csv is "
                         "the history")
    if extra:
        add = tb[tb_keys.isin(extra)]
        frame = pd.concat([frame, rundiff_core.make_history(
            add["step"].to_numpy(), add["key"].astype(str).to_numpy(), add["value"].to_numpy(),
            add["wall_time"].to_numpy())], ignore_index=True)
        notes.append(f"events file: {len(extra)} tag(s) results.csv lacks added "
                     f"({', '.join(extra[:5])}{'…' if len(extra) > 5 else ''})")
    return frame, notes, files


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    d = run_dir(run)
    path = os.path.join(d, RESULTS)
    if not os.path.isfile(path):
        return rundiff_core.empty_history(), ["results.csv: missing; no history"]
    frame, notes, columns = _read_results(path)
    frame, more, files = _events(run, d, frame, columns)
    notes += more
    if run.sniffs.get("owns_events"):
        key_files = {str(k): RESULTS for k in pd.unique(frame["key"].astype(str))}
        key_files.update(files)
        frame.attrs["key_files"] = key_files
    return frame, notes
