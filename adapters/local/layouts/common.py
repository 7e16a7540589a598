"""What the layouts share: reading JSON and YAML with notes, a folder's config files (serialized
objects in them shown as one opaque value each), scalars of a nested mapping, and the seed rule
on file and folder names."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import rundiff_core  # the seed rule (engines.arms) loads when a run is read, not to sniff

# A run's config files are read by one reader in rundiff_core (rundiff_core.parsing.configfiles,
# which the TensorBoard source uses too); the names the layouts were written with stay here.
from rundiff_core import CONFIG_FILES as CONFIG_FILES
from rundiff_core import flatten
from rundiff_core import read_config_files as read_config_files
from rundiff_core import read_config_json as read_config_json

read_json = rundiff_core.read_json_file
read_yaml = rundiff_core.read_config_yaml

if TYPE_CHECKING:
    from rundiff_core import LayoutMeta as Meta  # the name the layouts were written with
else:
    def Meta(**fields: Any) -> Any:  # noqa: N802 - the name the layouts were written with
        """`LayoutMeta(**fields)`: the class is imported, and built, when a layout first reads a
        run's metadata, not when it sniffs a folder (`detect` never builds one)."""
        return rundiff_core.LayoutMeta(**fields)

MAX_JSON_BYTES = 512 << 20  # what read_json loads at most (rundiff_core's MAX_JSON_BYTES)


def name_matches(name: str, patterns: tuple[str, ...]) -> bool:
    """`any(fnmatch.fnmatch(name, p) for p in patterns)`, for names and patterns given in lower
    case: a pattern of literal characters and `*` is matched with string operations (a sniff asks
    this of every file, and fnmatch compiles a regex per pattern on first use); any other pattern
    goes to fnmatch."""
    for pattern in patterns:
        if "?" in pattern or "[" in pattern:
            import fnmatch

            if fnmatch.fnmatch(name, pattern):
                return True
            continue
        parts = pattern.split("*")
        if len(parts) == 1:
            if name == pattern:
                return True
            continue
        first, last = parts[0], parts[-1]
        if len(name) < len(first) + len(last) or not name.startswith(first) or \
                not name.endswith(last):
            continue
        pos, end = len(first), len(name) - len(last)
        for middle in parts[1:-1]:  # each as early as it fits: the leftmost match never loses
            found = name.find(middle, pos, end)
            if found < 0:
                break
            pos = found + len(middle)
        else:
            return True
    return False


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


def numbers(d: dict[str, Any], sep: str = "/") -> dict[str, float]:
    return {k: v for k, v in scalars(d, sep).items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


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
    try:
        if os.path.getsize(path) > MAX_COUNT_BYTES:
            return None
        with open(path, "rb") as fh:
            lines = [ln for ln in fh.read().split(b"\n") if ln.strip()]
    except OSError:
        return None
    return max(len(lines) - 1, 0)


def yaml_config(out: Any, path: str, said: str) -> bool:
    """A YAML argument dump's mapping as `out.config` (a `Meta`), noted `<name> (<said>) → config`;
    False when there is no such file."""
    if not os.path.isfile(path):
        return False
    data = read_yaml(path, out.notes)
    if isinstance(data, dict):
        out.config = data
        out.notes.append(f"{os.path.basename(path)} ({said}) → config")
    elif data is not None:
        out.notes.append(f"{os.path.basename(path)}: not a mapping; no config")
    return True
