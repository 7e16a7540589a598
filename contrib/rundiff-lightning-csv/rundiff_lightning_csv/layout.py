"""Where CSVLogger runs live on disk: `ROOT/NAME/version_N/{metrics.csv,hparams.yaml}`.

Only `os`, `re` and rundiff's bounded walk here: the hooks use these helpers to sniff, and sniffing must stay cheap (a
directory listing or two and at most one 4 KiB read of a CSV header).
"""

from __future__ import annotations

import os
import re

from rundiff_core import walk_dirs

METRICS = "metrics.csv"
HPARAMS = "hparams.yaml"
HEADER_BYTES = 4096
_VERSION = re.compile(r"version_(\d+)$")


def natural_key(name: str) -> tuple:
    """Sort `version_2` before `version_10` (CSVLogger numbers versions, it does not pad them)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def csv_header(path: str) -> list[str] | None:
    """The column names of a CSV file's first line (reads 4 KiB at most), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEADER_BYTES)
    except OSError:
        return None
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    if not line:
        return None
    text = line.decode("utf-8-sig", errors="replace")
    return [c.strip().strip('"') for c in text.split(",")]


# A column that names what each row is (train/val rows of a long table): not CSVLogger's (it
# writes one column per logged key), so a richer reading of such a file is not ours to hide.
SPLIT_COLUMNS = {"type", "split", "phase", "mode", "stage"}


def is_metrics_csv(path: str) -> bool:
    """A CSVLogger metrics file, by Lightning's own signature: named metrics.csv, with an
    `hparams.yaml` beside it, or with the `step` and `epoch` columns Lightning always writes —
    and no column naming its rows (`type`, `split`, `phase`, `mode`, `stage`)."""
    if os.path.basename(path) != METRICS or not os.path.isfile(path):
        return False
    header = csv_header(path)
    if header is None or "step" not in header or SPLIT_COLUMNS & {h.lower() for h in header}:
        return False
    return "epoch" in header or os.path.isfile(os.path.join(os.path.dirname(path), HPARAMS))


def _has_tfevents(path: str) -> bool:
    try:
        return any(n.startswith("events.out.tfevents") for n in os.listdir(path))
    except OSError:
        return False


def is_version_dir(path: str) -> bool:
    """A run folder: it holds metrics.csv, or it is an aborted `version_N` with only hparams.yaml.

    A `version_N` folder with TensorBoard event files belongs to Lightning's TensorBoardLogger,
    which writes the same hparams.yaml: that one is not ours.
    """
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, METRICS)):
        return True
    return (
        bool(_VERSION.match(os.path.basename(os.path.normpath(path))))
        and os.path.isfile(os.path.join(path, HPARAMS))
        and not _has_tfevents(path)
    )


def find_version_dirs(root: str, depth: int = 2, max_entries: int | None = None) -> list[str]:
    """Run folders at or below `root` (a version, a `lightning_logs`, or the folder above it)."""
    if is_version_dir(root):
        return [root]
    found: list[str] = []
    for folder in walk_dirs(root, max_depth=depth, max_entries=max_entries, sort_key=natural_key):
        if folder.depth and is_version_dir(folder.path):
            found.append(folder.path)
            folder.dirs.clear()
    return found


def with_metrics(dirs: list[str]) -> list[str]:
    """The folders whose metrics.csv looks like CSVLogger's (header read, nothing else)."""
    return [d for d in dirs if is_metrics_csv(os.path.join(d, METRICS))]
