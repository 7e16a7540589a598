"""What the local readers share: the metadata record a layout's `meta` returns, the seed rule on
file and folder names, scalars of a nested mapping, a run's folder and the files beside it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import rundiff_core  # the seed rule (engines.arms) loads when a run is read, not to sniff
from rundiff_core import flatten

if TYPE_CHECKING:
    from rundiff_core import LayoutMeta as Meta  # the name the layouts were written with
else:
    def Meta(**fields: Any) -> Any:  # noqa: N802 - the name the layouts were written with
        """`LayoutMeta(**fields)`: the class is imported, and built, when a layout first reads a
        run's metadata, not when it sniffs a folder (`detect` never builds one)."""
        return rundiff_core.LayoutMeta(**fields)


def _stem(name: str) -> str:
    """A log file's name without its extension (`ppo_s3.log` → `ppo_s3`); folders unchanged."""
    return os.path.splitext(name)[0] if "." in name[-6:] else name


def seed_from_name(name: str) -> int | None:
    """`seed-3`, `seed_3`, `seed3`, `ppo_s3` → 3: the one seed rule (rundiff_core.seed_from_name)
    on the folder name or file stem."""
    return rundiff_core.seed_from_name(_stem(name))


def strip_seed(name: str) -> str:
    """The arm part of a run name: `ppo_s3` → `ppo`, `run-seed_2` → `run`."""
    return rundiff_core.seed_stem(_stem(name)) or name


def scalars(d: dict[str, Any], sep: str = "/") -> dict[str, Any]:
    """The scalar leaves of a nested mapping, keys joined with `sep`."""
    return {k: v for k, v in flatten(d, sep=sep).items()
            if isinstance(v, int | float | str | bool) or v is None}


def iso_seconds(ts: Any) -> float:
    """An ISO 8601 time (`2023-10-08T14:38:58.123`) as epoch seconds; NaN when it is not one."""
    from datetime import datetime  # reading only: sniffing a folder never needs it

    try:
        return datetime.fromisoformat(str(ts)).timestamp()
    except ValueError:
        return float("nan")


def subdirs(path: str) -> list[str]:
    try:
        return sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
    except OSError:
        return []


MAX_COUNT_BYTES = 64 << 20  # a table's rows are counted (for a note) only below this size


def run_dir(run: Any) -> str:
    """The folder a run is read from (its path, or the folder of a file given alone)."""
    return os.path.dirname(run.path) if os.path.isfile(run.path) else run.path


def files_beside(path: str) -> tuple[str, list[str]]:
    """(the folder of a file given alone, the names of the files in it)."""
    folder = os.path.dirname(path) or "."
    try:
        return folder, [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return folder, []


def count_rows(path: str) -> int | None:
    """Data rows of a table with one header line (None when too large to count cheaply)."""
    raw, _why = rundiff_core.read_bounded(path, MAX_COUNT_BYTES)
    if raw is None:
        return None
    return max(sum(1 for ln in raw.split(b"\n") if ln.strip()) - 1, 0)


def yaml_config(out: Any, path: str, said: str) -> bool:
    """A YAML argument dump's mapping as `out.config` (a `Meta`), noted `<name> (<said>) → config`;
    False when there is no such file."""
    if not os.path.isfile(path):
        return False
    data = rundiff_core.read_config_yaml(path, out.notes)
    if isinstance(data, dict):
        out.config = data
        out.notes.append(f"{os.path.basename(path)} ({said}) → config")
    elif data is not None:
        out.notes.append(f"{os.path.basename(path)}: not a mapping; no config")
    return True


def is_events_file(name: str) -> bool:
    """TensorBoard's rule for its event files (`tfevents` in the name, no profile stubs): the
    YOLOv5 layout and the events folder a text log owns both ask it."""
    return "tfevents" in name and not name.endswith(".profile-empty")
