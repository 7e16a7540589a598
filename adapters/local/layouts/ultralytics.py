"""Ultralytics YOLO train folders: `results.csv` beside `args.yaml` (YOLOv8, v10, YOLO11) or
`opt.yaml` + `hyp.yaml` (YOLOv5), or old YOLOv5's header-less `results.txt` beside `opt.yaml` /
`hyp.yaml` (YOLOv5 ≤ 5.0, and the forks that kept its writer), with the TensorBoard
`events.out.tfevents.*` file Ultralytics' callback writes into the same folder.

- history: `results.csv`, one row per epoch. Header names and cells are padded with spaces by
  the v5 and v8.0–8.2 writers (`%23s`; names of 20+ characters get no padding, so YOLOv5's
  `metrics/mAP_0.5,metrics/mAP_0.5:0.95` look glued together): stripped. x = the `epoch` column
  as logged: YOLOv5 counts from 0, v8+ from 1. YOLO11's `time` column (cumulative seconds since
  the start) stays a key of its own.
- the events file belongs to the run (so `local:` outranks `tb:` for such folders, see
  `adapters/local/__init__.py`): it is read, lazily, through `rundiff_core.load_run("tb:…")`.
  Its tags that duplicate a results.csv column are not added twice (results.csv is the history;
  the events file gives those points their wall time); tags the CSV lacks are added.
  results.txt's names are inferred, the tags are written: when a tag holds other values than the
  results.txt column of its name, the tags win (`_kept_apart`).
- old YOLOv5 (v1.0–v5.0, May 2020 – Jul 2021): `results.txt`, no header, one row per epoch of
  whitespace-aligned fields (`'%10s' * 2 + '%10.4g' * 13`): `i/N` (epoch i of 0..N, N = epochs −
  1), the GPU memory (`2.5G`), the train losses box/obj/cls and their total, the targets of the
  last batch, the image size, P, R, mAP@.5, mAP@.5:.95, the val losses box/obj/cls. The shape of
  the table decides (rundiff_adapters.local.shape: header-less rows of one field count); this
  layout only names the columns — after YOLOv5's `utils/plots.py` `plot_results` and the
  TensorBoard tags of its `train.py`, the names its results.csv kept from v6.0 (so old and new
  runs share keys; the total and the labels of the last batch by the words its console printed
  above the rows). A fork's extra losses (yolov5-face's landmark loss: 16 fields) are found by
  the shape (the image size is the integer multiple of 32 after the targets; the total is the sum
  of the losses before it) and named by position (`train/loss_4`).
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

import dataclasses
import math
import os
import re
from typing import TYPE_CHECKING

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..common import Meta, count_rows, files_beside, is_events_file, run_dir, yaml_config
from ..lazy import np, pd
from ..sniff import is_number, read_columns, read_head, sniff_table, to_long

if TYPE_CHECKING:
    from ..columns import Columns

RESULTS = "results.csv"
RESULTS_TXT = "results.txt"  # YOLOv5 <= 5.0: no header


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
        return _txt_run_for(path, files, folder)
    config = "args.yaml" if "args.yaml" in names else "opt.yaml" if "opt.yaml" in names else None
    if config is None:
        return None
    head = read_head(os.path.join(folder, RESULTS), 4096)
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


# -- old YOLOv5: results.txt ----------------------------------------------------------------------

#: results.txt's 15 fields as YOLOv5 v1.0–v5.0 wrote them (train.py: `'%10s' * 2 + '%10.4g' * 6`
#: then `'%10.4g' * 7 % results`), named as its TensorBoard tags and its later results.csv name
#: them; `gpu_mem`, the total loss, the labels of the last batch and `img_size` only its console
#: printed, above the rows (`'Epoch', 'gpu_mem', 'box', 'obj', 'cls', 'total', 'labels',
#: 'img_size'`, v4.0+ and YOLOv7; `targets` before): those words name them (`train/total`).
TXT_NAMES = ("epoch", "gpu_mem", "train/box_loss", "train/obj_loss", "train/cls_loss",
             "train/total", "labels", "img_size", "metrics/precision", "metrics/recall",
             "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss",
             "val/cls_loss")
LOSS_NAMES = ("box", "obj", "cls")
#: TensorBoard tags of older YOLOv5 writers → the results.txt column holding the same values:
#: the box loss was `giou_loss` until Oct 2020 (#1120), and the tag `metrics/F1` (May–Jul 2020)
#: held mAP@.5:.95 (test.py returned it; the tag list said F1).
TAG_ALIASES = {"train/giou_loss": "train/box_loss", "val/giou_loss": "val/box_loss",
               "metrics/F1": "metrics/mAP_0.5:0.95"}
_COUNTER = re.compile(r"^(\d+)/(\d+)$")
_MEMORY = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?G$")


class TxtLayout(rundiff_core.PlainRecord):
    """How one results.txt is laid out: its field count, the names of its columns, the planned
    last epoch N of `i/N`, and the words that say which layout (repr and equality by them)."""

    __match_args__ = ("width", "names", "last_epoch", "described")

    def __init__(self, width: int, names: list[str], last_epoch: int, described: str) -> None:
        self.width, self.names, self.last_epoch, self.described = width, names, last_epoch, described


def _fits(rows: list[list[float]], j: int, width: int) -> bool:
    """Whether field `j` can be the image size: it and the targets before it are integers (the
    size a multiple of 32, YOLOv5's stride), the field before the targets is the total of the
    losses between the memory and it, P/R/mAPs after it are in [0, 1]."""
    if j - 4 < 1 or width - j - 5 < 0:
        return False
    checked = 0
    for r in rows:
        targets, size, total, losses = r[j - 1], r[j], r[j - 2], r[2:j - 2]
        if not all(math.isfinite(v) for v in (targets, size, total, *losses)):
            continue
        if targets < 0 or targets != int(targets) or size < 32 or size % 32:
            return False
        if abs(total - sum(losses)) > 1e-3 * (abs(total) + sum(abs(x) for x in losses)) + 1e-6:
            return False
        if not all(0 <= v <= 1 for v in r[j + 1:j + 5] if math.isfinite(v)):
            return False
        checked += 1
    return checked > 0


def txt_layout(head: bytes) -> TxtLayout | None:
    """The layout of a header-less YOLOv5 results.txt from its first bytes: every complete row
    `i/N`, `<x>G`, then numbers, one field count; the shape decides where the image size sits."""
    text = head.decode("utf-8", errors="replace")
    cut = len(head) >= SNIFF_HEAD or not head.endswith(b"\n")  # the last line may be unfinished
    lines = [ln.split() for ln in text.split("\n")[:-1 if cut else None] if ln.strip()][:200]
    if not lines or not all(len(f) == len(lines[0]) and _COUNTER.match(f[0]) and _MEMORY.match(f[1])
                            and all(is_number(c) for c in f[2:]) for f in lines):
        return None
    width, last = len(lines[0]), int(lines[-1][0].split("/")[1])
    rows = [[float(f[0].split("/")[0]), float(f[1][:-1]), *map(float, f[2:])] for f in lines]
    fits = [j for j in range(6, width - 4) if _fits(rows, j, width)]
    if len(fits) != 1:
        return None
    j = fits[0]
    k, v = j - 4, width - j - 5
    if (k, v) == (3, 3):
        return TxtLayout(width, list(TXT_NAMES), last, "YOLOv5 ≤ 5.0's results.txt (YOLOv7 "
                         "kept the writer; no header, 15 fields per row, named after YOLOv5's "
                         "plot_results and TensorBoard tags)")

    def losses(split: str, n: int) -> list[str]:
        if n < 3:  # which of box/obj/cls a fork dropped is not in the file
            return [f"{split}/loss_{i}" for i in range(1, n + 1)]
        return [f"{split}/{LOSS_NAMES[i]}_loss" if i < 3 else f"{split}/loss_{i + 1}"
                for i in range(n)]

    names = ["epoch", "gpu_mem", *losses("train", k), "train/total", "labels", "img_size",
             *TXT_NAMES[8:12], *losses("val", v)]
    return TxtLayout(width, names, last, f"a YOLOv5 fork's results.txt (no header, {width} "
                     f"fields per row: {k} train losses and their total, {v} val losses; losses "
                     "past box/obj/cls named by position)")


SNIFF_HEAD = 16 << 10
#: results.txt's columns whose inferred names an out-of-step events file's tags hold (`_kept_apart`)
TABLE_PREFIX = "results/"


def _txt_run_for(path: str, files: list[str], folder: str) -> LayoutRun | None:
    """results.txt beside opt.yaml or hyp.yaml, shaped as a header-less table (the local
    adapter's shape rule) whose rows YOLOv5's writer wrote."""
    names = set(files)
    if RESULTS_TXT not in names or not names & {"opt.yaml", "hyp.yaml"}:
        return None
    from ..shape import headerless_table

    head = read_head(os.path.join(folder, RESULTS_TXT), SNIFF_HEAD)
    # a file that does not end its last line may be being written: that line is not looked at
    bare = headerless_table(head, complete=len(head) < SNIFF_HEAD and head.endswith(b"\n"))
    layout = txt_layout(head)
    if layout is None:
        return None
    if bare is None:  # the shape rule wants 3 rows; a run stopped after 1–2 epochs has fewer,
        rows = sum(1 for ln in head.split(b"\n")[:3] if ln.strip())  # and the row check above
        if rows >= 3 or len(head) >= SNIFF_HEAD:  # (counter, memory, total = sum) must do
            return None
    elif bare.kind != "ws" or layout.width != len(bare.header):
        return None
    events = sorted(f for f in files if is_events_file(f))
    config = [f for f in ("opt.yaml", "hyp.yaml") if f in names]
    reason = (f"YOLOv5 ≤ 5.0 / YOLOv7 ({' + '.join(config)}): {RESULTS_TXT} (no header, "
              f"{layout.width} fields per row)"
              + (f" + {len(events)} TensorBoard events file(s) of the same run" if events else ""))
    return LayoutRun(path, "ultralytics", [os.path.join(folder, f) for f in
                                           [RESULTS_TXT, *config, *events]], reason,
                     {"owns_events": events, "results": RESULTS_TXT, "txt_layout": layout})


def claim(folder: LayoutFolder) -> Claimed | None:
    run = _run_for(folder.path, folder.files, folder.path)
    if run is None:
        return None
    return Claimed([run], {"weights"})


def claim_file(path: str) -> list[LayoutRun] | None:
    """`results.csv` (or old YOLOv5's `results.txt`) given alone: the train folder it sits in,
    when args.yaml/opt.yaml (hyp.yaml) is beside."""
    if os.path.basename(path) not in (RESULTS, RESULTS_TXT):
        return None
    folder, files = files_beside(path)
    run = _txt_run_for(path, files, folder) if os.path.basename(path) == RESULTS_TXT else \
        _run_for(path, files, folder)
    return [run] if run is not None else None


def _last_part(path: object) -> str:
    if isinstance(path, list) and path:  # a PosixPath pickled in opt.yaml: its parts
        path = path[-1]
    return re.split(r"[\\/]", str(path).rstrip("\\/"))[-1] if path else ""


def meta(run: LayoutRun) -> Meta:
    out = Meta()
    d = run_dir(run)
    args = os.path.join(d, "args.yaml")
    if not yaml_config(out, args, "Ultralytics v8+ train arguments, hyperparameters at top level"):
        # YOLOv5: opt.yaml, and hyp.yaml as config.hyp over the path or copy opt.yaml holds there
        got = rundiff_core.read_run_config(d, ("opt.yaml", "hyp.yaml"), metadata=())
        out.config, out.notes = got.config, out.notes + got.notes
    cfg = out.config
    saved = _last_part(cfg.get("save_dir"))
    base = os.path.basename(os.path.normpath(d))
    if saved and saved != base:
        out.notes.append(f"the config's save_dir ends in {saved!r} but the folder is {base!r} "
                         "(renamed or copied after training); the run is named by its folder")
    layout = run.sniffs.get("txt_layout")
    results = RESULTS_TXT if layout is not None else RESULTS
    epochs = cfg.get("epochs")
    epochs = epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else None
    if layout is not None:
        rows = count_rows(os.path.join(d, RESULTS_TXT))  # no header: one more row than it counts
        rows = None if rows is None else rows + 1
        planned = layout.last_epoch + 1
        if epochs is not None and epochs != planned:
            out.notes.append(f"results.txt counts epochs to {layout.last_epoch} (`i/"
                             f"{layout.last_epoch}`: {planned} planned) but the config says "
                             f"epochs: {epochs} (changed on resume?); the rows are read as written")
        epochs = planned if epochs is None else min(epochs, planned)
        taken = _names_taken_by_tags(run, d)
        _declare_metrics(out, [f"{TABLE_PREFIX}{c}" if c in taken else c for c in layout.names],
                         sorted(taken))
        if os.path.isfile(os.path.join(d, RESULTS)):
            out.notes.append("results.csv beside results.txt: not read")
    else:
        rows = count_rows(os.path.join(d, RESULTS))
        _declare_metrics(out, _header(os.path.join(d, RESULTS)))
    if rows is not None and epochs is not None and rows < epochs:
        out.notes.append(f"{results} has {rows} epoch row(s) of epochs: {epochs} (stopped early, "
                         "interrupted or still running: the files do not say which; status unknown)")
    events = run.sniffs.get("owns_events") or []
    if events:
        out.notes.append(f"{', '.join(events)}: TensorBoard file of the same run (the trainer's "
                         f"TensorBoard writer), read with {results}")
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


def _declare_metrics(out: Meta, columns: list[str], tags: list[str] = ()) -> None:
    """`metrics/*` are the validator's results (downstream); one mAP50-95 column is the headline.
    `tags`: an events file's tags kept beside the table (`_kept_apart`) — downstream by their
    names too, but the headline stays the table's column, the value YOLOv5's fitness is computed
    from (by position in test()'s results, whatever the tag list says)."""
    scores = [c for c in columns if c.removeprefix(TABLE_PREFIX).startswith("metrics/")]
    if not scores:
        return
    out.meta["groups"] = {c: "downstream" for c in scores + [t for t in tags
                                                               if t.startswith("metrics/")]}
    main = [c for c in scores if MAP50_95.match(c.removeprefix(TABLE_PREFIX))]
    if len(main) == 1:
        out.goals[main[0]] = "max"
        out.goal_sources[main[0]] = FITNESS
        out.meta["goals"] = {main[0]: {"goal": "max", "source": FITNESS, "headline": True}}
        out.notes.append(f"{main[0]}: the headline (Ultralytics' fitness, 0.1·mAP50 + "
                         "0.9·mAP50-95, picks best.pt); metrics/* are validation results: downstream")
    else:
        out.notes.append("metrics/* are validation results: downstream"
                         + (f" ({len(main)} mAP50-95 columns: no headline declared)" if main else ""))


def read_epochs(path: str) -> tuple[pd.DataFrame, Columns | None, bool, list[str], list[str]]:
    """A CSV of one row per epoch (results.csv, timm's summary.csv) through the shared reader:
    (frame, columns — None without rows —, whether the writer padded names and cells with spaces
    (stripped), the reader's notes, to_long's notes but its first, which the layout words).
    x = the `epoch` column when there is one."""
    name = os.path.basename(path)
    head = read_head(path)
    sniff = sniff_table(path, head)
    if sniff is None:
        what = "empty" if not os.path.getsize(path) else "header only, or not a CSV table"
        return rundiff_core.empty_history(), None, False, [f"{name}: no epoch rows ({what}); no "
                                                           "history"], []
    cols, notes = read_columns(path, sniff)
    stripped = [str(n).strip() for n in cols.names]
    header = head.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")  # as written
    sep = sniff.kind if sniff.kind in ("\t", ",", ";") else ","
    padded = any(c != c.strip() for c in header.split(sep)) if header else False
    cols.names, cols.text = stripped, [str(t).strip() for t in cols.text]
    cols.labels = {str(k).strip(): v for k, v in cols.labels.items()}  # kept by (stripped) name
    frame, more = to_long(cols, name, step="epoch" if "epoch" in stripped else None, described="CSV")
    return frame, cols, padded, notes, more[1:]


def _read_results(path: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(frame, notes, stripped column names) of a results.csv."""
    frame, cols, padded, notes, more = read_epochs(path)
    if cols is None:
        return frame, notes, []
    stripped = cols.names
    step = "epoch" if "epoch" in stripped else None
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
    notes += more
    if "time" in stripped:
        notes.append("time (cumulative seconds since the start, YOLO11) kept as a key, not read "
                     "as wall time")
    return frame, notes, stripped


def _read_txt(path: str, layout: TxtLayout) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(frame, notes, column names) of an old YOLOv5 results.txt: the local adapter's reader of a
    header-less table (`i/N` read as i, `2.5G` as 2.5), the columns named by `layout`."""
    from ..sniff import Sniff

    cols, notes = read_columns(path, Sniff("ws", header=list(layout.names), headerless=True))
    if cols.rows and cols.names == list(layout.names):
        whole = np.logical_and.reduce(cols.valid)  # a short row (cut while written) is no epoch
        if not whole.all():  # a new Columns: the reader may hand the same one out again
            cols = dataclasses.replace(cols, values=[v[whole] for v in cols.values],
                                       valid=[v[whole] for v in cols.valid], rows=int(whole.sum()))
            notes.append(f"results.txt: {int((~whole).sum())} row(s) with fewer than "
                         f"{layout.width} fields skipped (a row being written when the file was "
                         "copied?)")
    if not cols.rows:
        return rundiff_core.empty_history(), notes + ["results.txt: no epoch rows; no history"], []
    frame, more = to_long(cols, RESULTS_TXT, step="epoch", described="header-less table")
    bits = [f"results.txt read as {layout.described} → {len(layout.names) - 1} keys",
            f"x = epoch from `i/N` (0-based; N = {layout.last_epoch}: "
            f"{layout.last_epoch + 1} planned)",
            "gpu_mem in GB (the `G` stripped)",
            "values as written, 4 significant digits (`%10.4g`)"]
    if cols.text:
        bits.append(f"{len(cols.text)} non-numeric column(s) skipped ({', '.join(cols.text[:5])})")
    notes.append("; ".join(bits))
    notes += more[1:]
    return frame, notes, list(layout.names)


def _agree(tb: pd.DataFrame, frame: pd.DataFrame, tag: str, column: str) -> tuple[int, bool]:
    """(epochs both hold, whether the events tag's values there are the table column's to its
    4 significant digits)."""
    ours = frame[frame["key"].astype(str) == column].drop_duplicates("step", keep="last")
    theirs = tb[tb["key"].astype(str) == tag].drop_duplicates("step", keep="last")
    both = theirs.merge(ours[["step", "value"]], on="step", suffixes=("_tb", ""))
    a, b = both["value_tb"].to_numpy(), both["value"].to_numpy()
    same = np.isclose(a, b, rtol=1e-3, atol=1e-6) | (np.isnan(a) & np.isnan(b))
    return len(both), bool(len(both)) and bool(same.all())


def _aliases(tb: pd.DataFrame, frame: pd.DataFrame, columns: list[str]
             ) -> tuple[pd.DataFrame, list[str]]:
    """Older YOLOv5 tags (TAG_ALIASES) renamed to the results.txt column they hold — when its
    values agree with that column at every shared epoch (to results.txt's 4 digits)."""
    notes: list[str] = []
    keys = tb["key"].astype(str)
    renamed = keys.copy()
    for tag, column in TAG_ALIASES.items():
        if column not in columns or not (keys == tag).any() or (keys == column).any():
            continue
        shared, ok = _agree(tb, frame, tag, column)
        if not ok:
            notes.append(f"events file: tag {tag} kept as its own key (its values differ from "
                         f"results.txt's {column})")
            continue
        renamed[keys == tag] = column
        notes.append(f"events file: tag {tag} is results.txt's {column} (older YOLOv5 named it "
                     f"so; its {shared} shared epochs agree to 4 digits)")
    return (tb.assign(key=renamed) if notes else tb), notes


def _events(run: LayoutRun, d: str, frame: pd.DataFrame, columns: list[str]
            ) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """The events file's contribution: wall times for the table's points, keys it lacks."""
    events = run.sniffs.get("owns_events") or []
    results = run.sniffs.get("results", RESULTS)
    if not events:
        return frame, [], {}
    try:
        tb = rundiff_core.load_run("tb:" + d).history()
    except Exception as exc:  # any reader failure is a note: results.csv is the history anyway
        return frame, [f"{', '.join(events)}: not read ({type(exc).__name__}: {str(exc)[:100]}); "
                       f"{results} alone"], {}
    if not len(tb):
        return frame, [f"{', '.join(events)}: no scalars"], {}
    notes: list[str] = []
    if results == RESULTS_TXT:
        tb, notes = _aliases(tb, frame, columns)
        off = _out_of_step(tb, frame, columns)
        if off:
            frame, more, files = _kept_apart(tb, frame, columns, events, off)
            return frame, notes + more, files
    tb_keys = tb["key"].astype(str)
    dup = sorted(set(tb_keys.unique()) & set(columns))
    extra = sorted(set(tb_keys.unique()) - set(columns))
    files = {k: events[0] if len(events) == 1 else "events.out.tfevents.*" for k in extra}
    if dup:
        # each table point takes the wall time of the events file's point of the same tag and
        # step (its first, where the final validation repeats the last step)
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
                     f"{results} columns and are not added twice; they give "
                     f"{int(have.sum())} of {len(frame)} points their wall time (same tag and step)")
        notes += _earlier_rows(frame, float(first["step"].min()), results)
        if more:
            last = tb[tb_keys == more[0]].iloc[-1]
            notes.append(f"events file: {len(more)} tag(s) ({', '.join(more[:4])}"
                         f"{'…' if len(more) > 4 else ''}) hold more points than {results} — "
                         f"a repeated step {last['step']:g} (Ultralytics' final validation, of "
                         f"best.pt: {more[0]} = {last['value']:.6g}); not added, {results} is "
                         "the history")
    if extra:
        add = tb[tb_keys.isin(extra)]
        frame = pd.concat([frame, rundiff_core.make_history(
            add["step"].to_numpy(), add["key"].astype(str).to_numpy(), add["value"].to_numpy(),
            add["wall_time"].to_numpy())], ignore_index=True)
        notes.append(f"events file: {len(extra)} tag(s) {results} lacks added "
                     f"({', '.join(extra[:5])}{'…' if len(extra) > 5 else ''})")
    return frame, notes, files


def _earlier_rows(frame: pd.DataFrame, first_tb: float, results: str) -> list[str]:
    """A note on the table's rows before the events file's first step (a resumed run's)."""
    first_table = float(frame["step"].min())
    if not first_tb > first_table:
        return []
    early = frame.loc[frame["step"] < first_tb, "step"]
    return [f"{results}'s epochs {first_table:g}–{early.max():g} ({early.nunique()} rows, no "
            f"wall time) precede the events file's first step {first_tb:g}: rows an earlier "
            f"launch wrote, which a resumed YOLOv5 run carries over in its checkpoint; {results} "
            "is the history"]


def _out_of_step(tb: pd.DataFrame, frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """The tags that name a results.txt column but hold other values at the epochs both hold (or
    share no epoch with it: then nothing confirms the name)."""
    return [k for k in sorted(set(tb["key"].astype(str).unique()) & set(columns))
            if not _agree(tb, frame, k, k)[1]]


_TAKEN: dict[tuple[object, ...], frozenset[str]] = {}


def _names_taken_by_tags(run: LayoutRun, d: str) -> frozenset[str]:
    """The results.txt names an out-of-step events file takes (`_kept_apart`), for the metadata,
    which is read before the history: both files read once per version of them (by size and
    mtime), only for a results.txt run with an events file."""
    layout, events = run.sniffs.get("txt_layout"), run.sniffs.get("owns_events") or []
    if layout is None or not events:
        return frozenset()
    try:
        stamp = (d, *((f, st.st_size, st.st_mtime_ns) for f in (RESULTS_TXT, *events)
                      for st in (os.stat(os.path.join(d, f)),)))
    except OSError:
        return frozenset()
    if stamp not in _TAKEN:
        taken: frozenset[str] = frozenset()
        frame, _, columns = _read_txt(os.path.join(d, RESULTS_TXT), layout)
        try:
            tb = rundiff_core.load_run("tb:" + d).history()
        except Exception:  # the history says why; the metadata keeps the table's names
            tb = rundiff_core.empty_history()
        if len(tb) and len(frame):
            tb, _ = _aliases(tb, frame, columns)
            if _out_of_step(tb, frame, columns):
                taken = frozenset(set(tb["key"].astype(str).unique()) & set(columns))
        if len(_TAKEN) > 256:
            _TAKEN.clear()
        _TAKEN[stamp] = taken
    return _TAKEN[stamp]


def _kept_apart(tb: pd.DataFrame, frame: pd.DataFrame, columns: list[str], events: list[str],
                off: list[str]) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """results.txt and an events file whose tags contradict results.txt's column names.

    results.txt has no header: its names are inferred from YOLOv5's layout, the events file's
    tags are written. When a tag holds other values than the column given its name (a fork that
    added a loss but kept YOLOv5's 13 tags, so each tag from the 4th on holds its neighbour's
    number), the name was a guess and named beats inferred: every tag is read as written (its
    own points and wall times, also those that agree — the file is one record, and a resumed run's
    events file may hold fewer epochs than results.txt), and the results.txt columns whose names a
    tag holds are kept apart as `results/<name>` (files.py's `<file>/<key>`), never joined."""
    tb_keys = tb["key"].astype(str)
    tags = sorted(tb_keys.unique())
    taken = set(tags) & set(columns)
    stem = TABLE_PREFIX.rstrip("/")
    keys = frame["key"].astype(str)
    first = tb.drop_duplicates("step", keep="first")  # an epoch's row: the time of its first tag
    wall = dict(zip(first["step"], first["wall_time"], strict=True))
    got = np.array([wall.get(s, np.nan) for s in frame["step"]], dtype="float64")
    frame = frame.assign(key=keys.map(lambda k: f"{stem}/{k}" if k in taken else k).to_numpy(),
                         wall_time=np.where(np.isfinite(got), got, frame["wall_time"].to_numpy()))
    frame = pd.concat([frame, rundiff_core.make_history(
        tb["step"].to_numpy(), tb_keys.to_numpy(), tb["value"].to_numpy(),
        tb["wall_time"].to_numpy())], ignore_index=True)
    name = events[0] if len(events) == 1 else "events.out.tfevents.*"
    shown = ", ".join(off[:4]) + ("…" if len(off) > 4 else "")
    notes = [f"events file: {len(off)} of the {len(taken)} tag(s) that share a results.txt "
             f"column's name ({shown}) hold other values than that column (a fork whose tag list "
             "is out of step with its losses?): results.txt has no header, so its names are "
             f"inferred and the tags win — all {len(tags)} tags read as written, results.txt's "
             f"{len(taken)} columns of the same names kept apart as `{stem}/<name>`"]
    notes += _earlier_rows(frame[frame["key"].astype(str).str.startswith(stem + "/")],
                           float(tb["step"].min()), RESULTS_TXT)
    return frame, notes, {k: name for k in tags}


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    d = run_dir(run)
    layout = run.sniffs.get("txt_layout")
    results = RESULTS_TXT if layout is not None else RESULTS
    path = os.path.join(d, results)
    if not os.path.isfile(path):
        return rundiff_core.empty_history(), [f"{results}: missing; no history"]
    if layout is not None:
        frame, notes, columns = _read_txt(path, layout)
    else:
        frame, notes, columns = _read_results(path)
    frame, more, files = _events(run, d, frame, columns)
    notes += more
    if run.sniffs.get("owns_events"):
        key_files = {str(k): results for k in pd.unique(frame["key"].astype(str))}
        key_files.update(files)
        frame.attrs["key_files"] = key_files
    return frame, notes
